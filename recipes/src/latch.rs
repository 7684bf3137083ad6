//! Leader election: Curator's `LeaderLatch` layout (`<path>/_c_<uuid>-latch-<seq>`, the
//! participant id as data). The first node in sequence order is the leader, which is what Curator's
//! `LeaderLatch.getLeader()` reports, so both libraries agree.

use zookeeper_client::{Acl, Client, Error as ZkError, OneshotWatcher};

use crate::contend::{self, validate_dir, ContendError, Held};

/// The node name Curator's `LeaderLatch` uses.
pub const LATCH_NAME: &str = "latch-";

#[derive(Debug, Clone)]
pub struct LeaderLatch {
    client: Client,
    path: String,
    id: String,
    acl: Vec<Acl>,
}

impl LeaderLatch {
    /// A participant `id` (Curator's participant id; shown to everyone as the leader's name).
    pub fn new(client: Client, path: &str, id: &str) -> Result<LeaderLatch, ContendError> {
        validate_dir(path)?;
        Ok(LeaderLatch {
            client,
            path: path.to_string(),
            id: id.to_string(),
            acl: Vec::new(),
        })
    }

    /// The ACL of this participant's node (and of the election's path when this participant
    /// makes it), as [`Lock::with_acl`](crate::Lock::with_acl). Empty (the default): open.
    pub fn with_acl(mut self, acl: Vec<Acl>) -> LeaderLatch {
        self.acl = acl;
        self
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Joins the election and waits until this participant leads. The returned [`Held`] is the
    /// leadership: [`Held::lost`] says when it ends, [`Held::release`] resigns.
    pub async fn campaign(&self) -> Result<Held, ContendError> {
        contend::contend(
            &self.client,
            &self.path,
            LATCH_NAME,
            self.id.as_bytes(),
            &self.acl,
            None,
        )
        .await
    }
}

/// The current leader's id under `path` (the first participant's data), if any.
pub async fn leader(client: &Client, path: &str) -> Result<Option<String>, ContendError> {
    validate_dir(path)?;
    loop {
        let order = contend::contenders(client, path, LATCH_NAME).await?;
        let Some(first) = order.first() else {
            return Ok(None);
        };
        let node = format!("{path}/{first}");
        match client.get_data(&node).await {
            Ok((data, _)) => return Ok(Some(String::from_utf8_lossy(&data).into_owned())),
            // It resigned between the listing and the read: look again.
            Err(ZkError::NoNode) => continue,
            Err(e) if contend::connection_failed(&e) => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await
            }
            Err(e) => {
                return Err(ContendError::Zk {
                    op: "read",
                    path: node,
                    error: e,
                })
            }
        }
    }
}

/// The current leader's id under `path` and a watcher that fires on the next change of the
/// participants (a child watch set by the same read, so no change is missed; no polling).
pub async fn leader_and_watch(
    client: &Client,
    path: &str,
) -> Result<(Option<String>, OneshotWatcher), ContendError> {
    let fail = |op, error| ContendError::Zk {
        op,
        path: path.to_string(),
        error,
    };
    loop {
        let (children, watcher) = match client.list_and_watch_children(path).await {
            Ok(r) => r,
            // No election yet: watch for the path to appear.
            Err(ZkError::NoNode) => match client.check_and_watch_stat(path).await {
                Ok((Some(_), _)) => continue,
                Ok((None, watcher)) => return Ok((None, watcher)),
                Err(e) => return Err(fail("watch", e)),
            },
            Err(e) if contend::connection_failed(&e) => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
            Err(e) => return Err(fail("watch children of", e)),
        };
        let order = contend::sorted_contenders(&children, LATCH_NAME);
        let Some(first) = order.first() else {
            return Ok((None, watcher));
        };
        let node = format!("{path}/{first}");
        match client.get_data(&node).await {
            Ok((data, _)) => {
                return Ok((Some(String::from_utf8_lossy(&data).into_owned()), watcher))
            }
            Err(ZkError::NoNode) => continue,
            Err(e) if contend::connection_failed(&e) => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await
            }
            Err(e) => {
                return Err(ContendError::Zk {
                    op: "read",
                    path: node,
                    error: e,
                })
            }
        }
    }
}
