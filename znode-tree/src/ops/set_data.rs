//! setData, and the leader's write of the membership into `/zookeeper/config`.
//!
//! setData's checks, in the order of ZooKeeper's `PrepRequestProcessor.pRequest2Txn`, case
//! `OpCode.setData`, each failing with the error given and changing nothing:
//! 1. the path is valid (`PathUtils.validatePath`), else BadArguments;
//! 2. the node exists, else NoNode, and grants WRITE, else NoAuth;
//! 3. a hard quota above the path leaves room for the data's growth
//!    (`ZooKeeperServer.checkQuota`, only with `zookeeper.enforceQuota`), else QuotaExceeded;
//! 4. the version is -1 or the node's (`checkAndIncVersion`), else BadVersion.
//!
//! The change, as `DataTree.setData` makes it: the data replaced, mzxid = this zxid, mtime =
//! the entry's time, version up by one, and the quota usage above it adjusted by the change in
//! size (`updateQuotaStat`). Watches: NodeDataChanged on the path.
//!
//! With no quota anywhere above the path (the common case) there is nothing to check or count
//! for step 3, so the checks and the change are made in one walk down the path
//! (`Tree::update_if`).

use wire::{perms, ErrorCode, Stat};

use super::check::check_version;
use crate::acl;
use crate::path::validate_path;
use crate::tree::{Change, Tree, WriteCtx};

impl Tree {
    pub(crate) fn set_data(
        &mut self,
        cx: &WriteCtx,
        p: &str,
        data: &Option<Vec<u8>>,
        version: i32,
        changes: &mut Vec<Change>,
    ) -> Result<Stat, ErrorCode> {
        if !validate_path(p) {
            return Err(ErrorCode::BadArguments);
        }
        if self.quota_prefix(p).is_none() {
            // No quota to check or count: the checks and the change in one walk.
            let (stat, acl) = self.update_if(
                p,
                |n, acls, config| {
                    if !acl::allowed(config, acls.get(n.acl), perms::WRITE, cx.auth) {
                        return Err(ErrorCode::NoAuth);
                    }
                    check_version(version, n.stat.version)
                },
                |n, acls| {
                    n.data = data.as_deref().map(Box::from);
                    n.stat.mzxid = cx.zxid;
                    n.stat.mtime = cx.time;
                    n.stat.version = n.stat.version.wrapping_add(1);
                    (n.wire_stat(), acls.shared(n.acl).clone())
                },
            )?;
            changes.push(Change::DataChanged {
                path: p.to_owned(),
                acl,
            });
            return Ok(stat);
        }
        let n = self.node(p).ok_or(ErrorCode::NoNode)?;
        self.require(n, perms::WRITE, cx.auth)?;
        let diff = data.as_ref().map_or(0, |d| d.len()) as i64 - n.data_len() as i64;
        self.check_quota(p, diff, 0)?;
        check_version(version, n.stat.version)?;
        let (stat, acl) = self.update(p, |n, acls| {
            n.data = data.as_deref().map(Box::from);
            n.stat.mzxid = cx.zxid;
            n.stat.mtime = cx.time;
            n.stat.version = n.stat.version.wrapping_add(1);
            (n.wire_stat(), acls.shared(n.acl).clone())
        });
        self.update_quota_stat(p, diff, 0);
        changes.push(Change::DataChanged {
            path: p.to_owned(),
            acl,
        });
        Ok(stat)
    }

    /// `/zookeeper/config` gets the membership and its version, without ACL or quota checks (the
    /// node is the server's own, READ-only for clients), as ZooKeeper's reconfig apply does
    /// (`DataTree.processTxn`, case `OpCode.reconfig`, is a setData of that node).
    pub(crate) fn set_config(&mut self, cx: &WriteCtx, members: &str, changes: &mut Vec<Change>) {
        const CONFIG: &str = "/zookeeper/config";
        let data = format!("{members}version={:x}", cx.zxid).into_bytes();
        self.update(CONFIG, |n, _| {
            n.data = Some(data.into_boxed_slice());
            n.stat.mzxid = cx.zxid;
            n.stat.mtime = cx.time;
            n.stat.version = n.stat.version.wrapping_add(1);
            n.wire_stat()
        });
        changes.push(Change::DataChanged {
            path: CONFIG.to_owned(),
            acl: self.acl_of(self.existing(CONFIG)),
        });
    }
}
