//! The AdminServer's `snapshot` (`http/admin_snapshot.rs`) and `restore`
//! (`http/admin_restore.rs`). For `snapshot` the core's part is the permission check against `/`
//! and an O(1) view of the tree (`Tree::snapshot_view`); the encoding to ZooKeeper's format runs
//! on another thread, as the raft snapshots' does. For `restore` it is the check again and the
//! proposal of `Txn::Restore`, whose caller waits until this member applied it
//! (`apply.rs`, `restore_applied`).

use tokio::sync::oneshot;
use tracing::{info, warn};
use wire::{perms, Id, Request, Response};
use znode_tree::{acl, ReadCtx, SnapshotView, Txn};

use super::submit::stamp;
use super::Core;
use crate::session::SessionId;

impl Core {
    /// A view of the state if `auth` holds every permission on `/`, each bit checked alone as
    /// ZooKeeper 3.9.4+ does (`Commands.handleAuthorization`).
    pub(super) fn zk_snapshot_view(&self, auth: &[Id]) -> Option<SnapshotView> {
        self.holds_all_on_root(auth)
            .then(|| self.tree.snapshot_view())
    }

    /// Proposes the restore (on the leader; forwarded to it from a follower). Its `xid`, a
    /// random number, is how `restore_applied` finds the caller on this member.
    pub(super) fn propose_restore(
        &mut self,
        auth: &[Id],
        max_zxid: i64,
        snapshot: Vec<u8>,
        reply: oneshot::Sender<Result<i64, String>>,
    ) {
        if !self.holds_all_on_root(auth) {
            let _ = reply.send(Err("Not authorized".into()));
            return;
        }
        let xid = loop {
            let x: i32 = rand::random();
            if x != 0 && !self.restores.iter().any(|(y, _)| *y == x) {
                break x;
            }
        };
        let entry = stamp(
            SessionId(0),
            xid,
            self.wall.now_ms(),
            auth.to_vec(),
            Txn::Restore { max_zxid, snapshot },
        );
        match self.submit(&entry) {
            Ok(_) => {
                info!(
                    xid,
                    max_zxid = format_args!("{max_zxid:#x}"),
                    "restore proposed"
                );
                self.restores.retain(|(_, r)| !r.is_closed());
                self.restores.push((xid, reply));
            }
            Err(()) => {
                warn!("restore not proposed: no leader, or the link to it is down");
                let _ = reply.send(Err(
                    "no leader to propose the restore to (the ensemble has no quorum, or this \
                     member's link to the leader is down): nothing was restored; try again"
                        .into(),
                ));
            }
        }
    }

    /// Whether `auth` holds every permission on `/`, each bit checked alone.
    pub(super) fn holds_all_on_root(&self, auth: &[Id]) -> bool {
        let ctx = ReadCtx {
            session_id: 0,
            auth,
        };
        let req = Request::GetAcl(wire::ops::get_acl::GetAclRequest { path: "/".into() });
        let list = match self.tree.read(&ctx, &req) {
            Ok(Response::GetAcl(r)) => r.acl,
            _ => return false,
        };
        let cfg = self.tree.config();
        let all = [
            perms::READ,
            perms::WRITE,
            perms::CREATE,
            perms::DELETE,
            perms::ADMIN,
        ];
        all.iter().all(|&bit| acl::allowed(cfg, &list, bit, auth))
    }
}
