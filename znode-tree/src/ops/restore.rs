//! The AdminServer's `restore` as every member applies it (`Txn::Restore`): the whole state
//! becomes the entry's snapshot, at a zxid no client has seen and none of the snapshot's stats
//! reach, so no client's zxid ever goes backwards.
//!
//! - **zxid**: `J = ((max(entry's zxid, last zxid, snapshot's largest zxid) >> 32) + 1) << 32`,
//!   the first zxid of the next epoch, as a new ZooKeeper leader would continue. The log's
//!   positions go on one by one, so the tree keeps what they add to become zxids
//!   (`zxid_offset`, replicated with the tree and in its snapshots); the next entry gets
//!   `J + 1`.
//! - **membership**: `/zookeeper/config` (data, stat, ACL) stays the ensemble's: a snapshot's
//!   own, from another ensemble or from ZooKeeper, must never reconfigure this one.
//! - **sessions**: the snapshot's. One that is also live here keeps the password its client
//!   holds, so that client resumes it; the others keep the snapshot's (ZooKeeper's password for
//!   a ZooKeeper snapshot). Sessions only live here are gone, and their clients' reconnects are
//!   told their session expired.
//! - `restored_zxid` records `J`: a client reconnecting with a `lastZxidSeen` below it had its
//!   watches set on another tree, and they fire as if everything changed.
//!
//! Apply is deterministic: the bytes, the tree before it and the entry's zxid decide all of it.
//! Bytes that do not restore (never proposed by a member, which checks them first) fail the
//! entry on every member alike and leave the tree as it was.

use wire::ErrorCode;

use crate::tree::{Tree, WriteCtx};

const CONFIG: &str = "/zookeeper/config";

/// The first zxid of the epoch after the one `zxid` is in.
pub fn next_epoch(zxid: i64) -> i64 {
    ((zxid.max(0) >> 32) + 1) << 32
}

impl Tree {
    /// Replaces the state with `snapshot`'s; `Ok` carries the zxid the tree is now at.
    pub(crate) fn restore_from(
        &mut self,
        cx: &WriteCtx,
        max_zxid: i64,
        snapshot: &[u8],
    ) -> Result<i64, ErrorCode> {
        let mut restored = Tree::restore(snapshot, self.config.clone())
            .map_err(|_| ErrorCode::MarshallingError)?;
        let Some(config) = self.node(CONFIG) else {
            return Err(ErrorCode::SystemError);
        };
        if restored.node(CONFIG).is_none() {
            return Err(ErrorCode::MarshallingError);
        }
        let (stat, data, acl) = (config.stat, config.data.clone(), self.acl_of(config));
        restored.update(CONFIG, |n, acls| {
            n.stat = stat;
            n.data = data;
            let old = std::mem::replace(&mut n.acl, acls.intern(&acl));
            acls.release(old);
        });
        for s in restored.sessions.values_mut() {
            if let Some(live) = self.sessions.get(&s.id) {
                s.password = live.password;
            }
        }
        let j = next_epoch(cx.zxid.max(self.last_zxid).max(max_zxid));
        restored.zxid_offset = self.zxid_offset.wrapping_add(j - cx.zxid);
        restored.restored_zxid = j;
        restored.last_zxid = j;
        restored.undo = None;
        *self = restored;
        Ok(j)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Entry, TreeConfig, Txn};
    use wire::Response;

    fn entry(session_id: i64, txn: Txn) -> Entry {
        Entry {
            session_id,
            xid: 0,
            time_ms: 1,
            auth: vec![],
            via: None,
            txn,
        }
    }

    fn session(id: i64, password: u8) -> Entry {
        entry(
            id,
            Txn::CreateSession {
                timeout_ms: 4000,
                password: [password; 16],
            },
        )
    }

    fn create(path: &str) -> Entry {
        entry(
            0,
            Txn::Write(wire::Request::Create(wire::ops::create::CreateRequest {
                path: path.into(),
                data: Some(b"v".to_vec()),
                acl: wire::Acl::open_unsafe(),
                flags: 0,
            })),
        )
    }

    fn config_of(t: &Tree) -> (Option<Box<[u8]>>, crate::StoredStat) {
        let n = t.node(CONFIG).unwrap();
        (n.data.clone(), n.stat)
    }

    #[test]
    fn restore_jumps_to_a_new_epoch_keeps_the_membership_and_live_passwords() {
        let cfg = TreeConfig::default();
        // The snapshot: its own membership, sessions 7 and 9, /old; stats in epoch 5.
        let z5 = 5i64 << 32;
        let mut snap = Tree::new(cfg.clone());
        let members = "server.9=x:1:2\n".into();
        snap.apply(z5 + 1, &entry(0, Txn::SetConfig { members }));
        snap.apply(z5 + 2, &session(7, 1));
        snap.apply(z5 + 3, &session(9, 3));
        snap.apply(z5 + 4, &create("/old"));
        let bytes = snap.snapshot();

        // The live tree at zxid 40: its membership, session 7 with another password, /new.
        let mut t = Tree::new(cfg.clone());
        let members = "server.1=a:1:2\n".into();
        t.apply(1, &entry(0, Txn::SetConfig { members }));
        t.apply(2, &session(7, 2));
        t.apply(3, &create("/new"));
        let config_before = config_of(&t);

        let restore = Txn::Restore {
            max_zxid: z5 + 4,
            snapshot: bytes.clone(),
        };
        let applied = t.apply(40, &entry(0, restore));
        assert_eq!(applied.reply, Ok(Response::Empty));
        assert_eq!(t.last_zxid(), 6 << 32);
        assert_eq!(t.restored_zxid(), 6 << 32);
        assert_eq!(t.zxid_at(41), (6 << 32) + 1);
        assert!(t.node("/old").is_some() && t.node("/new").is_none());
        assert_eq!(config_of(&t), config_before);
        assert_eq!(t.session(7).map(|s| s.password), Some([2; 16]));
        assert_eq!(t.session(9).map(|s| s.password), Some([3; 16]));

        // The restored tree's snapshot carries the offset (version 3) and restores equal.
        let again = Tree::restore(&t.snapshot(), cfg.clone()).unwrap();
        assert_eq!(again.zxid_at(41), (6 << 32) + 1);
        assert_eq!(again.restored_zxid(), 6 << 32);
        assert_eq!(again.digest(), t.digest());
        assert_eq!(again.snapshot(), t.snapshot());
        // A tree never restored still writes version 2.
        assert_eq!(snap.snapshot()[4], 2);
        assert_eq!(t.snapshot()[4], 3);

        // Again, the tree now ahead of the snapshot: the epoch after the tree's own zxid, and
        // the offsets add up.
        let z = t.zxid_at(50);
        let restore = Txn::Restore {
            max_zxid: z5 + 4,
            snapshot: bytes,
        };
        t.apply(z, &entry(0, restore));
        assert_eq!(t.last_zxid(), 7 << 32);
        assert_eq!(t.zxid_at(51), (7 << 32) + 1);
    }

    #[test]
    fn bytes_that_do_not_restore_fail_the_entry_and_change_nothing() {
        let mut t = Tree::new(TreeConfig::default());
        t.apply(1, &create("/keep"));
        let restore = Txn::Restore {
            max_zxid: 0,
            snapshot: b"PDKT junk".to_vec(),
        };
        let applied = t.apply(2, &entry(0, restore));
        assert_eq!(applied.reply, Err(ErrorCode::MarshallingError));
        assert_eq!(t.zxid_at(3), 3);
        assert!(t.node("/keep").is_some());
        assert_eq!(t.last_zxid(), 2);
    }
}
