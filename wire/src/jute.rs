//! Jute, ZooKeeper's record encoding: big-endian primitives, length-prefixed buffers and
//! strings, counted vectors, and records as their fields back to back (ZooKeeper's
//! `BinaryInputArchive` and `BinaryOutputArchive`).
//!
//! `Reader` never panics and never allocates more than the bytes it was given: every length
//! is checked against what is left before anything is reserved, so a hostile frame that
//! claims a 2 GiB string costs nothing.

use crate::error::DecodeError;

/// A cursor over one frame's body.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The unread tail, without consuming it.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    pub fn read_u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.read_array::<1>(what)?[0])
    }

    pub fn read_bool(&mut self, what: &'static str) -> Result<bool, DecodeError> {
        // Java's readBool treats any non-zero byte as true.
        Ok(self.read_u8(what)? != 0)
    }

    pub fn read_i32(&mut self, what: &'static str) -> Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(*self.read_array(what)?))
    }

    pub fn read_i64(&mut self, what: &'static str) -> Result<i64, DecodeError> {
        Ok(i64::from_be_bytes(*self.read_array(what)?))
    }

    /// The next `N` bytes as one fixed-size block: one bounds check for all of them (a snapshot
    /// node's ACL number and stat are 64 bytes). A short read is refused and moves nothing.
    pub fn read_array<const N: usize>(
        &mut self,
        what: &'static str,
    ) -> Result<&'a [u8; N], DecodeError> {
        let Some(block) = self.rest().first_chunk::<N>() else {
            return Err(DecodeError::Truncated { what, at: self.pos });
        };
        self.pos += N;
        Ok(block)
    }

    /// A length prefix for a buffer or string: `-1` is null, other negatives are an error,
    /// and a length past the end of the frame is an error before anything is allocated.
    fn read_len(&mut self, what: &'static str) -> Result<Option<usize>, DecodeError> {
        let at = self.pos;
        let len = self.read_i32(what)?;
        if len == -1 {
            return Ok(None);
        }
        if len < 0 {
            return Err(DecodeError::BadLength { what, len, at });
        }
        let len = len as usize;
        if len > self.remaining() {
            return Err(DecodeError::Truncated { what, at });
        }
        Ok(Some(len))
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        s
    }

    /// `buffer`: `None` is the null buffer (length -1).
    pub fn read_buffer(&mut self, what: &'static str) -> Result<Option<Vec<u8>>, DecodeError> {
        Ok(self.read_opt_bytes(what)?.map(<[u8]>::to_vec))
    }

    /// `buffer`, borrowed from the buffer: `None` is the null buffer (length -1).
    pub fn read_opt_bytes(&mut self, what: &'static str) -> Result<Option<&'a [u8]>, DecodeError> {
        Ok(self.read_len(what)?.map(|n| self.take(n)))
    }

    /// `ustring`, borrowed from the buffer: `None` is the null string (length -1).
    pub fn read_opt_str(&mut self, what: &'static str) -> Result<Option<&'a str>, DecodeError> {
        let at = self.pos;
        match self.read_len(what)? {
            None => Ok(None),
            Some(n) => match std::str::from_utf8(self.take(n)) {
                Ok(s) => Ok(Some(s)),
                Err(_) => Err(DecodeError::BadUtf8 { what, at }),
            },
        }
    }

    /// `read_opt_str` with null read as the empty string: for a string only looked at while the
    /// buffer is (a snapshot's paths, a million of them, each copied into the tree by name).
    pub fn read_str(&mut self, what: &'static str) -> Result<&'a str, DecodeError> {
        Ok(self.read_opt_str(what)?.unwrap_or_default())
    }

    /// `ustring`: `None` is the null string (length -1).
    pub fn read_opt_string(&mut self, what: &'static str) -> Result<Option<String>, DecodeError> {
        Ok(self.read_opt_str(what)?.map(str::to_owned))
    }

    /// `ustring` where null is read as the empty string, as Java's readString callers do
    /// when they immediately use the value as a path.
    pub fn read_string(&mut self, what: &'static str) -> Result<String, DecodeError> {
        Ok(self.read_opt_string(what)?.unwrap_or_default())
    }

    /// A vector count: `None` is the null vector. Each element takes at least `min_elem`
    /// bytes, so a count that cannot fit in the rest of the frame is refused up front.
    pub fn read_count(
        &mut self,
        what: &'static str,
        min_elem: usize,
    ) -> Result<Option<usize>, DecodeError> {
        let at = self.pos;
        let n = self.read_i32(what)?;
        if n == -1 {
            return Ok(None);
        }
        if n < 0 {
            return Err(DecodeError::BadLength { what, len: n, at });
        }
        let n = n as usize;
        if n.saturating_mul(min_elem.max(1)) > self.remaining() {
            return Err(DecodeError::Truncated { what, at });
        }
        Ok(Some(n))
    }

    /// `vector<T>` where null is read as empty.
    pub fn read_vec<T>(
        &mut self,
        what: &'static str,
        min_elem: usize,
        mut elem: impl FnMut(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        let n = self.read_count(what, min_elem)?.unwrap_or(0);
        // read_count already bounds n by remaining / min_elem; a zero-byte element type would
        // make that bound vacuous, so the reservation is capped by the bytes left as well.
        let mut v = Vec::with_capacity(n.min(self.remaining()));
        for _ in 0..n {
            v.push(elem(self)?);
        }
        Ok(v)
    }

    pub fn read_string_vec(&mut self, what: &'static str) -> Result<Vec<String>, DecodeError> {
        self.read_vec(what, 4, |r| r.read_string(what))
    }
}

/// Appends jute-encoded values to a byte vector.
#[derive(Debug, Default, Clone)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn new() -> Self {
        Writer { buf: Vec::new() }
    }

    pub fn with_capacity(n: usize) -> Self {
        Writer {
            buf: Vec::with_capacity(n),
        }
    }

    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn write_u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    pub fn write_bool(&mut self, v: bool) {
        self.buf.push(v as u8);
    }

    pub fn write_i32(&mut self, v: i32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    pub fn write_i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// A `buffer` whose bytes `body` writes in place: its length is written as a placeholder
    /// and set once `body` is done, so the bytes need no buffer of their own.
    pub fn write_buffer_with(&mut self, body: impl FnOnce(&mut Writer)) {
        let at = self.buf.len();
        self.write_i32(0);
        body(self);
        let len = (self.buf.len() - at - 4) as i32;
        self.buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }

    pub fn write_buffer(&mut self, v: Option<&[u8]>) {
        match v {
            None => self.write_i32(-1),
            Some(b) => {
                self.write_i32(b.len() as i32);
                self.buf.extend_from_slice(b);
            }
        }
    }

    pub fn write_opt_string(&mut self, v: Option<&str>) {
        self.write_buffer(v.map(str::as_bytes));
    }

    pub fn write_string(&mut self, v: &str) {
        self.write_buffer(Some(v.as_bytes()));
    }

    pub fn write_vec<T>(&mut self, v: &[T], mut elem: impl FnMut(&mut Self, &T)) {
        self.write_i32(v.len() as i32);
        for e in v {
            elem(self, e);
        }
    }

    pub fn write_string_vec(&mut self, v: &[String]) {
        self.write_vec(v, |w, s| w.write_string(s));
    }

    /// Reserves a 4-byte length prefix and returns its offset, for `finish_frame`.
    pub fn begin_frame(&mut self) -> usize {
        let at = self.buf.len();
        self.buf.extend_from_slice(&[0; 4]);
        at
    }

    /// Fills in the length prefix reserved by `begin_frame`.
    pub fn finish_frame(&mut self, at: usize) {
        let len = (self.buf.len() - at - 4) as i32;
        self.buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
}

/// A jute record: a fixed sequence of fields, no tag, no length.
pub trait Record: Sized {
    /// The fewest bytes one encoded value can take (nulls and empty vectors count as their
    /// 4-byte length). `read_vec` multiplies a claimed count by it, so a count the frame cannot
    /// hold is refused before anything is reserved.
    const MIN_WIRE_LEN: usize = 1;

    fn encode(&self, w: &mut Writer);
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError>;

    /// Encodes to a fresh vector (no frame length).
    fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.encode(&mut w);
        w.into_inner()
    }

    /// Decodes a whole body; trailing bytes are ignored, as the Java reader ignores them.
    fn from_bytes(b: &[u8]) -> Result<Self, DecodeError> {
        Self::decode(&mut Reader::new(b))
    }
}

/// Field types a `record!` can hold.
pub trait Field: Sized {
    /// See `Record::MIN_WIRE_LEN`.
    const MIN_WIRE_LEN: usize = 1;

    fn put(&self, w: &mut Writer);
    fn get(r: &mut Reader<'_>, what: &'static str) -> Result<Self, DecodeError>;
}

impl Field for bool {
    const MIN_WIRE_LEN: usize = 1;
    fn put(&self, w: &mut Writer) {
        w.write_bool(*self)
    }
    fn get(r: &mut Reader<'_>, what: &'static str) -> Result<Self, DecodeError> {
        r.read_bool(what)
    }
}

impl Field for i32 {
    const MIN_WIRE_LEN: usize = 4;
    fn put(&self, w: &mut Writer) {
        w.write_i32(*self)
    }
    fn get(r: &mut Reader<'_>, what: &'static str) -> Result<Self, DecodeError> {
        r.read_i32(what)
    }
}

impl Field for i64 {
    const MIN_WIRE_LEN: usize = 8;
    fn put(&self, w: &mut Writer) {
        w.write_i64(*self)
    }
    fn get(r: &mut Reader<'_>, what: &'static str) -> Result<Self, DecodeError> {
        r.read_i64(what)
    }
}

/// `ustring`; null decodes as empty.
impl Field for String {
    const MIN_WIRE_LEN: usize = 4;
    fn put(&self, w: &mut Writer) {
        w.write_string(self)
    }
    fn get(r: &mut Reader<'_>, what: &'static str) -> Result<Self, DecodeError> {
        r.read_string(what)
    }
}

/// `buffer`; `None` is the null buffer, which ZooKeeper stores and returns as length -1.
impl Field for Option<Vec<u8>> {
    const MIN_WIRE_LEN: usize = 4;
    fn put(&self, w: &mut Writer) {
        w.write_buffer(self.as_deref())
    }
    fn get(r: &mut Reader<'_>, what: &'static str) -> Result<Self, DecodeError> {
        r.read_buffer(what)
    }
}

/// `vector<ustring>`; null decodes as empty.
impl Field for Vec<String> {
    const MIN_WIRE_LEN: usize = 4;
    fn put(&self, w: &mut Writer) {
        w.write_string_vec(self)
    }
    fn get(r: &mut Reader<'_>, what: &'static str) -> Result<Self, DecodeError> {
        r.read_string_vec(what)
    }
}

/// Declares a jute record: a struct whose `Record` impl writes and reads its fields in
/// declaration order, as `zookeeper.jute` declares them.
#[macro_export]
macro_rules! record {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident : $t:ty),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name { $($(#[$fm])* pub $f: $t),* }

        impl $crate::jute::Record for $name {
            const MIN_WIRE_LEN: usize = 0 $( + <$t as $crate::jute::Field>::MIN_WIRE_LEN )*;

            #[allow(unused_variables)]
            fn encode(&self, w: &mut $crate::jute::Writer) {
                $( $crate::jute::Field::put(&self.$f, w); )*
            }
            #[allow(unused_variables)]
            fn decode(r: &mut $crate::jute::Reader<'_>) -> Result<Self, $crate::error::DecodeError> {
                Ok($name { $( $f: $crate::jute::Field::get(r, concat!(stringify!($name), ".", stringify!($f)))?, )* })
            }
        }

        impl $crate::jute::Field for $name {
            const MIN_WIRE_LEN: usize = <$name as $crate::jute::Record>::MIN_WIRE_LEN;

            fn put(&self, w: &mut $crate::jute::Writer) {
                $crate::jute::Record::encode(self, w)
            }
            fn get(r: &mut $crate::jute::Reader<'_>, _what: &'static str) -> Result<Self, $crate::error::DecodeError> {
                <$name as $crate::jute::Record>::decode(r)
            }
        }
    };
}

/// `vector<Record>`; null decodes as empty. A claimed count is checked against the element's
/// `MIN_WIRE_LEN` (12 bytes for an ACL, not 1), so `Vec::with_capacity` never reserves room
/// for elements the frame cannot hold.
impl<T: Record> Field for Vec<T> {
    const MIN_WIRE_LEN: usize = 4;

    fn put(&self, w: &mut Writer) {
        w.write_vec(self, |w, e| e.encode(w))
    }
    fn get(r: &mut Reader<'_>, what: &'static str) -> Result<Self, DecodeError> {
        r.read_vec(what, T::MIN_WIRE_LEN, |r| T::decode(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_block_is_read_whole_or_refused_without_moving() {
        let bytes = [1u8, 2, 3, 4, 5, 6];
        let mut r = Reader::new(&bytes);
        assert_eq!(r.read_u8("lead").unwrap(), 1);
        assert_eq!(r.read_array::<4>("block").unwrap(), &[2, 3, 4, 5]);
        assert_eq!(
            r.read_array::<2>("tail"),
            Err(DecodeError::Truncated {
                what: "tail",
                at: 5
            })
        );
        // A refused block leaves the cursor where it was.
        assert_eq!(r.remaining(), 1);
        assert_eq!(r.read_array::<1>("last").unwrap(), &[6]);
        assert!(r.is_empty());
    }
}
