//! Jute's binary archive (`BinaryInputArchive`/`BinaryOutputArchive`): big-endian integers, a
//! `string` or `buffer` as an i32 length (-1: null) and its bytes, a vector as an i32 count (-1:
//! null) and its elements. This reader keeps the absolute offset of every field, so errors name
//! where in a file they are, and it bounds every length by the bytes left before allocating.

use wire::{Acl, Id};

use crate::error::FormatError;

/// Reads jute fields from a byte slice; `base` is the slice's offset in its file or stream.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader::at(buf, 0)
    }

    /// A reader of `buf`, which sits at `base` in its file.
    pub fn at(buf: &'a [u8], base: u64) -> Reader<'a> {
        Reader { buf, pos: 0, base }
    }

    /// The position in `buf`.
    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn set_pos(&mut self, pos: usize) {
        self.pos = pos.min(self.buf.len());
    }

    /// The position in the file.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], FormatError> {
        if n > self.remaining() {
            return Err(FormatError::Truncated {
                what,
                offset: self.offset(),
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8, FormatError> {
        Ok(self.take(1, what)?[0])
    }

    pub fn bool(&mut self, what: &'static str) -> Result<bool, FormatError> {
        Ok(self.u8(what)? != 0)
    }

    pub fn i32(&mut self, what: &'static str) -> Result<i32, FormatError> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn i64(&mut self, what: &'static str) -> Result<i64, FormatError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    /// A length prefix: `None` for -1 (null); any other negative, or a length past the end,
    /// is an error before anything is allocated.
    fn len(&mut self, what: &'static str) -> Result<Option<usize>, FormatError> {
        let at = self.offset();
        let len = self.i32(what)?;
        if len == -1 {
            return Ok(None);
        }
        if len < 0 {
            return Err(FormatError::BadLength {
                what,
                len: len.into(),
                offset: at,
            });
        }
        if len as usize > self.remaining() {
            return Err(FormatError::Truncated { what, offset: at });
        }
        Ok(Some(len as usize))
    }

    /// `buffer`, borrowed: `None` is null.
    pub fn bytes(&mut self, what: &'static str) -> Result<Option<&'a [u8]>, FormatError> {
        match self.len(what)? {
            None => Ok(None),
            Some(n) => self.take(n, what).map(Some),
        }
    }

    /// `buffer`, owned.
    pub fn buffer(&mut self, what: &'static str) -> Result<Option<Vec<u8>>, FormatError> {
        Ok(self.bytes(what)?.map(<[u8]>::to_vec))
    }

    /// `ustring`: `None` is null. Java writes UTF-8, so anything else is damage.
    pub fn opt_str(&mut self, what: &'static str) -> Result<Option<&'a str>, FormatError> {
        let at = self.offset();
        match self.bytes(what)? {
            None => Ok(None),
            Some(b) => std::str::from_utf8(b)
                .map(Some)
                .map_err(|_| FormatError::invalid(format!("{what}: not UTF-8"), at)),
        }
    }

    /// `ustring` that must not be null.
    pub fn str(&mut self, what: &'static str) -> Result<&'a str, FormatError> {
        let at = self.offset();
        self.opt_str(what)?
            .ok_or_else(|| FormatError::invalid(format!("{what}: null string"), at))
    }

    /// A vector count: `None` for null; each element takes at least `min` bytes, so a count
    /// that cannot fit is refused before anything is allocated.
    pub fn count(&mut self, what: &'static str, min: usize) -> Result<Option<usize>, FormatError> {
        let at = self.offset();
        let n = self.i32(what)?;
        if n == -1 {
            return Ok(None);
        }
        if n < 0 || (n as usize).saturating_mul(min.max(1)) > self.remaining() {
            return Err(FormatError::BadLength {
                what,
                len: n.into(),
                offset: at,
            });
        }
        Ok(Some(n as usize))
    }

    /// `vector<ACL>`: `None` is null (ZooKeeper's OPEN_ACL_UNSAFE where a list is converted).
    pub fn acls(&mut self, what: &'static str) -> Result<Option<Vec<Acl>>, FormatError> {
        let Some(n) = self.count(what, 12)? else {
            return Ok(None);
        };
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let perms = self.i32("acl.perms")?;
            let scheme = self.opt_str("acl.scheme")?.unwrap_or_default().to_owned();
            let id = self.opt_str("acl.id")?.unwrap_or_default().to_owned();
            v.push(Acl {
                perms,
                id: Id { scheme, id },
            });
        }
        Ok(Some(v))
    }

    /// `vector<ustring>`.
    pub fn strings(&mut self, what: &'static str) -> Result<Option<Vec<String>>, FormatError> {
        let Some(n) = self.count(what, 4)? else {
            return Ok(None);
        };
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.opt_str(what)?.unwrap_or_default().to_owned());
        }
        Ok(Some(v))
    }
}

/// Writes jute fields into a growing buffer.
#[derive(Debug, Default, Clone)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn with_capacity(n: usize) -> Writer {
        Writer {
            buf: Vec::with_capacity(n),
        }
    }

    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    pub fn bool(&mut self, v: bool) {
        self.buf.push(u8::from(v));
    }

    pub fn i32(&mut self, v: i32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    pub fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    pub fn bytes(&mut self, v: Option<&[u8]>) {
        match v {
            None => self.i32(-1),
            Some(b) => {
                self.i32(b.len() as i32);
                self.buf.extend_from_slice(b);
            }
        }
    }

    pub fn str(&mut self, v: &str) {
        self.bytes(Some(v.as_bytes()));
    }

    pub fn acls(&mut self, v: Option<&[Acl]>) {
        match v {
            None => self.i32(-1),
            Some(list) => {
                self.i32(list.len() as i32);
                for a in list {
                    self.i32(a.perms);
                    self.str(&a.id.scheme);
                    self.str(&a.id.id);
                }
            }
        }
    }

    pub fn strings(&mut self, v: &[String]) {
        self.i32(v.len() as i32);
        for s in v {
            self.str(s);
        }
    }
}
