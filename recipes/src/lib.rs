//! Locks and leader election on the ZooKeeper protocol, for paddock and Apache ZooKeeper alike.
//!
//! - [`Lock`]: a fair mutex. Each contender creates an ephemeral sequential node under the lock's
//!   path and waits for the node just before its own to go (no herd), as Curator's
//!   `InterProcessMutex` does, with the same node names (`_c_<uuid>-lock-<seq>`), so a Java service
//!   on Curator and a program on this crate exclude each other.
//! - [`LeaderLatch`]: leader election with Curator's `LeaderLatch` layout (`_c_<uuid>-latch-<seq>`,
//!   the participant id as the node's data), so both see the same leader.
//! - [`Held::token`]: the czxid of the holder's node, a fencing token that grows with every
//!   acquisition (zxids only grow, across restarts and leader changes of the servers).
//! - [`session_lost`]: resolves as soon as the session is gone (expired, closed, or disconnected for
//!   longer than the session timeout), so a holder learns it at once, not at its next call.
//!
//! The `cli` module holds `paddock lock` and `paddock elect`; `secure` their TLS files,
//! credentials, and the creator-only ACL their nodes get once the session has an identity.

pub mod cli;
mod contend;
pub mod latch;
pub mod lock;
pub mod secure;
pub mod session;

pub use contend::{ContendError, Held};
pub use latch::LeaderLatch;
pub use lock::Lock;
pub use session::{session_lost, Loss};
