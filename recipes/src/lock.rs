//! A fair, herd-free mutex: Curator's `InterProcessMutex` layout (`<path>/_c_<uuid>-lock-<seq>`).

use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client::Client;

use crate::contend::{self, validate_dir, ContendError, Held};

/// The node name Curator's `InterProcessMutex` uses.
pub const LOCK_NAME: &str = "lock-";

/// A mutex at a znode path, say `/locks/jobs`: the path a Curator `InterProcessMutex` is given.
#[derive(Debug, Clone)]
pub struct Lock {
    client: Client,
    path: String,
    data: Vec<u8>,
}

impl Lock {
    /// A lock at `path` (made on first use if missing). The client's session is the lease: when it
    /// ends, so does the hold.
    pub fn new(client: Client, path: &str) -> Result<Lock, ContendError> {
        validate_dir(path)?;
        Ok(Lock {
            client,
            path: path.to_string(),
            data: Vec::new(),
        })
    }

    /// Data stored in this contender's node (Curator stores the client's address; any bytes do).
    pub fn with_data(mut self, data: impl Into<Vec<u8>>) -> Lock {
        self.data = data.into();
        self
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// Waits, in arrival order, until this contender holds the lock.
    pub async fn acquire(&self) -> Result<Held, ContendError> {
        contend::contend(&self.client, &self.path, LOCK_NAME, &self.data, None).await
    }

    /// As [`Lock::acquire`], giving up (and leaving the queue) after `timeout`.
    pub async fn try_acquire(&self, timeout: Duration) -> Result<Held, ContendError> {
        let deadline = Instant::now() + timeout;
        contend::contend(
            &self.client,
            &self.path,
            LOCK_NAME,
            &self.data,
            Some(deadline),
        )
        .await
    }

    /// The contenders' node names, holder first.
    pub async fn contenders(&self) -> Result<Vec<String>, ContendError> {
        contend::contenders(&self.client, &self.path, LOCK_NAME).await
    }
}
