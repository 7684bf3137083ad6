//! Length-prefixed frames: a `u32` big-endian payload length, then the payload. The reader checks
//! the length against its cap before allocating anything.

use std::io;

use bytes::{Bytes, BytesMut};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};

use super::link::{Link, LinkReader, LinkWriter};

/// Buffer sizes for the socket halves; bigger frames bypass the buffers.
const BUF: usize = 64 * 1024;

/// A peer connection (plain TCP or TLS: [`Link`]) carrying length-prefixed frames.
pub struct FramedStream {
    reader: FrameReader,
    writer: FrameWriter,
    peer: u64,
}

impl std::fmt::Debug for FramedStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FramedStream")
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

impl FramedStream {
    pub(crate) fn new(link: Arc<Link>, max_frame: usize, peer: u64) -> FramedStream {
        FramedStream {
            reader: FrameReader {
                inner: BufReader::with_capacity(BUF, LinkReader(link.clone())),
                max_frame,
            },
            writer: FrameWriter {
                inner: BufWriter::with_capacity(BUF, LinkWriter(link)),
                max_frame,
            },
            peer,
        }
    }

    /// Rejoins halves split for the handshake, with the cap for the frames that follow.
    pub(crate) fn join(
        mut reader: FrameReader,
        mut writer: FrameWriter,
        max_frame: usize,
        peer: u64,
    ) -> FramedStream {
        reader.max_frame = max_frame;
        writer.max_frame = max_frame;
        FramedStream {
            reader,
            writer,
            peer,
        }
    }

    /// The id of the node at the other end (checked by the handshake).
    pub fn peer(&self) -> u64 {
        self.peer
    }

    /// See [`FrameReader::recv`].
    pub async fn recv(&mut self) -> io::Result<Option<Bytes>> {
        self.reader.recv().await
    }

    /// See [`FrameWriter::send`].
    pub async fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        self.writer.send(frame).await
    }

    /// Splits the stream so one task can read while another writes.
    pub fn into_split(self) -> (FrameReader, FrameWriter) {
        (self.reader, self.writer)
    }
}

/// The receiving half of a [`FramedStream`].
pub struct FrameReader {
    inner: BufReader<LinkReader>,
    max_frame: usize,
}

impl FrameReader {
    /// The next frame's payload. `Ok(None)` = the peer closed the connection cleanly between
    /// frames. A length above the cap is an `InvalidData` error (nothing is allocated for it); a
    /// connection closed inside a frame is `UnexpectedEof`. After an error the stream is unusable.
    /// Not cancel-safe: a partly read frame is lost if the future is dropped.
    pub async fn recv(&mut self) -> io::Result<Option<Bytes>> {
        let mut len = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            let n = self.inner.read(&mut len[got..]).await?;
            if n == 0 {
                if got == 0 {
                    return Ok(None);
                }
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed inside a frame header",
                ));
            }
            got += n;
        }
        let len = u32::from_be_bytes(len) as usize;
        if len > self.max_frame {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "frame of {len} bytes exceeds the cap of {} bytes",
                    self.max_frame
                ),
            ));
        }
        let mut buf = BytesMut::zeroed(len);
        self.inner.read_exact(&mut buf).await?;
        Ok(Some(buf.freeze()))
    }

    /// The link this reads from (for its TLS session's facts).
    pub(crate) fn link(&self) -> &Arc<Link> {
        &self.inner.get_ref().0
    }

    /// Reads whatever bytes arrive (0 = EOF), ignoring framing. Cancel-safe.
    pub(crate) async fn read_some(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).await
    }
}

/// The sending half of a [`FramedStream`].
pub struct FrameWriter {
    inner: BufWriter<LinkWriter>,
    max_frame: usize,
}

impl FrameWriter {
    /// Writes one frame and flushes it. A frame above the cap is refused (`InvalidInput`) before
    /// anything is written, since the peer would close the connection on it.
    pub async fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        self.feed(&[frame]).await?;
        self.flush().await
    }

    /// Buffers one frame made of `parts` (concatenated) without flushing.
    pub(crate) async fn feed(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > self.max_frame {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "frame of {len} bytes exceeds the cap of {} bytes",
                    self.max_frame
                ),
            ));
        }
        self.inner.write_all(&(len as u32).to_be_bytes()).await?;
        for p in parts {
            self.inner.write_all(p).await?;
        }
        Ok(())
    }

    pub(crate) async fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().await
    }

    /// Flushes, then hands over the link, for a caller that writes whole frames itself (the raft
    /// link: `peer.rs`).
    pub(crate) async fn into_link(mut self) -> io::Result<Arc<Link>> {
        self.inner.flush().await?;
        Ok(self.inner.into_inner().0)
    }

    /// Flushes, then closes the sending direction (the peer reads EOF after the last frame).
    pub async fn close(&mut self) -> io::Result<()> {
        self.inner.flush().await?;
        self.inner.shutdown().await
    }
}
