//! createSession and closeSession as the replicated state sees them, and the ephemerals a
//! session owns. Liveness (expiry deadlines, touches) is the server's and is not replicated;
//! an expiry reaches the tree as a closeSession.
//!
//! createSession has no checks: the session, with its negotiated timeout and password, joins
//! the state (ZooKeeper's `PrepRequestProcessor.pRequest2Txn`, case `OpCode.createSession`,
//! then `ZooKeeperServer.processTxnForSessionEvents`, which commits it to the session tracker).
//!
//! closeSession: a session the state does not hold (closed already, or never created) is
//! SessionExpired and changes nothing. Otherwise the session goes and so do its ephemerals, as
//! ZooKeeper's case `OpCode.closeSession` lists them (`ZKDatabase.getEphemerals`) and
//! `DataTree.killSession` deletes them, each as a delete does it (`DataTree.deleteNode`:
//! NodeDeleted and the parent's NodeChildrenChanged). They go in sorted path order, so that
//! every member fires the same events in the same order (ZooKeeper's order is a hash set's).

use wire::{ErrorCode, Response};

use crate::session::Session;
use crate::tree::{Change, Tree, WriteCtx};

impl Tree {
    pub(crate) fn create_session(&mut self, cx: &WriteCtx, timeout_ms: i32, password: [u8; 16]) {
        let s = Session {
            id: cx.session,
            timeout_ms,
            password,
            owner: None,
        };
        self.sessions.insert(cx.session, s);
    }

    /// The session attached to `member` (a reconnect there): writes through any other member are
    /// refused from now on (`check_owner`). A session the state does not hold is SessionExpired
    /// and changes nothing; the reconnect is then refused.
    pub(crate) fn attach_session(
        &mut self,
        cx: &WriteCtx,
        member: u64,
    ) -> Result<Response, ErrorCode> {
        match self.sessions.get_mut(&cx.session) {
            Some(s) => {
                s.owner = Some(member);
                Ok(Response::Empty)
            }
            None => Err(ErrorCode::SessionExpired),
        }
    }

    /// ZooKeeper's owner check (`SessionTrackerImpl.checkSession`) for a write that came through
    /// member `via`: SessionMoved once the session attached to another member. A session
    /// without an owner, or unknown here (the write's own checks decide), passes.
    pub(crate) fn check_owner(&self, session: i64, via: u64) -> Result<(), ErrorCode> {
        match self.sessions.get(&session).and_then(|s| s.owner) {
            Some(owner) if owner != via => Err(ErrorCode::SessionMoved),
            _ => Ok(()),
        }
    }

    /// Explicit close or expiry: the session's ephemerals go in sorted path order.
    pub(crate) fn close_session(
        &mut self,
        cx: &WriteCtx,
        changes: &mut Vec<Change>,
    ) -> Result<Response, ErrorCode> {
        if self.sessions.remove(&cx.session).is_none() {
            return Err(ErrorCode::SessionExpired);
        }
        for p in self.ephemerals_of(cx.session) {
            self.unlink(cx.zxid, &p, changes);
        }
        Ok(Response::Empty)
    }

    /// The session's ephemeral paths, sorted.
    pub fn ephemerals_of(&self, session: i64) -> Vec<String> {
        self.ephemerals
            .get(&session)
            .into_iter()
            .flatten()
            .map(|p| p.to_string())
            .collect()
    }
}
