//! Telling a holder at once that its session, and so its lock, is gone.

use std::fmt;
use std::time::Duration;

use zookeeper_client::{Client, SessionState};

/// Why a session, and with it every ephemeral node (lock, leadership) it owned, is lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// The server expired the session: its ephemeral nodes are deleted.
    Expired,
    /// The client was closed.
    Closed,
    /// Authentication failed; the session cannot continue.
    AuthFailed,
    /// No server has been reachable for this long (at least the session timeout): the servers
    /// have expired the session by now, or will before this client can tell them otherwise.
    Disconnected(Duration),
}

impl fmt::Display for Loss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Loss::Expired => f.write_str("session expired"),
            Loss::Closed => f.write_str("session closed"),
            Loss::AuthFailed => f.write_str("authentication failed"),
            Loss::Disconnected(d) => write!(f, "disconnected for {} ms", d.as_millis()),
        }
    }
}

/// Resolves when `client`'s session is lost: at once if it already is, else as soon as the
/// client's state stream reports a terminal state, or the client has been disconnected for the
/// negotiated session timeout (the holder cannot know it still holds anything past that point).
pub async fn session_lost(client: &Client) -> Loss {
    let mut states = client.state_watcher();
    let timeout = client.session_timeout();
    let mut state = states.state();
    loop {
        match state {
            SessionState::Expired => return Loss::Expired,
            SessionState::Closed => return Loss::Closed,
            SessionState::AuthFailed => return Loss::AuthFailed,
            SessionState::Disconnected => {
                match tokio::time::timeout(timeout, states.changed()).await {
                    Ok(next) => state = next,
                    Err(_) => return Loss::Disconnected(timeout),
                }
            }
            SessionState::SyncConnected | SessionState::ConnectedReadOnly => {
                state = states.changed().await;
            }
        }
    }
}
