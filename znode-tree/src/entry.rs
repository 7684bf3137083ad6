//! What goes into the Raft log: one `Entry` per state change, carrying everything apply needs
//! (session, xid, the proposer's clock reading, the connection's auth ids and the request), so
//! that apply reads no clock and every replica computes the same tree.
//!
//! Layout (jute primitives): `u8 version=1, i64 session_id, i32 xid, i64 time_ms,
//! vector<Id> auth, u8 tag, body`; bodies: 0 CreateSession `i32 timeout, 16 raw bytes`;
//! 1 CloseSession (none); 2 Write `i32 opcode, buffer request-body`; 3 DeleteExpired `ustring`;
//! 4 SetConfig `ustring members`; 5 Restore `i64 max_zxid, buffer snapshot`; 6 Refused `i32 error
//! code`; 7 Attach `i64 member`. Tag 8 is not a body but a prefix: `i64 member` then another tag
//! and its body, the entry's `via` (the ensemble member a client's write came through). Tags 7
//! and 8 were added with the owner check (SessionMoved); a release before them refuses such an
//! entry (`TreeError::EntryTag`) and stops, as it does at any entry it cannot apply, so every
//! member of an ensemble must run a release that has them before a client reconnects (docs/
//! operations.md, upgrades). Every entry without them encodes byte for byte as before.

use wire::jute::{Reader, Record, Writer};
use wire::{Id, Request};

use crate::error::TreeError;

const VERSION: u8 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub session_id: i64,
    pub xid: i32,
    pub time_ms: i64,
    pub auth: Vec<Id>,
    /// The ensemble member whose client connection the write came through (tag 8), checked
    /// against the session's owner at apply (SessionMoved). `None` for everything else, and on
    /// a standalone server.
    pub via: Option<u64>,
    pub txn: Txn,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Txn {
    CreateSession {
        timeout_ms: i32,
        password: [u8; 16],
    },
    /// Explicit closeSession or expiry: deletes the session's ephemerals.
    CloseSession,
    /// Create, Create2, CreateContainer, CreateTtl, Delete, SetData, SetAcl, Multi.
    Write(Request),
    /// Container/TTL cleanup proposed by the leader (ZooKeeper's deleteContainer).
    DeleteExpired {
        path: String,
    },
    /// The ensemble's membership, written to `/zookeeper/config` by the leader (at the first
    /// leadership of a new group, and at every membership change): `server.N=...` lines, each
    /// ending in a newline. Apply appends `version=<zxid in hex>`, as ZooKeeper's
    /// `QuorumVerifier.toString` does, so the version is the zxid of the entry that set it.
    SetConfig {
        members: String,
    },
    /// The AdminServer's `restore` (`ops/restore.rs`): the whole state becomes `snapshot` (this
    /// crate's own snapshot encoding, built by the member that took the request from a
    /// ZooKeeper snapshot), at a zxid in a new epoch above both the tree's and `max_zxid`, the
    /// largest zxid anywhere in the snapshot. The membership (`/zookeeper/config`) stays.
    Restore {
        max_zxid: i64,
        snapshot: Vec<u8>,
    },
    /// A client's write the leader refused before ordering it, for a reason only the leader can
    /// judge (reconfig's `ReconfigInProgress` and `NewConfigNoQuorum` depend on the leader's view
    /// of its followers, not on the tree): ZooKeeper's error transaction. It takes a zxid,
    /// changes nothing, and the member holding the session answers with `code`.
    Refused {
        code: i32,
    },
    /// A reconnect of the entry's session through ensemble member `member`: the session's owner
    /// becomes `member` (ZooKeeper's `setOwner` at a revalidation through the leader), so a
    /// write through its old member applied after this entry is refused with SessionMoved on
    /// every member alike. The reconnect is answered once this applies.
    Attach {
        member: u64,
    },
}

impl Entry {
    pub fn encode(&self) -> Vec<u8> {
        // Room for the header and a typical request (a path and 100 bytes of data), so that
        // encoding does not grow the buffer step by step from empty.
        let mut w = Writer::with_capacity(256);
        w.write_u8(VERSION);
        w.write_i64(self.session_id);
        w.write_i32(self.xid);
        w.write_i64(self.time_ms);
        w.write_vec(&self.auth, |w, id| id.encode(w));
        if let Some(member) = self.via {
            w.write_u8(8);
            w.write_i64(member as i64);
        }
        match &self.txn {
            Txn::CreateSession {
                timeout_ms,
                password,
            } => {
                w.write_u8(0);
                w.write_i32(*timeout_ms);
                w.buf.extend_from_slice(password);
            }
            Txn::CloseSession => w.write_u8(1),
            Txn::Write(req) => {
                w.write_u8(2);
                w.write_i32(req.opcode().code());
                w.write_buffer_with(|w| req.encode_body(w));
            }
            Txn::DeleteExpired { path } => {
                w.write_u8(3);
                w.write_string(path);
            }
            Txn::SetConfig { members } => {
                w.write_u8(4);
                w.write_string(members);
            }
            Txn::Restore { max_zxid, snapshot } => {
                w.write_u8(5);
                w.write_i64(*max_zxid);
                w.write_buffer(Some(snapshot));
            }
            Txn::Refused { code } => {
                w.write_u8(6);
                w.write_i32(*code);
            }
            Txn::Attach { member } => {
                w.write_u8(7);
                w.write_i64(*member as i64);
            }
        }
        w.into_inner()
    }

    pub fn decode(b: &[u8]) -> Result<Entry, TreeError> {
        let r = &mut Reader::new(b);
        let version = r
            .read_u8("Entry.version")
            .map_err(|_| TreeError::EmptyEntry)?;
        if version != VERSION {
            return Err(TreeError::EntryVersion(version));
        }
        let session_id = r
            .read_i64("Entry.session_id")
            .map_err(TreeError::BadEntry)?;
        let xid = r.read_i32("Entry.xid").map_err(TreeError::BadEntry)?;
        let time_ms = r.read_i64("Entry.time_ms").map_err(TreeError::BadEntry)?;
        let auth = r
            .read_vec("Entry.auth", 8, Id::decode)
            .map_err(TreeError::BadEntry)?;
        let mut tag = r.read_u8("Entry.tag").map_err(TreeError::BadEntry)?;
        let mut via = None;
        if tag == 8 {
            via = Some(r.read_i64("Via.member").map_err(TreeError::BadEntry)? as u64);
            tag = r.read_u8("Entry.tag").map_err(TreeError::BadEntry)?;
        }
        let txn = match tag {
            0 => {
                let timeout_ms = r
                    .read_i32("CreateSession.timeout")
                    .map_err(TreeError::BadEntry)?;
                let mut password = [0u8; 16];
                for b in password.iter_mut() {
                    *b = r
                        .read_u8("CreateSession.password")
                        .map_err(TreeError::BadEntry)?;
                }
                Txn::CreateSession {
                    timeout_ms,
                    password,
                }
            }
            1 => Txn::CloseSession,
            2 => {
                let op = r.read_i32("Write.opcode").map_err(TreeError::BadEntry)?;
                let body = r
                    .read_opt_bytes("Write.body")
                    .map_err(TreeError::BadEntry)?
                    .unwrap_or_default();
                Txn::Write(Request::decode(op, body).map_err(TreeError::BadEntry)?)
            }
            3 => Txn::DeleteExpired {
                path: r
                    .read_string("DeleteExpired.path")
                    .map_err(TreeError::BadEntry)?,
            },
            4 => Txn::SetConfig {
                members: r
                    .read_string("SetConfig.members")
                    .map_err(TreeError::BadEntry)?,
            },
            5 => Txn::Restore {
                max_zxid: r
                    .read_i64("Restore.max_zxid")
                    .map_err(TreeError::BadEntry)?,
                snapshot: r
                    .read_opt_bytes("Restore.snapshot")
                    .map_err(TreeError::BadEntry)?
                    .unwrap_or_default()
                    .to_vec(),
            },
            6 => Txn::Refused {
                code: r.read_i32("Refused.code").map_err(TreeError::BadEntry)?,
            },
            7 => Txn::Attach {
                member: r.read_i64("Attach.member").map_err(TreeError::BadEntry)? as u64,
            },
            t => return Err(TreeError::EntryTag(t)),
        };
        Ok(Entry {
            session_id,
            xid,
            time_ms,
            auth,
            via,
            txn,
        })
    }
}
