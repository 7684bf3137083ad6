//! Sessions as the replicated state knows them: id, negotiated timeout and password. Liveness
//! (expiry deadlines) is the server's business and not replicated; createSession, closeSession
//! and the attach of a session to an ensemble member (`Txn::Attach`) go through the log.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub id: i64,
    pub timeout_ms: i32,
    pub password: [u8; 16],
    /// The ensemble member the session last attached to through the log (`Txn::Attach`): a
    /// write that names another member (`Entry::via`) is refused with SessionMoved. `None`
    /// until the first attach (a session created and never reconnected, and every session of
    /// a standalone server): any member's write passes, as ZooKeeper's owner check passes while
    /// a session has no owner.
    pub owner: Option<u64>,
}
