//! delete, deleteContainer (the removal of an expired container or TTL node, proposed by the
//! leader), and the scan that finds those nodes.
//!
//! delete's checks, in the order of ZooKeeper's `PrepRequestProcessor.pRequest2Txn`, case
//! `OpCode.delete`, each failing with the error given and changing nothing:
//! 1. the path has a `/`, no NUL and is not one of the special paths (`/`, `/zookeeper`,
//!    `/zookeeper/quota`, `/zookeeper/config`: `ZKDatabase.isSpecialPath`), else BadArguments
//!    (`getParentPathAndValidate`);
//! 2. the parent exists, else NoNode, and grants DELETE, else NoAuth;
//! 3. the node exists, else NoNode;
//! 4. the version is -1 or the node's (`checkAndIncVersion`), else BadVersion;
//! 5. the node has no children, else NotEmpty.
//!
//! deleteContainer's, case `OpCode.deleteContainer` (no ACL and no version check): the path as
//! in 1; the node exists, else NoNode; it has no children, else NotEmpty (a child appeared
//! since the leader looked); it is not a session's ephemeral, else BadVersion (ZooKeeper's
//! guard against deleting one this way); the parent exists, else NoNode.
//!
//! The change, as `DataTree.deleteNode` makes it: the node unlinked, the parent's pzxid raised
//! to this zxid (its cversion stays), the quota usage above it uncounted (`updateQuotaStat`)
//! and a `zookeeper_limits` node dropped from the quota index. Watches: NodeDeleted on the
//! path, NodeChildrenChanged on the parent. closeSession removes its ephemerals the same way
//! (`unlink`).
//!
//! `expired_nodes` is ZooKeeper's `ContainerManager.getCandidates`: the leader proposes a
//! deleteContainer for each node it returns.

use wire::{perms, ErrorCode};

use super::check::check_version;
use crate::node::Kind;
use crate::path;
use crate::tree::{Change, Tree, WriteCtx};

/// `DataTree.isSpecialPath`: the paths no delete may name.
const SPECIAL_PATHS: [&str; 4] = ["/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"];

/// The parent and name of a path that delete-like ops accept: has a `/`, no NUL, not special.
fn deletable_parent(p: &str) -> Result<(&str, &str), ErrorCode> {
    if p.contains('\0') || SPECIAL_PATHS.contains(&p) {
        return Err(ErrorCode::BadArguments);
    }
    path::split(p).ok_or(ErrorCode::BadArguments)
}

impl Tree {
    pub(crate) fn delete(
        &mut self,
        cx: &WriteCtx,
        p: &str,
        version: i32,
        changes: &mut Vec<Change>,
    ) -> Result<(), ErrorCode> {
        let (parent, name) = deletable_parent(p)?;
        let pnode = self.node(parent).ok_or(ErrorCode::NoNode)?;
        self.require(pnode, perms::DELETE, cx.auth)?;
        // The node is found among its parent's children, not by a second walk from the root;
        // a path that is not canonical in its last step (`//a`) names no node, as before.
        let n = path::is_child_path(p, parent)
            .then(|| pnode.children.get(name.as_bytes()))
            .flatten()
            .ok_or(ErrorCode::NoNode)?;
        check_version(version, n.stat.version)?;
        if n.num_children() != 0 {
            return Err(ErrorCode::NotEmpty);
        }
        self.unlink(cx.zxid, p, changes);
        Ok(())
    }

    /// Removes a childless node and reports it (shared by delete, session close and expiry).
    pub(crate) fn unlink(&mut self, zxid: i64, p: &str, changes: &mut Vec<Change>) {
        let (parent, _) = path::split(p).expect("checked by caller");
        let (node, acl, parent_acl) = self.remove_child(p, |ps| ps.pzxid = ps.pzxid.max(zxid));
        self.update_quota_stat(p, -(node.data_len() as i64), -1);
        let parent_acl = self.acls.shared(parent_acl).clone();
        changes.push(Change::Deleted {
            path: p.to_owned(),
            acl,
        });
        changes.push(Change::ChildrenChanged {
            path: parent.to_owned(),
            acl: parent_acl,
        });
    }

    /// ZooKeeper's deleteContainer: no ACL check; a child that appeared since the leader
    /// looked gives NotEmpty, and normal ephemerals are refused (BadVersion, ZK's guard).
    pub(crate) fn delete_expired(
        &mut self,
        cx: &WriteCtx,
        p: &str,
        changes: &mut Vec<Change>,
    ) -> Result<(), ErrorCode> {
        let (parent, _) = deletable_parent(p)?;
        let n = self.node(p).ok_or(ErrorCode::NoNode)?;
        if n.num_children() != 0 {
            return Err(ErrorCode::NotEmpty);
        }
        if matches!(n.kind(), Kind::Ephemeral(_)) {
            return Err(ErrorCode::BadVersion);
        }
        self.node(parent).ok_or(ErrorCode::NoNode)?;
        self.unlink(cx.zxid, p, changes);
        Ok(())
    }

    /// Containers that have had children and have none now, and TTL nodes without children
    /// whose `now - mtime` exceeds their ttl (ZooKeeper's `ContainerManager`), sorted.
    pub fn expired_nodes(&self, now_ms: i64) -> Vec<String> {
        self.expired_nodes_with(now_ms, 0)
    }

    /// As `expired_nodes`, with ZooKeeper's `znode.container.maxNeverUsedIntervalMs`: a container
    /// that never had a child is a candidate too once `now - mtime` exceeds `never_used_ms`
    /// (0: never, ZooKeeper 3.9's default).
    pub fn expired_nodes_with(&self, now_ms: i64, never_used_ms: i64) -> Vec<String> {
        self.expirable
            .iter()
            .filter(|p| {
                let Some(n) = self.node(p) else {
                    return false;
                };
                n.num_children() == 0
                    && match n.kind() {
                        Kind::Container => {
                            n.stat.cversion > 0
                                || (never_used_ms != 0
                                    && now_ms.saturating_sub(n.stat.mtime) > never_used_ms)
                        }
                        Kind::Ttl(ttl) => ttl != 0 && now_ms.saturating_sub(n.stat.mtime) > ttl,
                        _ => false,
                    }
            })
            .map(|p| p.to_string())
            .collect()
    }
}
