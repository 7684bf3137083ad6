//! A fair, herd-free mutex: Curator's `InterProcessMutex` layout (`<path>/_c_<uuid>-lock-<seq>`).

use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client::{Acl, Client};

use crate::contend::{self, validate_dir, ContendError, Held};

/// The node name Curator's `InterProcessMutex` uses.
pub const LOCK_NAME: &str = "lock-";

/// A mutex at a znode path, say `/locks/jobs`: the path a Curator `InterProcessMutex` is given.
#[derive(Debug, Clone)]
pub struct Lock {
    client: Client,
    path: String,
    data: Vec<u8>,
    acl: Vec<Acl>,
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
            acl: Vec::new(),
        })
    }

    /// Data stored in this contender's node (Curator stores the client's address; any bytes do).
    pub fn with_data(mut self, data: impl Into<Vec<u8>>) -> Lock {
        self.data = data.into();
        self
    }

    /// The ACL of this contender's node, and of the lock's path and its parents when this contender
    /// makes them. Empty (the default): open to everyone (`world:anyone:cdrwa`), as Curator's
    /// default. Give [`creator_acl`](crate::creator_acl) to keep other identities from deleting the
    /// holder's node: deleting a child needs the `d` permission on the lock's path.
    pub fn with_acl(mut self, acl: Vec<Acl>) -> Lock {
        self.acl = acl;
        self
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// Waits, in arrival order, until this contender holds the lock.
    pub async fn acquire(&self) -> Result<Held, ContendError> {
        contend::contend(
            &self.client,
            &self.path,
            LOCK_NAME,
            &self.data,
            &self.acl,
            None,
        )
        .await
    }

    /// As [`Lock::acquire`], giving up (and leaving the queue) after `timeout`.
    pub async fn try_acquire(&self, timeout: Duration) -> Result<Held, ContendError> {
        let deadline = Instant::now() + timeout;
        contend::contend(
            &self.client,
            &self.path,
            LOCK_NAME,
            &self.data,
            &self.acl,
            Some(deadline),
        )
        .await
    }

    /// The contenders' node names, holder first.
    pub async fn contenders(&self) -> Result<Vec<String>, ContendError> {
        contend::contenders(&self.client, &self.path, LOCK_NAME).await
    }
}
