//! The AdminServer's `snapshot` (`http/admin_snapshot.rs`): the core's part is the permission
//! check against `/` and an O(1) view of the tree (`Tree::snapshot_view`); the encoding to
//! ZooKeeper's format runs on another thread, as the raft snapshots' does.

use wire::{perms, Id, Request, Response};
use znode_tree::{acl, ReadCtx, SnapshotView};

use super::Core;

impl Core {
    /// A view of the state if `auth` holds every permission on `/`, each bit checked alone as
    /// ZooKeeper 3.9.4+ does (`Commands.handleAuthorization`).
    pub(super) fn zk_snapshot_view(&self, auth: &[Id]) -> Option<SnapshotView> {
        let ctx = ReadCtx {
            session_id: 0,
            auth,
        };
        let req = Request::GetAcl(wire::ops::get_acl::GetAclRequest { path: "/".into() });
        let list = match self.tree.read(&ctx, &req) {
            Ok(Response::GetAcl(r)) => r.acl,
            _ => return None,
        };
        let cfg = self.tree.config();
        let all = [
            perms::READ,
            perms::WRITE,
            perms::CREATE,
            perms::DELETE,
            perms::ADMIN,
        ];
        all.iter()
            .all(|&bit| acl::allowed(cfg, &list, bit, auth))
            .then(|| self.tree.snapshot_view())
    }
}
