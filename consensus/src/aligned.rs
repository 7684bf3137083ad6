//! Memory and offsets for `O_DIRECT` writes (the log segments): the buffer's address, the file
//! offset and the length must all be multiples of the device's logical block size, without
//! `unsafe` code (the workspace forbids it).

/// The unit of every `O_DIRECT` write: offsets and lengths are multiples of it, and so is the
/// address of the memory written (`O_DIRECT` requires the device's logical block size, 512 bytes
/// on the disk measured, and 4096 is a multiple of any block size a Linux file system uses).
pub(crate) const ALIGN: usize = 4096;

/// A buffer grown past this by one large write gives its memory back once emptied.
const SHRINK_ABOVE: usize = 4 << 20;

/// A byte buffer whose contents start at an `ALIGN`-aligned address, without `unsafe`: a
/// `Vec` with `ALIGN` bytes of slack, used from the first aligned byte in it.
pub(crate) struct AlignedBuf {
    raw: Vec<u8>,
    start: usize,
    pub(crate) len: usize,
}

impl AlignedBuf {
    pub(crate) fn new() -> AlignedBuf {
        AlignedBuf {
            raw: Vec::new(),
            start: 0,
            len: 0,
        }
    }

    pub(crate) fn zeroed(len: usize) -> AlignedBuf {
        let mut b = AlignedBuf::new();
        b.reserve(len);
        b.len = len;
        b
    }

    /// Room for `total` bytes, rounded up to whole blocks (the tail of the last block is zeros
    /// when it is written; see `blocks`).
    pub(crate) fn reserve(&mut self, total: usize) {
        let need = round_up(total as u64) as usize;
        if self.start + need <= self.raw.len() {
            return;
        }
        let mut raw = vec![0u8; need.max(ALIGN * 16).max(2 * self.len) + ALIGN];
        let start = raw.as_ptr().align_offset(ALIGN);
        raw[start..start + self.len].copy_from_slice(&self.raw[self.start..self.start + self.len]);
        self.raw = raw;
        self.start = start;
    }

    pub(crate) fn extend(&mut self, bytes: &[u8]) {
        self.reserve(self.len + bytes.len());
        let at = self.start + self.len;
        self.raw[at..at + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// The contents.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }

    /// The contents padded with zeros to whole blocks.
    pub(crate) fn blocks(&mut self) -> &[u8] {
        let end = self.start + round_up(self.len as u64) as usize;
        self.raw[self.start + self.len..end].fill(0);
        &self.raw[self.start..end]
    }

    /// The contents padded with zeros to `len` bytes (whole blocks, at least the contents).
    pub(crate) fn padded(&mut self, len: usize) -> &[u8] {
        debug_assert!(len.is_multiple_of(ALIGN) && len >= self.len);
        self.reserve(len);
        self.raw[self.start + self.len..self.start + len].fill(0);
        &self.raw[self.start..self.start + len]
    }

    /// Drops the first `n` bytes (a multiple of `ALIGN`), keeping the rest at the aligned start;
    /// gives back the memory of a large batch once it is written.
    pub(crate) fn consume(&mut self, n: usize) {
        debug_assert_eq!(n % ALIGN, 0);
        self.raw
            .copy_within(self.start + n..self.start + self.len, self.start);
        self.len -= n;
        if self.raw.len() > SHRINK_ABOVE && self.len < ALIGN {
            let mut small = AlignedBuf::new();
            small.extend(&self.raw[self.start..self.start + self.len]);
            *self = small;
        }
    }
}

pub(crate) fn round_up(n: u64) -> u64 {
    n.div_ceil(ALIGN as u64) * ALIGN as u64
}

pub(crate) fn round_down(n: u64) -> u64 {
    n / ALIGN as u64 * ALIGN as u64
}
