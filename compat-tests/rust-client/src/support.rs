//! What every check shares: connecting, waiting for events with deadlines, and exact comparisons.

use std::fmt::Debug;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use tokio::time::{timeout, Instant};
use zookeeper_client::{
    Acls, Client, Connector, CreateMode, CreateOptions, EventType, OneshotWatcher,
    PersistentWatcher, Stat, WatchedEvent,
};

/// How long a check waits for one expected event. Generous: a debug server build on 2 busy cores.
pub const EVENT_WAIT: Duration = Duration::from_secs(10);

/// How long the first connection is retried: ZooKeeper answers `imok` slightly before it accepts sessions.
const CONNECT_RETRY: Duration = Duration::from_secs(15);

/// Shared by every check: the server address (`host:port`).
#[derive(Clone, Debug)]
pub struct Ctx {
    pub addr: String,
}

impl Ctx {
    pub async fn connect(&self) -> Result<Client> {
        connect(&self.addr).await
    }
}

/// Connects to `cluster` (which may carry a chroot suffix), retrying until [CONNECT_RETRY] has passed.
pub async fn connect(cluster: &str) -> Result<Client> {
    let deadline = Instant::now() + CONNECT_RETRY;
    loop {
        let attempt = connector().connect(cluster);
        let err = match timeout(Duration::from_secs(10), attempt).await {
            Ok(Ok(client)) => return Ok(client),
            Ok(Err(err)) => anyhow!(err),
            Err(_) => anyhow!("connect timed out"),
        };
        if Instant::now() >= deadline {
            return Err(err.context(format!("connecting to {cluster}")));
        }
        // A retry delay, not synchronisation: the server is still starting.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The connector every check uses: 10 s sessions, so a lost close would not be hidden by a quick expiry.
pub fn connector() -> Connector {
    Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .with_connection_timeout(Duration::from_secs(5))
}

pub fn persistent() -> CreateOptions<'static> {
    CreateMode::Persistent.with_acls(Acls::anyone_all())
}

pub fn ephemeral() -> CreateOptions<'static> {
    CreateMode::Ephemeral.with_acls(Acls::anyone_all())
}

pub fn ephemeral_sequential() -> CreateOptions<'static> {
    CreateMode::EphemeralSequential.with_acls(Acls::anyone_all())
}

/// `what` must equal `want`.
pub fn eq<T: PartialEq + Debug>(what: &str, got: T, want: T) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        bail!("{what}: got {got:?}, want {want:?}")
    }
}

/// The result must be exactly the ZooKeeper error `want`.
pub fn expect_err<T: Debug>(
    what: &str,
    got: std::result::Result<T, zookeeper_client::Error>,
    want: zookeeper_client::Error,
) -> Result<()> {
    match got {
        Err(err) if err == want => Ok(()),
        Err(err) => bail!("{what}: got error {err:?}, want {want:?}"),
        Ok(value) => bail!("{what}: succeeded with {value:?}, want error {want:?}"),
    }
}

/// The first event of a one-shot watcher, within [EVENT_WAIT].
pub async fn oneshot_event(what: &str, watcher: OneshotWatcher) -> Result<WatchedEvent> {
    timeout(EVENT_WAIT, watcher.changed())
        .await
        .map_err(|_| anyhow!("{what}: no watch event within {EVENT_WAIT:?}"))
}

/// The next event of a persistent watcher, within [EVENT_WAIT].
pub async fn next_event(what: &str, watcher: &mut PersistentWatcher) -> Result<WatchedEvent> {
    timeout(EVENT_WAIT, watcher.changed())
        .await
        .map_err(|_| anyhow!("{what}: no watch event within {EVENT_WAIT:?}"))
}

/// The event must be a node event of type `kind` on `path`.
pub fn expect_event(what: &str, event: &WatchedEvent, kind: EventType, path: &str) -> Result<()> {
    if event.event_type == kind && event.path == path {
        Ok(())
    } else {
        bail!(
            "{what}: got {:?} on {:?}, want {kind:?} on {path:?}",
            event.event_type,
            event.path
        )
    }
}

/// Every field a fresh znode's Stat must have: versions 0, one zxid for create/modify/children, ctime == mtime.
pub fn expect_fresh_stat(what: &str, stat: &Stat, data_len: usize, owner: i64) -> Result<()> {
    eq(&format!("{what} version"), stat.version, 0)?;
    eq(&format!("{what} cversion"), stat.cversion, 0)?;
    eq(&format!("{what} aversion"), stat.aversion, 0)?;
    eq(
        &format!("{what} ephemeral_owner"),
        stat.ephemeral_owner,
        owner,
    )?;
    eq(
        &format!("{what} data_length"),
        stat.data_length,
        data_len as i32,
    )?;
    eq(&format!("{what} num_children"), stat.num_children, 0)?;
    eq(&format!("{what} mzxid == czxid"), stat.mzxid, stat.czxid)?;
    eq(&format!("{what} pzxid == czxid"), stat.pzxid, stat.czxid)?;
    eq(&format!("{what} mtime == ctime"), stat.mtime, stat.ctime)?;
    if stat.czxid <= 0 || stat.ctime <= 0 {
        bail!(
            "{what}: czxid {} and ctime {} must be positive",
            stat.czxid,
            stat.ctime
        );
    }
    Ok(())
}

/// Polls `cond` until it holds or [EVENT_WAIT] passes; for states no watch reports (a contender's node
/// appearing is watched instead where possible).
pub async fn wait_until<F, Fut>(what: &str, mut cond: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool>>,
{
    let deadline = Instant::now() + EVENT_WAIT;
    loop {
        if cond().await.with_context(|| what.to_string())? {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("{what}: not reached within {EVENT_WAIT:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
