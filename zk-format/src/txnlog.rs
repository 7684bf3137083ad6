//! ZooKeeper's transaction log (`FileTxnLog`, `Util.readTxnBytes`, `SerializeUtils.deserializeTxn`,
//! `zookeeper.jute`):
//!
//! ```text
//! FileHeader{i32 magic "ZKLG", i32 version 2, i64 dbid 0}
//! records: {i64 adler32 of bytes, i32 len, bytes[len], u8 'B'}, then zeros (preallocation)
//! bytes: TxnHeader{i64 sessionId, i32 cxid, i64 zxid, i64 timeMs, i32 type}, the body,
//!        [TxnDigest{i32 version, i64 treeDigest}] (3.6+)
//! ```
//!
//! Where a log ends, as ZooKeeper's reader decides: at the end of the file, at a record of
//! length 0 (the preallocated zeros), or at a record cut short or missing its `'B'` (a write
//! torn by a crash); ZooKeeper then goes on with the next log file. A record whose checksum
//! does not match throws and ZooKeeper does not start; this reader says where
//! (`FormatError::Checksum`), except for a last record followed only by zeros or the end of the
//! file, which no later write relied on and which it reports as a torn tail
//! (`LogEnd::TornChecksum`), where ZooKeeper would refuse to start.

use wire::Acl;

use crate::adler32::adler32;
use crate::error::FormatError;
use crate::jute::{Reader, Writer};

pub const LOG_MAGIC: u32 = 0x5A4B_4C47; // "ZKLG"
pub const LOG_HEADER_LEN: usize = 16;

/// ZooKeeper's opcodes as transaction types (`ZooDefs.OpCode`).
pub mod op {
    pub const NOTIFICATION: i32 = 0;
    pub const CREATE: i32 = 1;
    pub const DELETE: i32 = 2;
    pub const SET_DATA: i32 = 5;
    pub const SET_ACL: i32 = 7;
    pub const CHECK: i32 = 13;
    pub const MULTI: i32 = 14;
    pub const CREATE2: i32 = 15;
    pub const RECONFIG: i32 = 16;
    pub const CREATE_CONTAINER: i32 = 19;
    pub const DELETE_CONTAINER: i32 = 20;
    pub const CREATE_TTL: i32 = 21;
    pub const CREATE_SESSION: i32 = -10;
    pub const CLOSE_SESSION: i32 = -11;
    pub const ERROR: i32 = -1;
}

/// `TxnHeader`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnHeader {
    pub session_id: i64,
    pub cxid: i32,
    pub zxid: i64,
    pub time: i64,
    pub kind: i32,
}

/// A transaction body, by its header's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Txn {
    CreateSession {
        timeout: i32,
    },
    /// `paths2Delete`; `None` in logs written before CloseSessionTxn existed.
    CloseSession {
        paths: Option<Vec<String>>,
    },
    /// create (1) and create2 (15). `parent_cversion` is -1 for a pre-3.3 record without it,
    /// which `DataTree.createNode` reads as "the parent's count plus one".
    Create {
        path: String,
        data: Option<Vec<u8>>,
        acl: Option<Vec<Acl>>,
        ephemeral: bool,
        parent_cversion: i32,
    },
    CreateContainer {
        path: String,
        data: Option<Vec<u8>>,
        acl: Option<Vec<Acl>>,
        parent_cversion: i32,
    },
    CreateTtl {
        path: String,
        data: Option<Vec<u8>>,
        acl: Option<Vec<Acl>>,
        parent_cversion: i32,
        ttl: i64,
    },
    /// delete (2) and deleteContainer (20).
    Delete {
        path: String,
    },
    /// setData (5) and reconfig (16); `version` is the new version.
    SetData {
        path: String,
        data: Option<Vec<u8>>,
        version: i32,
    },
    SetAcl {
        path: String,
        acl: Option<Vec<Acl>>,
        version: i32,
    },
    Check {
        path: String,
        version: i32,
    },
    Error {
        err: i32,
    },
    /// Each sub-transaction with its type.
    Multi(Vec<(i32, Txn)>),
}

/// `TxnDigest`: the tree's digest after this transaction, as the leader computed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnDigest {
    pub version: i32,
    pub digest: i64,
}

/// One record of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// Where the record starts in its file (its checksum field).
    pub offset: u64,
    pub header: TxnHeader,
    pub txn: Txn,
    pub digest: Option<TxnDigest>,
    /// The length of the record's bytes (for statistics: records above 1 MiB are legal).
    pub len: usize,
}

/// Why reading a log stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogEnd {
    /// The file ended after a whole record.
    Eof,
    /// A record of length 0 at `offset`: the preallocated zeros.
    Padding { offset: u64 },
    /// A record cut short, or missing its 'B', at `offset`: ZooKeeper's "partial" record.
    Torn { offset: u64 },
    /// The last record's checksum fails and only zeros or the end follow: a torn write.
    TornChecksum { offset: u64 },
}

/// A decoded log file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    pub dbid: i64,
    pub records: Vec<LogRecord>,
    pub end: LogEnd,
}

/// Reads a whole log file. `on_record` sees each record as it is decoded (a caller that needs
/// only some can drop the rest); the records it returns `true` for are kept in `LogFile`.
pub fn decode_with(
    bytes: &[u8],
    mut keep: impl FnMut(&LogRecord) -> bool,
) -> Result<LogFile, FormatError> {
    let mut r = Reader::new(bytes);
    let magic = r.i32("log header magic")? as u32;
    if magic != LOG_MAGIC {
        return Err(FormatError::BadMagic {
            what: "log header",
            found: magic,
            expected: LOG_MAGIC,
            offset: 0,
        });
    }
    let version = r.i32("log header version")?;
    if version != 2 {
        return Err(FormatError::invalid(
            format!("log version {version}, only version 2 exists"),
            4,
        ));
    }
    let dbid = r.i64("log header dbid")?;
    let mut records = Vec::new();
    let end = loop {
        let offset = r.offset();
        if r.remaining() == 0 {
            break LogEnd::Eof;
        }
        let Ok(crc) = r.i64("record checksum") else {
            break LogEnd::Torn { offset };
        };
        let Ok(len) = r.i32("record length") else {
            break LogEnd::Torn { offset };
        };
        if len == 0 {
            break LogEnd::Padding { offset };
        }
        // A negative length, or one past the end: Java's readBuffer throws an IOException for
        // a negative length ("Unreasonable length") and EOF for a short one; both only where
        // a write was torn, since the record's checksum comes before it.
        if len < 0 || len as usize >= r.remaining() {
            if len < 0 && !only_zeros(&bytes[r.pos()..]) {
                return Err(FormatError::BadLength {
                    what: "record length",
                    len: len.into(),
                    offset: offset + 8,
                });
            }
            break LogEnd::Torn { offset };
        }
        let body_at = r.offset();
        let body = &r.rest()[..len as usize];
        r.set_pos(r.pos() + len as usize);
        let Ok(b) = r.u8("record end") else {
            break LogEnd::Torn { offset };
        };
        if b != b'B' {
            break LogEnd::Torn { offset };
        }
        let computed = adler32(body);
        if crc as u64 != computed {
            if only_zeros(r.rest()) {
                break LogEnd::TornChecksum { offset };
            }
            return Err(FormatError::Checksum {
                what: "log record",
                offset,
                stored: crc as u64,
                computed,
            });
        }
        let (header, txn, digest) = decode_txn(body, body_at)?;
        let rec = LogRecord {
            offset,
            header,
            txn,
            digest,
            len: len as usize,
        };
        if keep(&rec) {
            records.push(rec);
        }
    };
    Ok(LogFile { dbid, records, end })
}

/// `decode_with`, keeping every record.
pub fn decode(bytes: &[u8]) -> Result<LogFile, FormatError> {
    decode_with(bytes, |_| true)
}

fn only_zeros(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0)
}

/// One record's bytes: header, body, optional digest (`SerializeUtils.deserializeTxn`).
pub fn decode_txn(
    bytes: &[u8],
    base: u64,
) -> Result<(TxnHeader, Txn, Option<TxnDigest>), FormatError> {
    let mut r = Reader::at(bytes, base);
    let header = TxnHeader {
        session_id: r.i64("txn sessionId")?,
        cxid: r.i32("txn cxid")?,
        zxid: r.i64("txn zxid")?,
        time: r.i64("txn time")?,
        kind: r.i32("txn type")?,
    };
    let txn = decode_body(&mut r, header.kind, true)?;
    // The digest is optional, detected by what is left (EOF: none).
    let digest = if r.remaining() >= 12 {
        Some(TxnDigest {
            version: r.i32("txn digest version")?,
            digest: r.i64("txn digest")?,
        })
    } else {
        None
    };
    Ok((header, txn, digest))
}

/// A body of type `kind`. `top` is false inside a multi, whose sub-records are whole buffers.
fn decode_body(r: &mut Reader<'_>, kind: i32, top: bool) -> Result<Txn, FormatError> {
    let at = r.offset();
    Ok(match kind {
        op::CREATE_SESSION => Txn::CreateSession {
            timeout: r.i32("createSession timeout")?,
        },
        op::CLOSE_SESSION => {
            // Empty before 3.6 (no paths recorded), and when closeSessionTxn is disabled: then
            // only the 12-byte digest may follow (a vector with a digest takes at least 16).
            if r.remaining() == 0 || (top && r.remaining() == 12) {
                Txn::CloseSession { paths: None }
            } else {
                Txn::CloseSession {
                    paths: r.strings("closeSession paths")?,
                }
            }
        }
        op::CREATE | op::CREATE2 => {
            let path = r.str("create path")?.to_owned();
            let data = r.buffer("create data")?;
            let acl = r.acls("create acl")?;
            let ephemeral = r.bool("create ephemeral")?;
            // A V0 create (before 3.3) has no parentCVersion: Java reads EOF and takes -1,
            // which `DataTree.createNode` reads as "the parent's count plus one".
            let parent_cversion = if r.remaining() >= 4 {
                r.i32("create parentCVersion")?
            } else {
                -1
            };
            Txn::Create {
                path,
                data,
                acl,
                ephemeral,
                parent_cversion,
            }
        }
        op::CREATE_CONTAINER => Txn::CreateContainer {
            path: r.str("createContainer path")?.to_owned(),
            data: r.buffer("createContainer data")?,
            acl: r.acls("createContainer acl")?,
            parent_cversion: r.i32("createContainer parentCVersion")?,
        },
        op::CREATE_TTL => Txn::CreateTtl {
            path: r.str("createTTL path")?.to_owned(),
            data: r.buffer("createTTL data")?,
            acl: r.acls("createTTL acl")?,
            parent_cversion: r.i32("createTTL parentCVersion")?,
            ttl: r.i64("createTTL ttl")?,
        },
        op::DELETE | op::DELETE_CONTAINER => Txn::Delete {
            path: r.str("delete path")?.to_owned(),
        },
        op::SET_DATA | op::RECONFIG => Txn::SetData {
            path: r.str("setData path")?.to_owned(),
            data: r.buffer("setData data")?,
            version: r.i32("setData version")?,
        },
        op::SET_ACL => Txn::SetAcl {
            path: r.str("setACL path")?.to_owned(),
            acl: r.acls("setACL acl")?,
            version: r.i32("setACL version")?,
        },
        op::CHECK => Txn::Check {
            path: r.str("check path")?.to_owned(),
            version: r.i32("check version")?,
        },
        op::ERROR => Txn::Error {
            err: r.i32("error code")?,
        },
        op::MULTI if top => {
            let n = r.count("multi txns", 8)?.unwrap_or(0);
            let mut subs = Vec::with_capacity(n);
            for _ in 0..n {
                let sub_kind = r.i32("multi sub type")?;
                let sub_at = r.offset();
                let body = r.bytes("multi sub body")?.unwrap_or_default();
                let mut sr = Reader::at(body, sub_at + 4);
                let sub = match sub_kind {
                    op::CREATE
                    | op::CREATE2
                    | op::CREATE_TTL
                    | op::CREATE_CONTAINER
                    | op::DELETE
                    | op::DELETE_CONTAINER
                    | op::SET_DATA
                    | op::ERROR
                    | op::CHECK => decode_body(&mut sr, sub_kind, false)?,
                    other => {
                        return Err(FormatError::invalid(
                            format!("multi: invalid type of op {other}"),
                            sub_at - 4,
                        ))
                    }
                };
                subs.push((sub_kind, sub));
            }
            Txn::Multi(subs)
        }
        other => {
            return Err(FormatError::invalid(
                format!("unsupported transaction type {other}"),
                at,
            ))
        }
    })
}

/// Encodes a transaction record's bytes (header, body, digest): for tests and for writing logs.
pub fn encode_txn(h: &TxnHeader, txn: &Txn, digest: Option<TxnDigest>) -> Vec<u8> {
    let mut w = Writer::default();
    w.i64(h.session_id);
    w.i32(h.cxid);
    w.i64(h.zxid);
    w.i64(h.time);
    w.i32(h.kind);
    encode_body(&mut w, txn);
    if let Some(d) = digest {
        w.i32(d.version);
        w.i64(d.digest);
    }
    w.buf
}

fn encode_body(w: &mut Writer, txn: &Txn) {
    match txn {
        Txn::CreateSession { timeout } => w.i32(*timeout),
        Txn::CloseSession { paths } => {
            if let Some(p) = paths {
                w.strings(p)
            }
        }
        Txn::Create {
            path,
            data,
            acl,
            ephemeral,
            parent_cversion,
        } => {
            w.str(path);
            w.bytes(data.as_deref());
            w.acls(acl.as_deref());
            w.bool(*ephemeral);
            w.i32(*parent_cversion);
        }
        Txn::CreateContainer {
            path,
            data,
            acl,
            parent_cversion,
        } => {
            w.str(path);
            w.bytes(data.as_deref());
            w.acls(acl.as_deref());
            w.i32(*parent_cversion);
        }
        Txn::CreateTtl {
            path,
            data,
            acl,
            parent_cversion,
            ttl,
        } => {
            w.str(path);
            w.bytes(data.as_deref());
            w.acls(acl.as_deref());
            w.i32(*parent_cversion);
            w.i64(*ttl);
        }
        Txn::Delete { path } => w.str(path),
        Txn::SetData {
            path,
            data,
            version,
        } => {
            w.str(path);
            w.bytes(data.as_deref());
            w.i32(*version);
        }
        Txn::SetAcl { path, acl, version } => {
            w.str(path);
            w.acls(acl.as_deref());
            w.i32(*version);
        }
        Txn::Check { path, version } => {
            w.str(path);
            w.i32(*version);
        }
        Txn::Error { err } => w.i32(*err),
        Txn::Multi(subs) => {
            w.i32(subs.len() as i32);
            for (kind, sub) in subs {
                w.i32(*kind);
                let mut sw = Writer::default();
                encode_body(&mut sw, sub);
                w.bytes(Some(&sw.buf));
            }
        }
    }
}

/// A log file's header (`FileHeader`: magic, version 2, dbid 0), as `FileTxnLog` writes it.
pub fn log_header() -> Vec<u8> {
    let mut w = Writer::default();
    w.i32(LOG_MAGIC as i32);
    w.i32(2);
    w.i64(0);
    w.buf
}

/// One record as it follows the header in a log file: the Adler-32 of `rec` (the bytes
/// `encode_txn` gives), its length, the bytes, and the `'B'` that ends it (`Util.writeTxnBytes`).
pub fn frame_record(rec: &[u8]) -> Vec<u8> {
    let mut w = Writer::with_capacity(rec.len() + 13);
    w.i64(adler32(rec) as i64);
    w.bytes(Some(rec));
    w.u8(b'B');
    w.buf
}

/// A whole log file from records (header, each record framed and checksummed).
pub fn encode_log(records: &[Vec<u8>]) -> Vec<u8> {
    let mut buf = log_header();
    for rec in records {
        buf.extend_from_slice(&frame_record(rec));
    }
    buf
}
