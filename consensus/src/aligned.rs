//! Memory and offsets for `O_DIRECT` writes (the log segments): the buffer's address, the file
//! offset and the length must all be multiples of the device's logical block size, without
//! `unsafe` code (the workspace forbids it).

/// The unit of every `O_DIRECT` write: offsets and lengths are multiples of it, and so is the
/// address of the memory written (`O_DIRECT` requires the device's logical block size, 512 bytes
/// on the disk measured, and 4096 is a multiple of any block size a Linux file system uses).
pub(crate) const ALIGN: usize = 4096;

/// A buffer grown past this by one large write gives its memory back at the next smaller one.
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

    /// Room for `total` bytes, rounded up to whole blocks.
    fn reserve(&mut self, total: usize) {
        let need = round_up(total as u64) as usize;
        if self.start + need <= self.raw.len() {
            return;
        }
        let raw = vec![0u8; need.max(ALIGN * 16) + ALIGN];
        let start = raw.as_ptr().align_offset(ALIGN);
        self.raw = raw;
        self.start = start;
    }

    /// `len` bytes of zeros (the old contents are not kept), to be filled in; `len` is a multiple
    /// of `ALIGN`. A buffer grown past `SHRINK_ABOVE` by one large write gives its memory back at
    /// the next smaller one.
    pub(crate) fn filled(&mut self, len: usize) -> &mut [u8] {
        debug_assert!(len.is_multiple_of(ALIGN));
        if self.raw.len() > SHRINK_ABOVE && len + ALIGN < self.raw.len() / 4 {
            *self = AlignedBuf::new();
        }
        self.reserve(len);
        self.len = len;
        let bytes = &mut self.raw[self.start..self.start + len];
        bytes.fill(0);
        bytes
    }

    /// The contents.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }
}

pub(crate) fn round_up(n: u64) -> u64 {
    n.div_ceil(ALIGN as u64) * ALIGN as u64
}
