//! The codecs a snapshot may be stored with, chosen by its file name as ZooKeeper's
//! `SnapStream.getStreamMode` does: `snapshot.<zxid>` raw, `.gz` a gzip stream (Java's
//! `GZIPInputStream`, which also reads concatenated members), `.snappy` snappy-java's stream
//! (`SnappyInputStream`): an 8-byte magic `82 'SNAPPY' 00`, two i32 versions, then chunks of an
//! i32 length and one Snappy block each; a stream may restart with the magic at a chunk
//! boundary. The Adler32 of a snapshot covers the bytes these decode to.

use std::io::Read;

use crate::error::FormatError;

/// How a snapshot file's bytes are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Raw,
    Gzip,
    Snappy,
}

impl Codec {
    /// ZooKeeper's rule: by the file name's extension.
    pub fn of_name(name: &str) -> Codec {
        if name.ends_with(".gz") {
            Codec::Gzip
        } else if name.ends_with(".snappy") {
            Codec::Snappy
        } else {
            Codec::Raw
        }
    }
}

const SNAPPY_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const SNAPPY_HEADER: usize = 16;

/// The decoded stream of `bytes`, refusing more than `limit` bytes of output (a compressed file
/// can claim any size).
pub fn decompress(codec: Codec, bytes: &[u8], limit: usize) -> Result<Vec<u8>, FormatError> {
    match codec {
        Codec::Raw => Ok(bytes.to_vec()),
        Codec::Gzip => {
            let mut out = Vec::new();
            let dec = flate2::read::MultiGzDecoder::new(bytes);
            dec.take(limit as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| FormatError::Compression(format!("gzip: {e}")))?;
            if out.len() > limit {
                return Err(FormatError::Compression(format!(
                    "gzip: the snapshot decompresses to more than {limit} bytes"
                )));
            }
            Ok(out)
        }
        Codec::Snappy => snappy_stream(bytes, limit),
    }
}

fn snappy_stream(bytes: &[u8], limit: usize) -> Result<Vec<u8>, FormatError> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut dec = snap::raw::Decoder::new();
    if !bytes.starts_with(&SNAPPY_MAGIC) {
        return Err(FormatError::Compression(
            "snappy: the file does not start with snappy-java's stream header".into(),
        ));
    }
    while at < bytes.len() {
        if bytes[at..].starts_with(&SNAPPY_MAGIC) {
            if bytes.len() - at < SNAPPY_HEADER {
                return Err(FormatError::Compression(format!(
                    "snappy: stream header cut short at offset {at}"
                )));
            }
            at += SNAPPY_HEADER;
            continue;
        }
        let Some(len) = bytes.get(at..at + 4) else {
            return Err(FormatError::Compression(format!(
                "snappy: chunk length cut short at offset {at}"
            )));
        };
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        let start = at + 4;
        let Some(block) = usize::try_from(len)
            .ok()
            .and_then(|n| bytes.get(start..start.checked_add(n)?))
        else {
            return Err(FormatError::Compression(format!(
                "snappy: chunk of {len} bytes at offset {at} runs past the end"
            )));
        };
        let n = snap::raw::decompress_len(block)
            .map_err(|e| FormatError::Compression(format!("snappy at offset {at}: {e}")))?;
        if out.len() + n > limit {
            return Err(FormatError::Compression(format!(
                "snappy: the snapshot decompresses to more than {limit} bytes"
            )));
        }
        let from = out.len();
        out.resize(from + n, 0);
        dec.decompress(block, &mut out[from..])
            .map_err(|e| FormatError::Compression(format!("snappy at offset {at}: {e}")))?;
        at = start + block.len();
    }
    Ok(out)
}

/// `bytes` as snappy-java's stream (32 KiB chunks, its default block size), for tests and for
/// writing a `.snappy` snapshot.
pub fn snappy_encode(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() / 2 + 64);
    out.extend_from_slice(&SNAPPY_MAGIC);
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes());
    let mut enc = snap::raw::Encoder::new();
    for chunk in bytes.chunks(32 * 1024) {
        let block = enc
            .compress_vec(chunk)
            .expect("a chunk under 4 GiB compresses");
        out.extend_from_slice(&(block.len() as i32).to_be_bytes());
        out.extend_from_slice(&block);
    }
    out
}

/// `bytes` as a gzip stream.
pub fn gzip_encode(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).expect("writing to memory");
    enc.finish().expect("writing to memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_limits() {
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_be_bytes())
            .collect();
        for (codec, enc) in [
            (Codec::Gzip, gzip_encode(&data)),
            (Codec::Snappy, snappy_encode(&data)),
            (Codec::Raw, data.clone()),
        ] {
            assert_eq!(decompress(codec, &enc, data.len()).unwrap(), data);
            if codec != Codec::Raw {
                assert!(decompress(codec, &enc, data.len() - 1).is_err());
                assert!(decompress(codec, &enc[..enc.len() - 3], data.len()).is_err());
            }
        }
        assert_eq!(Codec::of_name("snapshot.100000001.snappy"), Codec::Snappy);
        assert_eq!(Codec::of_name("snapshot.1.gz"), Codec::Gzip);
        assert_eq!(Codec::of_name("snapshot.1"), Codec::Raw);
    }
}
