//! Adler-32 (RFC 1950), as `java.util.zip.Adler32` computes it: ZooKeeper's snapshots carry it
//! over their decompressed stream, its logs over each record's bytes. `value` is the Java
//! `getValue()`: the 32-bit sum as a non-negative long.

const MOD: u32 = 65_521;
/// The most bytes that can be summed before `b` could overflow a u32 (zlib's NMAX).
const NMAX: usize = 5552;

#[derive(Debug, Clone, Copy)]
pub struct Adler32 {
    a: u32,
    b: u32,
}

impl Default for Adler32 {
    fn default() -> Self {
        Adler32::new()
    }
}

impl Adler32 {
    pub fn new() -> Adler32 {
        Adler32 { a: 1, b: 0 }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(NMAX) {
            for &x in chunk {
                self.a += u32::from(x);
                self.b += self.a;
            }
            self.a %= MOD;
            self.b %= MOD;
        }
    }

    pub fn value(&self) -> u64 {
        u64::from((self.b << 16) | self.a)
    }
}

/// Adler-32 of `bytes`.
pub fn adler32(bytes: &[u8]) -> u64 {
    let mut a = Adler32::new();
    a.update(bytes);
    a.value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // RFC 1950's example and zlib's: "Wikipedia" is 0x11E60398.
        assert_eq!(adler32(b""), 1);
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        let big = vec![0xFFu8; 100_000];
        let mut split = Adler32::new();
        split.update(&big[..33_333]);
        split.update(&big[33_333..]);
        assert_eq!(split.value(), adler32(&big));
    }
}
