//! check (a version check on a node), and the version rule every versioned write shares.
//!
//! check's checks, in the order of ZooKeeper's `PrepRequestProcessor.pRequest2Txn`, case
//! `OpCode.check`:
//! 1. the path is valid (`PathUtils.validatePath`), else BadArguments;
//! 2. the node exists, else NoNode, and grants READ, else NoAuth;
//! 3. the version is -1 or the node's (`checkAndIncVersion`), else BadVersion.
//!
//! It changes nothing and fires no watch. It is accepted only inside a multi, where a failure
//! fails the whole multi; standing alone it is Unimplemented (`Tree::write`).

use wire::{perms, ErrorCode};

use crate::path::validate_path;
use crate::tree::{Tree, WriteCtx};

/// ZooKeeper's `checkAndIncVersion`, without the increment: -1 matches any version.
pub(super) fn check_version(expected: i32, actual: i32) -> Result<(), ErrorCode> {
    if expected == -1 || expected == actual {
        Ok(())
    } else {
        Err(ErrorCode::BadVersion)
    }
}

impl Tree {
    pub(crate) fn check(&self, cx: &WriteCtx, p: &str, version: i32) -> Result<(), ErrorCode> {
        if !validate_path(p) {
            return Err(ErrorCode::BadArguments);
        }
        let n = self.node(p).ok_or(ErrorCode::NoNode)?;
        self.require(n, perms::READ, cx.auth)?;
        check_version(version, n.stat.version)
    }
}
