//! setACL.
//!
//! The checks, in the order of ZooKeeper's `PrepRequestProcessor.pRequest2Txn`, case
//! `OpCode.setACL`, each failing with the error given and changing nothing:
//! 1. the path is valid (`PathUtils.validatePath`), else BadArguments;
//! 2. the new ACL is valid once fixed up (`fixupACL`: `auth` ids expanded to the caller's), else
//!    InvalidACL;
//! 3. the node exists, else NoNode, and grants ADMIN, else NoAuth;
//! 4. the version is -1 or the node's aversion (`checkAndIncVersion`), else BadVersion.
//!
//! The change, as `DataTree.setACL` makes it: the ACL replaced and aversion up by one; nothing
//! else in the stat moves. No watch fires (ZooKeeper has no event for an ACL change).

use wire::{perms, Acl, ErrorCode, Stat};

use super::check::check_version;
use crate::acl::fixup_acl;
use crate::path::validate_path;
use crate::tree::{Tree, WriteCtx};

impl Tree {
    pub(crate) fn set_acl(
        &mut self,
        cx: &WriteCtx,
        p: &str,
        acl: &[Acl],
        version: i32,
    ) -> Result<Stat, ErrorCode> {
        if !validate_path(p) {
            return Err(ErrorCode::BadArguments);
        }
        let acl = fixup_acl(acl, cx.auth)?;
        let n = self.node(p).ok_or(ErrorCode::NoNode)?;
        self.require(n, perms::ADMIN, cx.auth)?;
        check_version(version, n.stat.aversion)?;
        Ok(self.update(p, |n, acls| {
            let old = std::mem::replace(&mut n.acl, acls.intern(&acl));
            acls.release(old);
            n.stat.aversion = n.stat.aversion.wrapping_add(1);
            n.wire_stat()
        }))
    }
}
