//! The queue both recipes stand in: ephemeral sequential nodes under one parent, first in sequence
//! order holds; every other contender watches only the node just before its own.
//!
//! Node names follow Curator's protected mode: `_c_<uuid>-<name><sequence>`, with `<name>` `lock-`
//! (`InterProcessMutex`) or `latch-` (`LeaderLatch`). Contenders are ordered by the text after
//! `<name>` (the ten-digit sequence), as Curator's `StandardLockInternalsDriver` orders them, so the
//! uuid never affects the order and both libraries agree on who is first.

use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client::{Acl, Acls, Client, CreateMode, Error as ZkError};

use crate::session::{session_lost, Loss};

#[derive(Debug, thiserror::Error)]
pub enum ContendError {
    #[error("timed out after {} ms waiting for {path}", .waited.as_millis())]
    Timeout { path: String, waited: Duration },
    #[error("{0}")]
    SessionLost(Loss),
    #[error("invalid path {path:?}: {reason}")]
    BadPath { path: String, reason: &'static str },
    #[error("our node {0} disappeared while waiting (was the lock path deleted?)")]
    NodeVanished(String),
    // `error`, not `source`: the message already holds it, and anyhow's `{:#}` would print it twice.
    #[error("{op} {path}: {error}")]
    Zk {
        op: &'static str,
        path: String,
        error: ZkError,
    },
}

fn zk(op: &'static str, path: &str, source: ZkError) -> ContendError {
    match source {
        ZkError::SessionExpired => ContendError::SessionLost(Loss::Expired),
        ZkError::ClientClosed => ContendError::SessionLost(Loss::Closed),
        ZkError::AuthFailed => ContendError::SessionLost(Loss::AuthFailed),
        error => ContendError::Zk {
            op,
            path: path.to_string(),
            error,
        },
    }
}

/// Checks a lock or latch path: absolute, no trailing slash, not the root, no empty component.
pub(crate) fn validate_dir(path: &str) -> Result<(), ContendError> {
    let bad = |reason| {
        Err(ContendError::BadPath {
            path: path.to_string(),
            reason,
        })
    };
    if !path.starts_with('/') {
        return bad("must start with /");
    }
    if path == "/" {
        return bad("must not be the root");
    }
    if path.ends_with('/') {
        return bad("must not end with /");
    }
    if path.contains("//") {
        return bad("must not contain an empty component");
    }
    if path.split('/').any(|c| c == "." || c == "..") {
        return bad("must not contain . or ..");
    }
    if path.contains('\0') {
        return bad("must not contain NUL");
    }
    Ok(())
}

/// The contenders among `children` (names containing `name`), in Curator's order: by the text
/// after `name`. Other children (a Curator lease, a stray node) are ignored, as Curator ignores them.
pub fn sorted_contenders<'a>(children: &'a [String], name: &str) -> Vec<&'a str> {
    let mut out: Vec<(&str, &str)> = children
        .iter()
        .filter_map(|c| c.find(name).map(|i| (&c[i + name.len()..], c.as_str())))
        .collect();
    out.sort();
    out.into_iter().map(|(_, c)| c).collect()
}

/// A held lock or leadership: the node, its fencing token, and the session it lives in.
#[derive(Debug)]
pub struct Held {
    client: Client,
    path: String,
    token: i64,
    released: bool,
}

impl Held {
    /// The fencing token: the czxid of this holder's node. Every later holder's token is larger.
    /// Give it to storage with each write and have storage refuse a token older than the last.
    pub fn token(&self) -> i64 {
        self.token
    }

    /// The full path of this holder's node.
    pub fn node_path(&self) -> &str {
        &self.path
    }

    /// The client (session) the node lives in.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Resolves when the session is lost: from then on this holder must assume it holds nothing.
    pub async fn lost(&self) -> Loss {
        session_lost(&self.client).await
    }

    /// Deletes the node, handing the lock or leadership to the next contender.
    pub async fn release(mut self) -> Result<(), ContendError> {
        self.released = true;
        match retry(&self.client, || self.client.delete(&self.path, None)).await {
            Ok(()) | Err(ZkError::NoNode) => Ok(()),
            Err(e) => Err(zk("delete", &self.path, e)),
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.released {
            delete_in_background(&self.client, &self.path);
        }
    }
}

fn delete_in_background(client: &Client, path: &str) {
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        let client = client.clone();
        let path = path.to_string();
        rt.spawn(async move {
            let _ = client.delete(&path, None).await;
        });
    }
}

/// Deletes a queued node unless disarmed: a contender that gives up (timeout, error, a dropped
/// future) leaves the queue at once instead of when its session ends.
struct QueueGuard<'a> {
    client: &'a Client,
    path: Option<String>,
}

impl Drop for QueueGuard<'_> {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            delete_in_background(self.client, &path);
        }
    }
}

/// Whether a request failed only because its connection went (lost, or no reply in time): the
/// client reconnects by itself and the request can be sent again.
pub(crate) fn connection_failed(e: &ZkError) -> bool {
    matches!(e, ZkError::ConnectionLoss | ZkError::Custom(_))
}

/// Retries `f` while its connection fails and the session lives (at most twice the session timeout);
/// any other result is returned. Only for requests that are safe to repeat.
pub(crate) async fn retry<T, F, Fut>(client: &Client, mut f: F) -> Result<T, ZkError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ZkError>>,
{
    let give_up = Instant::now() + client.session_timeout() * 2;
    loop {
        match f().await {
            Err(e) if connection_failed(&e) => {
                if client.state().is_terminated() {
                    return Err(ZkError::SessionExpired);
                }
                if Instant::now() >= give_up {
                    return Err(e);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other,
        }
    }
}

/// Joins the queue under `dir` with a `name` node holding `data`, and waits to be first. The node,
/// and `dir` and its ancestors when they are made, get `acl` (empty: open to everyone).
pub(crate) async fn contend(
    client: &Client,
    dir: &str,
    name: &str,
    data: &[u8],
    acl: &[Acl],
    deadline: Option<Instant>,
) -> Result<Held, ContendError> {
    let protected = format!("_c_{}-", uuid::Uuid::new_v4());
    let prefix = format!("{dir}/{protected}{name}");
    let started = Instant::now();
    let (path, token) = create_node(client, dir, &prefix, &protected, data, acl).await?;
    let mut guard = QueueGuard {
        client,
        path: Some(path.clone()),
    };
    let node = &path[dir.len() + 1..];
    loop {
        let children = retry(client, || client.list_children(dir))
            .await
            .map_err(|e| zk("list children of", dir, e))?;
        let order = sorted_contenders(&children, name);
        let Some(i) = order.iter().position(|c| *c == node) else {
            return Err(ContendError::NodeVanished(path.clone()));
        };
        if i == 0 {
            guard.path = None;
            return Ok(Held {
                client: client.clone(),
                path,
                token,
                released: false,
            });
        }
        let predecessor = format!("{dir}/{}", order[i - 1]);
        let watcher = match retry(client, || client.get_and_watch_data(&predecessor)).await {
            Ok((_, _, w)) => w,
            Err(ZkError::NoNode) => continue,
            Err(e) => return Err(zk("watch", &predecessor, e)),
        };
        let expired = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = watcher.changed() => {}
            loss = session_lost(client) => return Err(ContendError::SessionLost(loss)),
            _ = expired => {
                // Leave the queue now, not in the background: a process that exits on a timeout
                // would otherwise leave its node to block the next contender until its session ends.
                guard.path = None;
                let _ = retry(client, || client.delete(&path, None)).await;
                return Err(ContendError::Timeout { path: dir.to_string(), waited: started.elapsed() });
            }
        }
    }
}

/// Makes `dir` with `container`'s ACL, and its missing ancestors as open containers
/// (`world:anyone:cdrwa`): an ancestor such as `/locks` is shared by every lock under it, so it must
/// not belong to the first identity that happened to make it. An open ancestor exposes no holder:
/// only an empty `dir` can be deleted.
async fn make_dir(
    client: &Client,
    dir: &str,
    container: &zookeeper_client::CreateOptions<'_>,
) -> Result<(), ZkError> {
    let open = CreateMode::Container.with_acls(Acls::anyone_all());
    loop {
        match retry(client, || client.create(dir, &[], container)).await {
            Ok(_) => return Ok(()),
            Err(ZkError::NoNode) => {
                let parent = &dir[..dir.rfind('/').unwrap_or(0)];
                if parent.is_empty() {
                    return Err(ZkError::NoNode); // the chroot is missing
                }
                match retry(client, || client.mkdir(parent, &open)).await {
                    Ok(()) | Err(ZkError::NodeExists) => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Creates the ephemeral sequential node, making the parents (containers, as Curator's
/// `creatingParentContainersIfNeeded`) if missing. A create whose reply was lost to a connection
/// loss is found again by its protected prefix, so it is never left behind or made twice.
async fn create_node(
    client: &Client,
    dir: &str,
    prefix: &str,
    protected: &str,
    data: &[u8],
    acl: &[Acl],
) -> Result<(String, i64), ContendError> {
    let acls = if acl.is_empty() {
        Acls::anyone_all()
    } else {
        Acls::new(acl)
    };
    let ephemeral = CreateMode::EphemeralSequential.with_acls(acls);
    let container = CreateMode::Container.with_acls(acls);
    loop {
        match client.create(prefix, data, &ephemeral).await {
            Ok((stat, seq)) => return Ok((format!("{prefix}{seq}"), stat.czxid)),
            Err(ZkError::NoNode) => match make_dir(client, dir, &container).await {
                // The parent may be swept (an empty container) before we create in it: go again.
                Ok(()) | Err(ZkError::NodeExists) | Err(ZkError::NoNode) => continue,
                Err(e) => return Err(zk("create parents of", dir, e)),
            },
            // The reply was lost: the node may or may not exist. Look for it by its prefix.
            Err(e) if connection_failed(&e) => {
                let children = match retry(client, || client.list_children(dir)).await {
                    Ok(c) => c,
                    Err(ZkError::NoNode) => continue,
                    Err(e) => return Err(zk("list children of", dir, e)),
                };
                if let Some(mine) = children.iter().find(|c| c.starts_with(protected)) {
                    let path = format!("{dir}/{mine}");
                    match retry(client, || client.check_stat(&path)).await {
                        Ok(Some(stat)) => return Ok((path, stat.czxid)),
                        Ok(None) => continue,
                        Err(e) => return Err(zk("stat", &path, e)),
                    }
                }
            }
            Err(e) => return Err(zk("create", prefix, e)),
        }
    }
}

/// The contenders' nodes under `dir`, in order (first = holder / leader); empty if `dir` is missing.
pub(crate) async fn contenders(
    client: &Client,
    dir: &str,
    name: &str,
) -> Result<Vec<String>, ContendError> {
    match retry(client, || client.list_children(dir)).await {
        Ok(children) => Ok(sorted_contenders(&children, name)
            .into_iter()
            .map(String::from)
            .collect()),
        Err(ZkError::NoNode) => Ok(Vec::new()),
        Err(e) => Err(zk("list children of", dir, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_by_sequence_not_uuid() {
        let children: Vec<String> = [
            "_c_ffff-lock-0000000003",
            "_c_0000-lock-0000000005",
            "_c_aaaa-lock-0000000001",
            "leases",
            "_c_1234-latch-0000000000",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            sorted_contenders(&children, "lock-"),
            vec![
                "_c_aaaa-lock-0000000001",
                "_c_ffff-lock-0000000003",
                "_c_0000-lock-0000000005"
            ]
        );
        assert_eq!(
            sorted_contenders(&children, "latch-"),
            vec!["_c_1234-latch-0000000000"]
        );
    }

    #[test]
    fn paths_are_checked() {
        assert!(validate_dir("/locks/jobs").is_ok());
        for bad in ["", "locks", "/", "/locks/", "/a//b", "/a/../b", "/a/./b"] {
            assert!(validate_dir(bad).is_err(), "{bad:?} accepted");
        }
    }
}
