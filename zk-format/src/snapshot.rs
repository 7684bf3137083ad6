//! ZooKeeper's snapshot file (`FileSnap`, `SerializeUtils.serializeSnapshot`, `DataTree.serialize`,
//! `ReferenceCountedACLCache.serialize`, `SnapStream.sealStream`), as a decompressed stream:
//!
//! ```text
//! FileHeader{i32 magic "ZKSN", i32 version 2, i64 dbid -1}
//! i32 n, n x {i64 sessionId, i32 timeoutMs}
//! i32 n, n x {i64 aclIndex, vector<ACL>}          (index -1, OPEN_ACL_UNSAFE, is never written)
//! nodes, parent before child: {ustring path ("" for the root), buffer data, i64 aclIndex,
//!   StatPersisted{i64 czxid, mzxid, ctime, mtime; i32 version, cversion, aversion;
//!   i64 ephemeralOwner, pzxid}}, ended by the path "/"
//! seal: i64 Adler32 of every byte before it, ustring "/"
//! [ZxidDigest{i64 zxid, i32 digestVersion, i64 digest (a hex ustring when version < 2)}, seal]
//! [i64 lastProcessedZxid, seal]
//! ```
//!
//! The two trailers are optional and told apart only by what follows the first seal, so each is
//! tried and kept only if the seal after it checks (a file written with the digest off and the
//! last zxid on would be misread by a reader that assumes the digest). The Adler32 runs over the
//! whole stream: each seal's own bytes feed the next one's sum.

use std::collections::BTreeMap;

use wire::Acl;

use crate::adler32::Adler32;
use crate::error::FormatError;
use crate::jute::{Reader, Writer};

pub const SNAP_MAGIC: u32 = 0x5A4B_534E; // "ZKSN"
pub const VERSION: i32 = 2;
/// `FileSnap.dbId`: every snapshot ZooKeeper writes carries it.
pub const SNAP_DBID: i64 = -1;
/// `ReferenceCountedACLCache.OPEN_UNSAFE_ACL_ID`.
pub const OPEN_ACL_INDEX: i64 = -1;
/// `DigestCalculator.DIGEST_VERSION`.
pub const DIGEST_VERSION: i32 = 2;

/// ZooKeeper's `StatPersisted`, in its field order. `cversion` is the stored count of child
/// creates, not what a client reads (`DataNode.copyStat`: `cversion * 2 - numChildren`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatPersisted {
    pub czxid: i64,
    pub mzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    pub cversion: i32,
    pub aversion: i32,
    pub ephemeral_owner: i64,
    pub pzxid: i64,
}

impl StatPersisted {
    fn read(r: &mut Reader<'_>) -> Result<StatPersisted, FormatError> {
        Ok(StatPersisted {
            czxid: r.i64("stat.czxid")?,
            mzxid: r.i64("stat.mzxid")?,
            ctime: r.i64("stat.ctime")?,
            mtime: r.i64("stat.mtime")?,
            version: r.i32("stat.version")?,
            cversion: r.i32("stat.cversion")?,
            aversion: r.i32("stat.aversion")?,
            ephemeral_owner: r.i64("stat.ephemeralOwner")?,
            pzxid: r.i64("stat.pzxid")?,
        })
    }

    fn write(&self, w: &mut Writer) {
        w.i64(self.czxid);
        w.i64(self.mzxid);
        w.i64(self.ctime);
        w.i64(self.mtime);
        w.i32(self.version);
        w.i32(self.cversion);
        w.i32(self.aversion);
        w.i64(self.ephemeral_owner);
        w.i64(self.pzxid);
    }
}

/// One node record. `path` is ZooKeeper's: `""` for the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapNode {
    pub path: String,
    pub data: Option<Vec<u8>>,
    pub acl: i64,
    pub stat: StatPersisted,
}

/// The digest trailer: the tree's digest as of `zxid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZxidDigest {
    pub zxid: i64,
    pub version: i32,
    pub digest: i64,
}

/// A decoded snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub dbid: i64,
    /// (session id, timeout in ms), in file order.
    pub sessions: Vec<(i64, i32)>,
    /// The ACL cache: index to list.
    pub acls: BTreeMap<i64, Vec<Acl>>,
    pub nodes: Vec<SnapNode>,
    pub digest: Option<ZxidDigest>,
    pub last_processed_zxid: Option<i64>,
}

/// Reads a whole decompressed snapshot stream, checking every seal.
pub fn decode(bytes: &[u8]) -> Result<Snapshot, FormatError> {
    let mut r = Reader::new(bytes);
    let at = r.offset();
    let magic = r.i32("snapshot.magic")? as u32;
    if magic != SNAP_MAGIC {
        return Err(FormatError::BadMagic {
            what: "snapshot header",
            found: magic,
            expected: SNAP_MAGIC,
            offset: at,
        });
    }
    let at = r.offset();
    let version = r.i32("snapshot.version")?;
    if version != VERSION {
        return Err(FormatError::invalid(
            format!("snapshot version {version}, only version {VERSION} exists"),
            at,
        ));
    }
    let dbid = r.i64("snapshot.dbid")?;
    let mut snap = Snapshot {
        dbid,
        ..Snapshot::default()
    };
    let n = r.count("sessions", 12)?.unwrap_or(0);
    snap.sessions.reserve(n);
    for _ in 0..n {
        let id = r.i64("session.id")?;
        let timeout = r.i32("session.timeout")?;
        snap.sessions.push((id, timeout));
    }
    let at = r.offset();
    let n = r.count("acl cache", 12)?.unwrap_or(0);
    for _ in 0..n {
        let idx_at = r.offset();
        let idx = r.i64("acl cache index")?;
        let list = r.acls("acl cache list")?.ok_or_else(|| {
            FormatError::invalid(format!("ACL cache entry {idx} is a null list"), idx_at)
        })?;
        if snap.acls.insert(idx, list).is_some() {
            return Err(FormatError::invalid(
                format!("ACL cache index {idx} listed twice"),
                idx_at,
            ));
        }
    }
    let _ = at;
    loop {
        let at = r.offset();
        let path = r.str("node path")?;
        if path == "/" {
            break;
        }
        let data = r.buffer("node data")?;
        let acl = r.i64("node acl")?;
        let stat = StatPersisted::read(&mut r)?;
        if snap.nodes.is_empty() && !path.is_empty() {
            return Err(FormatError::invalid(
                format!("the first node is {path:?}, not the root"),
                at,
            ));
        }
        snap.nodes.push(SnapNode {
            path: path.to_owned(),
            data,
            acl,
            stat,
        });
    }
    let mut sum = Adler32::new();
    let mut summed = 0usize;
    seal(&mut r, bytes, &mut sum, &mut summed, "snapshot seal")?;
    // The trailers, each kept only if its seal checks.
    if r.remaining() > 0 {
        let save = (r.pos(), sum, summed);
        match digest_trailer(&mut r, bytes, &mut sum, &mut summed) {
            Ok(d) => snap.digest = Some(d),
            Err(_) => {
                r.set_pos(save.0);
                sum = save.1;
                summed = save.2;
            }
        }
    }
    if r.remaining() > 0 {
        let save = (r.pos(), sum, summed);
        let last = r.i64("lastProcessedZxid").and_then(|z| {
            seal(&mut r, bytes, &mut sum, &mut summed, "last zxid seal")?;
            Ok(z)
        });
        match last {
            Ok(z) => snap.last_processed_zxid = Some(z),
            Err(_) => {
                r.set_pos(save.0);
                sum = save.1;
                summed = save.2;
            }
        }
    }
    if r.remaining() > 0 {
        return Err(FormatError::invalid(
            format!(
                "{} bytes after the snapshot's last seal that are no trailer with a good seal",
                r.remaining()
            ),
            r.offset(),
        ));
    }
    let _ = (sum, summed);
    Ok(snap)
}

fn digest_trailer(
    r: &mut Reader<'_>,
    bytes: &[u8],
    sum: &mut Adler32,
    summed: &mut usize,
) -> Result<ZxidDigest, FormatError> {
    let zxid = r.i64("digest zxid")?;
    let version = r.i32("digest version")?;
    let digest = if version < 2 {
        let at = r.offset();
        match r.opt_str("digest")? {
            None => 0,
            Some(hex) => u64::from_str_radix(hex, 16)
                .map_err(|_| FormatError::invalid("digest: not hex", at))?
                as i64,
        }
    } else {
        r.i64("digest")?
    };
    seal(r, bytes, sum, summed, "digest seal")?;
    Ok(ZxidDigest {
        zxid,
        version,
        digest,
    })
}

/// Checks a seal: the Adler32 of every byte before it, then the string "/".
fn seal(
    r: &mut Reader<'_>,
    bytes: &[u8],
    sum: &mut Adler32,
    summed: &mut usize,
    what: &'static str,
) -> Result<(), FormatError> {
    sum.update(&bytes[*summed..r.pos()]);
    *summed = r.pos();
    let at = r.offset();
    let stored = r.i64(what)? as u64;
    let slash_at = r.offset();
    let slash = r.opt_str(what)?;
    if slash != Some("/") {
        return Err(FormatError::invalid(
            format!("{what}: not followed by \"/\""),
            slash_at,
        ));
    }
    let computed = sum.value();
    if stored != computed {
        return Err(FormatError::Checksum {
            what,
            offset: at,
            stored,
            computed,
        });
    }
    Ok(())
}

/// Writes a snapshot stream as ZooKeeper 3.9 does with its defaults (digest on, last processed
/// zxid on): feed it the sessions, the ACL cache and the nodes parent before child, then
/// `finish`.
pub struct SnapshotWriter {
    w: Writer,
    sum: Adler32,
    summed: usize,
    nodes_started: bool,
}

impl SnapshotWriter {
    /// Header, sessions and the ACL cache (index -1 must not be among them).
    pub fn new(
        sessions: &[(i64, i32)],
        acls: &BTreeMap<i64, Vec<Acl>>,
        size_hint: usize,
    ) -> SnapshotWriter {
        let mut w = Writer::with_capacity(size_hint);
        w.i32(SNAP_MAGIC as i32);
        w.i32(VERSION);
        w.i64(SNAP_DBID);
        w.i32(sessions.len() as i32);
        for &(id, timeout) in sessions {
            w.i64(id);
            w.i32(timeout);
        }
        w.i32(acls.len() as i32);
        for (idx, list) in acls {
            w.i64(*idx);
            w.acls(Some(list));
        }
        SnapshotWriter {
            w,
            sum: Adler32::new(),
            summed: 0,
            nodes_started: false,
        }
    }

    /// The next node; the root's path is `""`.
    pub fn node(&mut self, path: &str, data: Option<&[u8]>, acl: i64, stat: &StatPersisted) {
        self.nodes_started = true;
        self.w.str(path);
        self.w.bytes(data);
        self.w.i64(acl);
        stat.write(&mut self.w);
    }

    /// Bytes written so far (a streaming caller may take them with `take`).
    pub fn len(&self) -> usize {
        self.w.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.w.buf.is_empty()
    }

    /// The bytes written since the last call, the checksum updated over them: for a caller
    /// that streams the snapshot out as it is written.
    pub fn take(&mut self) -> Vec<u8> {
        self.sum.update(&self.w.buf[self.summed..]);
        self.summed = 0;
        std::mem::take(&mut self.w.buf)
    }

    fn seal(&mut self) {
        self.sum.update(&self.w.buf[self.summed..]);
        self.summed = self.w.buf.len();
        let v = self.sum.value();
        self.w.i64(v as i64);
        self.w.str("/");
    }

    /// The end marker, the seals and both trailers: `digest` is the tree's digest as of
    /// `last_zxid` (`DataTree.serializeZxidDigest`, `serializeLastProcessedZxid`). Returns the
    /// rest of the stream.
    pub fn finish(mut self, last_zxid: i64, digest: i64) -> Vec<u8> {
        self.w.str("/");
        self.seal();
        self.w.i64(last_zxid);
        self.w.i32(DIGEST_VERSION);
        self.w.i64(digest);
        self.seal();
        self.w.i64(last_zxid);
        self.seal();
        self.w.buf
    }
}
