//! `paddock backup --follow`'s source on a member: the committed transactions as they apply,
//! in ZooKeeper's log record format (`zk_txn.rs`), kept in a bounded ring that the AdminServer's
//! `follow` streams read (`http/admin_follow.rs`).
//!
//! The core never waits for a follower: it pushes each applied position's record into the
//! ring under a mutex held for the push alone, and evicts the oldest records past
//! `RING_BYTES`. A follower's task copies what is past its cursor and writes it out on its own
//! time; one that falls behind the ring's start (or reaches a restore, or a snapshot this
//! member installed from the leader) asks the core for a new snapshot and continues from it.
//! Nothing is kept, or encoded, until the first follower asks: a member nobody follows pays one
//! atomic load per applied entry.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use zk_format::txnlog::{Txn, TxnHeader};

/// The most record bytes the ring keeps: how far behind a follower may fall (or how long it
/// may be away) and still continue without a new snapshot.
pub const RING_BYTES: usize = 16 << 20;
/// The most records it keeps (each costs its bookkeeping besides its bytes).
pub const RING_RECORDS: usize = 200_000;

/// One applied log position.
#[derive(Debug, Clone)]
pub enum Item {
    /// A transaction: its zxid and record bytes (`TxnHeader`, body).
    Txn { zxid: i64, bytes: Arc<[u8]> },
    /// The state was replaced (a restore, or a snapshot installed from the leader) and is at
    /// `zxid`: no transaction leads there; a follower takes a new snapshot.
    Reset { zxid: i64 },
}

impl Item {
    pub fn zxid(&self) -> i64 {
        match self {
            Item::Txn { zxid, .. } | Item::Reset { zxid } => *zxid,
        }
    }
}

#[derive(Debug, Default)]
struct Ring {
    /// A follower whose cursor is at or past `base` finds every later record here.
    base: i64,
    /// The zxid of the last position pushed.
    last: i64,
    /// The last transaction's time (a raft no-op has none of its own).
    last_time: i64,
    items: VecDeque<Item>,
    bytes: usize,
}

/// What a follower's stream reads next.
#[derive(Debug)]
pub enum Next {
    /// Records past the cursor (in order), the last of which is the new cursor.
    Items(Vec<Item>),
    /// Nothing yet past the cursor; the member is at this zxid.
    Idle(i64),
    /// The cursor is before the ring's start: a new snapshot is needed.
    Behind,
}

/// The ring, shared by the core (which pushes) and the follow streams (which read).
#[derive(Debug)]
pub struct FollowLog {
    on: AtomicBool,
    ring: Mutex<Ring>,
    tick: watch::Sender<i64>,
}

impl Default for FollowLog {
    fn default() -> Self {
        FollowLog {
            on: AtomicBool::new(false),
            ring: Mutex::new(Ring::default()),
            tick: watch::channel(0).0,
        }
    }
}

impl FollowLog {
    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a follower ever asked (records are kept from then on).
    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Starts keeping records, the state being at `zxid` (the core's, on the core task).
    pub fn switch_on(&self, zxid: i64) {
        if !self.is_on() {
            let mut r = self.ring();
            r.base = zxid;
            r.last = zxid;
            self.on.store(true, Ordering::Relaxed);
        }
    }

    /// Whether a follower at `cursor` continues from the ring: no record it lacks was evicted,
    /// and no reset lies ahead of it.
    pub fn continues_from(&self, cursor: i64) -> bool {
        let r = self.ring();
        self.is_on()
            && cursor >= r.base
            && !r
                .items
                .iter()
                .any(|i| matches!(i, Item::Reset { zxid } if *zxid > cursor))
    }

    /// A transaction applied at `h.zxid`.
    pub fn push_txn(&self, h: &TxnHeader, txn: &Txn) {
        if !self.is_on() {
            return;
        }
        let bytes: Arc<[u8]> = crate::zk_txn::encode(h, txn).into();
        let mut r = self.ring();
        r.last_time = r.last_time.max(h.time);
        self.push(
            r,
            Item::Txn {
                zxid: h.zxid,
                bytes,
            },
        );
    }

    /// A raft no-op at `zxid`: an error transaction with code 0 (`zk_txn::noop`).
    pub fn push_noop(&self, zxid: i64) {
        if !self.is_on() {
            return;
        }
        let time = self.ring().last_time;
        let (h, t) = crate::zk_txn::noop(zxid, time);
        self.push_txn(&h, &t);
    }

    /// The state was replaced and is now at `zxid`.
    pub fn push_reset(&self, zxid: i64) {
        if !self.is_on() {
            return;
        }
        let r = self.ring();
        self.push(r, Item::Reset { zxid });
    }

    fn push(&self, mut r: std::sync::MutexGuard<'_, Ring>, item: Item) {
        let zxid = item.zxid();
        if let Item::Txn { bytes, .. } = &item {
            r.bytes += bytes.len();
        }
        r.items.push_back(item);
        r.last = zxid;
        while r.bytes > RING_BYTES || r.items.len() > RING_RECORDS {
            let Some(old) = r.items.pop_front() else {
                break;
            };
            if let Item::Txn { bytes, .. } = &old {
                r.bytes -= bytes.len();
            }
            r.base = old.zxid();
        }
        drop(r);
        self.tick.send_replace(zxid);
    }

    /// What lies past `cursor`: at most `max_bytes` of records (at least one), ending at the
    /// first reset.
    pub fn next(&self, cursor: i64, max_bytes: usize) -> Next {
        let r = self.ring();
        if cursor < r.base {
            return Next::Behind;
        }
        let from = r.items.partition_point(|i| i.zxid() <= cursor);
        if from == r.items.len() {
            return Next::Idle(r.last);
        }
        let mut out = Vec::new();
        let mut size = 0;
        for item in r.items.range(from..) {
            if let Item::Txn { bytes, .. } = item {
                if size > 0 && size + bytes.len() > max_bytes {
                    break;
                }
                size += bytes.len();
            }
            let reset = matches!(item, Item::Reset { .. });
            out.push(item.clone());
            if reset {
                break;
            }
        }
        Next::Items(out)
    }

    /// Wakes when a position is pushed.
    pub fn subscribe(&self) -> watch::Receiver<i64> {
        self.tick.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(zxid: i64) -> TxnHeader {
        TxnHeader {
            session_id: 1,
            cxid: 1,
            zxid,
            time: 7,
            kind: zk_format::txnlog::op::DELETE,
        }
    }

    #[test]
    fn off_until_asked_then_continues_evicts_and_resets() {
        let f = FollowLog::default();
        let del = Txn::Delete { path: "/a".into() };
        f.push_txn(&h(5), &del);
        assert!(matches!(f.next(4, 1 << 20), Next::Behind | Next::Idle(_)));
        assert!(!f.continues_from(4));
        f.switch_on(5);
        assert!(f.continues_from(5));
        assert!(!f.continues_from(4));
        f.push_txn(&h(6), &del);
        f.push_noop(7);
        let Next::Items(items) = f.next(5, 1 << 20) else {
            panic!("records expected")
        };
        assert_eq!(items.iter().map(Item::zxid).collect::<Vec<_>>(), [6, 7]);
        assert!(matches!(f.next(7, 1 << 20), Next::Idle(7)));
        f.push_reset(0x1_0000_0000);
        f.push_txn(&h(0x1_0000_0001), &del);
        // A follower at 6 gets 7 and the reset, and no further until it took a snapshot.
        let Next::Items(items) = f.next(6, 1 << 20) else {
            panic!("records expected")
        };
        assert_eq!(
            items.iter().map(Item::zxid).collect::<Vec<_>>(),
            [7, 0x1_0000_0000]
        );
        assert!(!f.continues_from(6));
        assert!(f.continues_from(0x1_0000_0000));
        // Eviction: past RING_RECORDS the oldest go, and a cursor before them is behind.
        for z in 0..RING_RECORDS as i64 {
            f.push_txn(&h(0x1_0000_0002 + z), &del);
        }
        assert!(matches!(f.next(6, 1 << 20), Next::Behind));
        assert!(!f.continues_from(0x1_0000_0000));
    }
}

/// The core's answer to a follower that connects (`CoreMsg::Follow`).
#[derive(Debug)]
pub enum Start {
    /// `auth` lacks a permission on `/`.
    Denied,
    /// The follower's cursor continues from the ring.
    Continue(Arc<FollowLog>),
    /// A new snapshot first: the state as of now, the ring continuing right after it.
    Snapshot(Arc<FollowLog>, znode_tree::SnapshotView),
}

impl super::Core {
    /// A follower connects at `after` (`None`: it holds nothing). The ring starts here if no one
    /// followed before; the view is taken on the core task, between two applies, so the
    /// ring's next record is the first the snapshot lacks.
    pub(super) fn follow_start(&mut self, auth: &[wire::Id], after: Option<i64>) -> Start {
        if !self.holds_all_on_root(auth) {
            return Start::Denied;
        }
        self.follow.switch_on(
            self.tree
                .zxid_at(self.applied.index)
                .max(self.tree.last_zxid()),
        );
        match after {
            Some(c) if self.follow.continues_from(c) => Start::Continue(self.follow.clone()),
            _ => Start::Snapshot(self.follow.clone(), self.tree.snapshot_view()),
        }
    }
}
