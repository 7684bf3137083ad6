//! Sessions as the replicated state knows them: id, negotiated timeout and password. Liveness
//! (expiry deadlines) is the server's business and not replicated; only createSession and
//! closeSession go through the log.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub id: i64,
    pub timeout_ms: i32,
    pub password: [u8; 16],
}
