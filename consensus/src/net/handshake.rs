//! The handshake every connection starts with (wire format in the module docs of `net`).

use std::io;
use std::time::Duration;

use bytes::Bytes;

use super::frame::{FrameReader, FrameWriter};
use super::{LinkKind, LocalInfo, PeerInfo};

pub(crate) const MAGIC: [u8; 4] = *b"PDKN";
pub(crate) const VERSION: u16 = 1;
/// Encoded size of a [`Hello`].
pub(crate) const HELLO_LEN: usize = 48;
/// Cap on handshake frames (a hello, a reply with its reason text), far below `max_frame`, so a
/// stranger cannot make us allocate much before it has identified itself.
pub(crate) const HANDSHAKE_MAX: usize = 4096;
/// How long either side waits for the other's handshake frame.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) const REPLY_ACCEPT: u8 = 0;
pub(crate) const REPLY_REFUSE: u8 = 1;

/// One side's identity, as sent in the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hello {
    pub magic: [u8; 4],
    pub version: u16,
    pub kind: u8,
    pub from: u64,
    pub to: u64,
    pub cluster_id: u64,
    pub fingerprint: u64,
    pub info: LocalInfo,
}

impl Hello {
    pub(crate) fn new(
        kind: LinkKind,
        from: u64,
        to: u64,
        cluster_id: u64,
        fingerprint: u64,
        info: LocalInfo,
    ) -> Hello {
        Hello {
            magic: MAGIC,
            version: VERSION,
            kind: kind as u8,
            from,
            to,
            cluster_id,
            fingerprint,
            info,
        }
    }

    /// A hello that says nothing: what a closed node's refusal carries in place of its own
    /// (`security.rs`), so the refused learn no cluster id, fingerprint or log position.
    pub(crate) fn zeroed() -> Hello {
        Hello {
            magic: [0; 4],
            version: 0,
            kind: 0,
            from: 0,
            to: 0,
            cluster_id: 0,
            fingerprint: 0,
            info: LocalInfo::default(),
        }
    }

    pub(crate) fn encode(&self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[0..4].copy_from_slice(&self.magic);
        b[4..6].copy_from_slice(&self.version.to_be_bytes());
        b[6] = self.kind;
        b[7] = u8::from(self.info.initialized);
        b[8..16].copy_from_slice(&self.from.to_be_bytes());
        b[16..24].copy_from_slice(&self.to.to_be_bytes());
        b[24..32].copy_from_slice(&self.cluster_id.to_be_bytes());
        b[32..40].copy_from_slice(&self.fingerprint.to_be_bytes());
        b[40..48].copy_from_slice(&self.info.last_index.to_be_bytes());
        b
    }

    /// Decodes a hello; the caller then checks its fields with [`Hello::mismatch`].
    pub(crate) fn decode(b: &[u8]) -> Result<Hello, String> {
        if b.len() < HELLO_LEN {
            return Err(format!(
                "handshake of {} bytes, expected {HELLO_LEN}",
                b.len()
            ));
        }
        let u64_at = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        let mut magic = [0u8; 4];
        magic.copy_from_slice(&b[0..4]);
        Ok(Hello {
            magic,
            version: u16::from_be_bytes([b[4], b[5]]),
            kind: b[6],
            from: u64_at(8),
            to: u64_at(16),
            cluster_id: u64_at(24),
            fingerprint: u64_at(32),
            info: LocalInfo {
                initialized: b[7] & 1 == 1,
                last_index: u64_at(40),
            },
        })
    }

    pub(crate) fn peer_info(&self) -> PeerInfo {
        PeerInfo {
            id: self.from,
            cluster_id: self.cluster_id,
            initialized: self.info.initialized,
            last_index: self.info.last_index,
        }
    }

    /// What the receiver of `self` expected and did not get, naming both nodes and both values
    /// ("cluster_id differs: node 1 has 7, node 3 has 8"); `None` = all good.
    pub(crate) fn mismatch(&self, want: &Expect) -> Option<String> {
        let (me, them) = (want.my_id, self.from);
        let differs = |field: &str, ours: String, theirs: String| {
            Some(format!(
                "{field} differs: node {me} has {ours}, node {them} has {theirs}"
            ))
        };
        if self.magic != MAGIC {
            return Some(format!(
                "not a paddock peer: magic {:?}, expected {:?}",
                self.magic, MAGIC
            ));
        }
        if self.version != VERSION {
            return differs(
                "protocol version",
                VERSION.to_string(),
                self.version.to_string(),
            );
        }
        if self.cluster_id != want.cluster_id {
            return differs(
                "cluster_id",
                want.cluster_id.to_string(),
                self.cluster_id.to_string(),
            );
        }
        if self.to != me {
            return Some(format!(
                "node id differs: this is node {me}, node {them} dialled node {}",
                self.to
            ));
        }
        if let Some(dialled) = want.from {
            if them != dialled {
                return Some(format!(
                    "node id differs: node {me} dialled node {dialled}, node {them} answered"
                ));
            }
        }
        if !want.from_known {
            return Some(format!("node {them} is not among node {me}'s peers"));
        }
        if self.fingerprint != want.fingerprint {
            return differs(
                "fingerprint",
                format!("{:#018x}", want.fingerprint),
                format!("{:#018x}", self.fingerprint),
            );
        }
        if LinkKind::from_u8(self.kind).is_none() {
            return Some(format!("unknown link kind {}", self.kind));
        }
        if let Some(kind) = want.kind {
            if self.kind != kind as u8 {
                return Some(format!(
                    "link kind differs: node {me} asked for {kind:?}, node {them} answered {}",
                    self.kind
                ));
            }
        }
        None
    }
}

/// What one side requires of the other's hello.
pub(crate) struct Expect {
    pub my_id: u64,
    pub cluster_id: u64,
    pub fingerprint: u64,
    /// The id dialled (connector side), `None` on the accepting side.
    pub from: Option<u64>,
    pub from_known: bool,
    /// The kind asked for (connector side).
    pub kind: Option<LinkKind>,
}

/// Reads one handshake frame, with the handshake timeout.
pub(crate) async fn read(reader: &mut FrameReader) -> io::Result<Bytes> {
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, reader.recv()).await {
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "no handshake within 5 s",
        )),
        Ok(Err(e)) => Err(e),
        Ok(Ok(None)) => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed during the handshake",
        )),
        Ok(Ok(Some(b))) => Ok(b),
    }
}

/// Sends a reply or confirmation: `tag`, our hello (replies only), then a reason text.
pub(crate) async fn write(
    writer: &mut FrameWriter,
    tag: u8,
    hello: Option<&Hello>,
    reason: &str,
) -> io::Result<()> {
    let h = hello.map(Hello::encode);
    let h: &[u8] = h.as_ref().map_or(&[], |h| &h[..]);
    let reason = &reason.as_bytes()[..reason.len().min(HANDSHAKE_MAX - HELLO_LEN - 1)];
    writer.feed(&[&[tag], h, reason]).await?;
    writer.flush().await
}

pub(crate) fn refused(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionRefused, msg)
}
