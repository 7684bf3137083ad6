//! Framing: a 4-byte big-endian length, then that many bytes (ZooKeeper's
//! `NIOServerCnxn.readLength`, which closes the connection on a negative length or one over
//! `jute.maxbuffer`).
//!
//! `check` looks at a read buffer and says one of three things without allocating:
//! a whole frame is there (and how long it is), more bytes are needed, or the length
//! prefix is a protocol error (negative or over the limit) and the connection must close.

use thiserror::Error;

/// ZooKeeper's default `jute.maxbuffer`: 0xfffff bytes, just under 1 MiB.
pub const DEFAULT_MAX_FRAME: usize = 0xfffff;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum FrameError {
    #[error("frame length {0} is negative")]
    Negative(i32),
    #[error("frame length {len} exceeds the limit of {max} bytes")]
    TooLarge { len: usize, max: usize },
}

/// Outcome of inspecting the start of a read buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// A whole frame is buffered: its body is `buf[4..4 + len]`.
    Frame { len: usize },
    /// Not enough bytes yet; at least this many more are needed.
    NeedMore(usize),
}

/// Inspects `buf` for one frame of at most `max` body bytes.
pub fn check(buf: &[u8], max: usize) -> Result<Check, FrameError> {
    if buf.len() < 4 {
        return Ok(Check::NeedMore(4 - buf.len()));
    }
    let len = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if len < 0 {
        return Err(FrameError::Negative(len));
    }
    let len = len as usize;
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    let have = buf.len() - 4;
    if have < len {
        Ok(Check::NeedMore(len - have))
    } else {
        Ok(Check::Frame { len })
    }
}

/// Prepends the 4-byte length to a body.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(4 + body.len());
    v.extend_from_slice(&(body.len() as i32).to_be_bytes());
    v.extend_from_slice(body);
    v
}
