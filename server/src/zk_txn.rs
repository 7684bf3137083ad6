//! A committed paddock log entry as the ZooKeeper transaction it was: what `paddock backup
//! --follow` writes to `version-2/log.<zxid>` files (DESIGN.md, "Restore and point-in-time
//! recovery"). paddock's entries are requests (sequential names, versions and ACL fix-ups are
//! decided as they apply); ZooKeeper's log holds results (`PrepRequestProcessor` decides them
//! before the log). So the record is built right after the entry applied, from the entry, what
//! applying it answered and the tree as it left it, and carries what ZooKeeper's leader would
//! have logged: the actual path, the fixed-up ACL, the new version, the parent's cversion, the
//! ephemerals a closed session lost, and an error transaction for a write that failed (which
//! takes a zxid in both servers).
//!
//! Every log position becomes one record, so a follow log's zxids are consecutive as
//! ZooKeeper's are (`zk_import`'s replay refuses a gap as a missing log): a raft no-op (a new
//! leader's empty entry, a membership change) is an error transaction of session 0 with code 0,
//! which changes nothing in either server. A restore is no transaction: the follower starts a
//! new snapshot there.

use std::collections::HashMap;

use wire::{CreateMode, MultiResult, OpCode, Request, Response};
use zk_format::txnlog::{op, Txn, TxnHeader};
use znode_tree::{acl::fixup_acl, Applied, Change, Entry, Tree, Txn as PTxn};

/// ZooKeeper's path of the membership node, written by reconfig.
const CONFIG_NODE: &str = "/zookeeper/config";

/// The record bytes (`TxnHeader` and body, no digest) of a transaction.
pub fn encode(h: &TxnHeader, txn: &Txn) -> Vec<u8> {
    zk_format::txnlog::encode_txn(h, txn, None)
}

/// A raft no-op at `zxid`: an error transaction with code 0 that changes nothing.
pub fn noop(zxid: i64, time: i64) -> (TxnHeader, Txn) {
    (
        TxnHeader {
            session_id: 0,
            cxid: 0,
            zxid,
            time,
            kind: op::ERROR,
        },
        Txn::Error { err: 0 },
    )
}

/// A reconfig's (and the leader's membership write's) transaction: `setData` of
/// `/zookeeper/config` under the type reconfig, with the node's data and version as the entry
/// left them, or the error it failed with.
pub fn reconfig(
    entry: &Entry,
    zxid: i64,
    outcome: Result<(), i32>,
    tree: &Tree,
) -> (TxnHeader, Txn) {
    let h = header(entry, zxid, op::RECONFIG);
    let written = tree
        .stored_stat(CONFIG_NODE)
        .filter(|s| s.mzxid == zxid && outcome.is_ok());
    match written {
        Some(stat) => (
            h,
            Txn::SetData {
                path: CONFIG_NODE.into(),
                data: tree.stored_data(CONFIG_NODE).flatten().map(<[u8]>::to_vec),
                version: stat.version,
            },
        ),
        None => error(
            h,
            outcome
                .err()
                .unwrap_or(wire::ErrorCode::BadArguments.code()),
        ),
    }
}

/// What an applied entry is in ZooKeeper's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mapped {
    Txn(TxnHeader, Txn),
    /// A restore: no transaction; the follower starts a new snapshot.
    Restore,
    /// An applied entry this module cannot write (a bug: every entry type maps): the follower
    /// starts a new snapshot rather than keep a log that lacks it.
    Unmapped,
}

/// The transaction of `entry` at `zxid`, which applied as `applied` and left `tree`. A reconfig
/// goes through `reconfig`.
pub fn of_entry(entry: &Entry, zxid: i64, applied: &Applied, tree: &Tree) -> Mapped {
    match of_entry_inner(entry, zxid, applied, tree) {
        Some((h, t)) if h.kind == op::ERROR || !has_gap(&t) => Mapped::Txn(h, t),
        Some(_) => Mapped::Unmapped,
        None if matches!(entry.txn, PTxn::Restore { .. }) => Mapped::Restore,
        None => Mapped::Unmapped,
    }
}

/// A successful multi with an op it could not map (written as `Error` with code `i32::MIN`).
fn has_gap(t: &Txn) -> bool {
    matches!(t, Txn::Multi(subs) if subs.iter().any(|(_, s)| *s == Txn::Error { err: i32::MIN }))
}

fn of_entry_inner(
    entry: &Entry,
    zxid: i64,
    applied: &Applied,
    tree: &Tree,
) -> Option<(TxnHeader, Txn)> {
    let failed = |kind_h: TxnHeader, code: wire::ErrorCode| error(kind_h, code.code());
    Some(match (&entry.txn, &applied.reply) {
        (PTxn::Restore { .. }, _) => return None,
        // ZooKeeper's revalidation is no transaction (the caller writes a no-op).
        (PTxn::Attach { .. }, _) => return None,
        (_, Err(code)) => failed(header(entry, zxid, op::ERROR), *code),
        (PTxn::CreateSession { timeout_ms, .. }, Ok(_)) => (
            header(entry, zxid, op::CREATE_SESSION),
            Txn::CreateSession {
                timeout: *timeout_ms,
            },
        ),
        (PTxn::CloseSession, Ok(_)) => (
            header(entry, zxid, op::CLOSE_SESSION),
            Txn::CloseSession {
                paths: Some(
                    applied
                        .changes
                        .iter()
                        .filter_map(|c| match c {
                            Change::Deleted { path, .. } => Some(path.clone()),
                            _ => None,
                        })
                        .collect(),
                ),
            },
        ),
        (PTxn::DeleteExpired { path }, Ok(_)) => (
            header(entry, zxid, op::DELETE_CONTAINER),
            Txn::Delete { path: path.clone() },
        ),
        (PTxn::SetConfig { .. }, Ok(_)) => reconfig(entry, zxid, Ok(()), tree),
        // A refusal always applies as its error (the arm above): ZooKeeper's error transaction.
        (PTxn::Refused { .. }, Ok(_)) => return None,
        (PTxn::Write(Request::Multi(ops)), Ok(Response::Multi(results))) => {
            multi(entry, zxid, ops, results, tree)
        }
        (PTxn::Write(req), Ok(resp)) => {
            let (kind, txn) = single(entry, req, resp, tree)?;
            (header(entry, zxid, kind), txn)
        }
    })
}

fn header(entry: &Entry, zxid: i64, kind: i32) -> TxnHeader {
    TxnHeader {
        session_id: entry.session_id,
        cxid: entry.xid,
        zxid,
        time: entry.time_ms,
        kind,
    }
}

fn error(mut h: TxnHeader, err: i32) -> (TxnHeader, Txn) {
    h.kind = op::ERROR;
    (h, Txn::Error { err })
}

/// A write that is not a multi, and succeeded.
fn single(entry: &Entry, req: &Request, resp: &Response, tree: &Tree) -> Option<(i32, Txn)> {
    Some(match (req, resp) {
        (
            Request::Create(_)
            | Request::Create2(_)
            | Request::CreateContainer(_)
            | Request::CreateTtl(_),
            _,
        ) => {
            let path = match resp {
                Response::Create(r) => r.path.clone(),
                Response::Create2(r) => r.path.clone(),
                _ => return None,
            };
            let cversion = parent(&path)
                .and_then(|p| tree.stored_stat(p))
                .map_or(-1, |s| s.cversion);
            create(entry, req, path, cversion)?
        }
        (Request::Delete(r), _) => (
            op::DELETE,
            Txn::Delete {
                path: r.path.clone(),
            },
        ),
        (Request::DeleteContainer(r), _) => (
            op::DELETE_CONTAINER,
            Txn::Delete {
                path: r.path.clone(),
            },
        ),
        (Request::SetData(r), Response::SetData(s)) => (
            op::SET_DATA,
            Txn::SetData {
                path: r.path.clone(),
                data: r.data.clone(),
                version: s.stat.version,
            },
        ),
        (Request::SetAcl(r), Response::SetAcl(s)) => (
            op::SET_ACL,
            Txn::SetAcl {
                path: r.path.clone(),
                acl: Some(fixup_acl(&r.acl, &entry.auth).ok()?.into_owned()),
                version: s.stat.aversion,
            },
        ),
        (Request::Check(r), _) => (
            op::CHECK,
            Txn::Check {
                path: r.path.clone(),
                version: r.version,
            },
        ),
        _ => return None,
    })
}

/// A create's transaction: its type and owner as the tree decided them (`ops/create.rs`: the
/// opcode makes a container, the mode a TTL node or an ephemeral), the ACL fixed up as stored.
fn create(entry: &Entry, req: &Request, path: String, parent_cversion: i32) -> Option<(i32, Txn)> {
    let (opcode, data, acl, flags, ttl) = match req {
        Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => {
            (req.opcode(), &r.data, &r.acl, r.flags, None)
        }
        Request::CreateTtl(r) => (OpCode::CreateTtl, &r.data, &r.acl, r.flags, Some(r.ttl)),
        _ => return None,
    };
    let mode = CreateMode::from_flags(flags)?;
    let acl = Some(fixup_acl(acl, &entry.auth).ok()?.into_owned());
    let data = data.clone();
    Some(if opcode == OpCode::CreateContainer {
        (
            op::CREATE_CONTAINER,
            Txn::CreateContainer {
                path,
                data,
                acl,
                parent_cversion,
            },
        )
    } else if mode.is_ttl() {
        (
            op::CREATE_TTL,
            Txn::CreateTtl {
                path,
                data,
                acl,
                parent_cversion,
                ttl: ttl?,
            },
        )
    } else {
        (
            if opcode == OpCode::Create {
                op::CREATE
            } else {
                op::CREATE2
            },
            Txn::Create {
                path,
                data,
                acl,
                ephemeral: mode.is_ephemeral(),
                parent_cversion,
            },
        )
    })
}

/// A multi: each op's transaction, or, if one failed, an error transaction for each with the
/// code its result carries (ZooKeeper logs a failed multi so, and it changes nothing).
fn multi(
    entry: &Entry,
    zxid: i64,
    ops: &[Request],
    results: &[MultiResult],
    tree: &Tree,
) -> (TxnHeader, Txn) {
    let h = header(entry, zxid, op::MULTI);
    if results.iter().any(|r| matches!(r, MultiResult::Error(_))) || results.len() != ops.len() {
        let subs = results
            .iter()
            .map(|r| match r {
                MultiResult::Error(code) => (op::ERROR, Txn::Error { err: *code }),
                _ => (op::ERROR, Txn::Error { err: 0 }),
            })
            .collect();
        return (h, Txn::Multi(subs));
    }
    // The ops as the multi ran them (a create's mode may change its opcode).
    let ops: Vec<_> = ops
        .iter()
        .map(|o| znode_tree::as_zookeeper_reads_it(o).map(|c| c.into_owned()))
        .collect::<Result<_, _>>()
        .unwrap_or_default();
    let created: Vec<Option<String>> = results
        .iter()
        .map(|r| match r {
            MultiResult::Create { path } | MultiResult::Create2 { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect();
    // Each create's parent cversion, walking back from the parents' cversions as the multi
    // left them: only creates raise a cversion, so the k-th from last create under a parent
    // saw the final count minus k. A parent created in the multi itself had none before
    // it: creates under an earlier node of that path get -1 (ZooKeeper's "the parent's
    // count plus one", exact on a replay from a consistent snapshot).
    let mut cversions = vec![-1; ops.len()];
    let mut current: HashMap<&str, Option<i32>> = HashMap::new();
    for i in (0..ops.len()).rev() {
        if let Some(path) = &created[i] {
            if let Some(p) = parent(path) {
                let c = current
                    .entry(p)
                    .or_insert_with(|| tree.stored_stat(p).map(|s| s.cversion));
                if let Some(v) = c {
                    cversions[i] = *v;
                    *v -= 1;
                }
            }
            current.insert(path.as_str(), None);
        }
    }
    let mut subs = Vec::with_capacity(ops.len());
    for (i, (req, res)) in ops.iter().zip(results).enumerate() {
        let sub = match (req, res) {
            (_, MultiResult::Create { path } | MultiResult::Create2 { path, .. }) => {
                create(entry, req, path.clone(), cversions[i])
            }
            (Request::Delete(r), _) => Some((
                op::DELETE,
                Txn::Delete {
                    path: r.path.clone(),
                },
            )),
            (Request::SetData(r), MultiResult::SetData { stat }) => Some((
                op::SET_DATA,
                Txn::SetData {
                    path: r.path.clone(),
                    data: r.data.clone(),
                    version: stat.version,
                },
            )),
            (Request::Check(r), _) => Some((
                op::CHECK,
                Txn::Check {
                    path: r.path.clone(),
                    version: r.version,
                },
            )),
            _ => None,
        };
        subs.push(sub.unwrap_or((op::ERROR, Txn::Error { err: i32::MIN })));
    }
    (h, Txn::Multi(subs))
}

/// The parent of an absolute path (`/` for a child of the root).
fn parent(path: &str) -> Option<&str> {
    let i = path.rfind('/')?;
    (path.len() > 1).then(|| if i == 0 { "/" } else { &path[..i] })
}
