//! A ZooKeeper session's password: `ZooKeeperServer.generatePasswd` seeds `java.util.Random` with
//! `sessionId ^ 0xB3415C00` and draws 16 bytes with `nextBytes`. java.util.Random is specified
//! to the bit (its Javadoc gives the algorithm: a 48-bit linear congruential generator with
//! multiplier 0x5DEECE66D and addend 0xB), so the password a client holds can be recomputed
//! from the session id, which is what lets an imported session be resumed.

/// `ZooKeeperServer.superSecret`.
const SUPER_SECRET: i64 = 0xB341_5C00;
const MULTIPLIER: i64 = 0x5_DEEC_E66D;
const ADDEND: i64 = 0xB;
const MASK: i64 = (1 << 48) - 1;

/// `java.util.Random`, as far as `nextBytes` needs it.
pub struct JavaRandom {
    seed: i64,
}

impl JavaRandom {
    pub fn new(seed: i64) -> JavaRandom {
        JavaRandom {
            seed: (seed ^ MULTIPLIER) & MASK,
        }
    }

    fn next(&mut self, bits: u32) -> i32 {
        self.seed = (self.seed.wrapping_mul(MULTIPLIER).wrapping_add(ADDEND)) & MASK;
        ((self.seed as u64) >> (48 - bits)) as i32
    }

    pub fn next_int(&mut self) -> i32 {
        self.next(32)
    }

    /// `nextBytes`: each int fills up to four bytes, low byte first.
    pub fn next_bytes(&mut self, out: &mut [u8]) {
        let mut i = 0;
        while i < out.len() {
            let mut rnd = self.next_int();
            let n = (out.len() - i).min(4);
            for _ in 0..n {
                out[i] = rnd as u8;
                i += 1;
                rnd >>= 8;
            }
        }
    }
}

/// The password ZooKeeper gave session `id`.
pub fn session_password(id: i64) -> [u8; 16] {
    let mut p = [0u8; 16];
    JavaRandom::new(id ^ SUPER_SECRET).next_bytes(&mut p);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `new java.util.Random(42)`: nextInt() is -1170105035 then 234785527 (well known values,
    /// and what jshell prints).
    #[test]
    fn matches_java_util_random() {
        let mut r = JavaRandom::new(42);
        assert_eq!(r.next_int(), -1_170_105_035);
        assert_eq!(r.next_int(), 234_785_527);
        let mut r = JavaRandom::new(0);
        assert_eq!(r.next_int(), -1_155_484_576);
        // `new Random(0x100000abcdL ^ 0xB3415C00L).nextBytes(new byte[16])`, printed by a JDK 17.
        let hex: String = session_password(0x10_0000_abcd)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(hex, "06309ed2da6e9ec46a318d874d5d28dd");
    }
}
