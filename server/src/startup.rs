//! Start-up and shut-down of one paddock server: the raft log, the recovered tree, the core
//! task, the bridge from the raft thread, and the client listener.
//!
//! Start-up order matters: the tree is rebuilt from the newest snapshot plus the log before
//! the listener opens, so no client ever sees a state older than one it was shown before
//! the restart (the lastZxidSeen check would otherwise refuse it).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::{info, warn};

use znode_tree::Tree;

use crate::config::Config;
use crate::connection::{self, ConnParams};
use crate::core::Core;
use crate::msg::CoreMsg;
use crate::throttle::Throttle;

/// A running server.
pub struct Server {
    addr: SocketAddr,
    core_tx: mpsc::Sender<CoreMsg>,
    raft: consensus::Handle,
    accept: JoinHandle<()>,
    core: JoinHandle<()>,
}

impl Server {
    /// Recovers state from the data directory, then starts serving on the configured address
    /// (port 0 picks a free port; see `local_addr`).
    pub async fn start(cfg: Config) -> anyhow::Result<Server> {
        // Each server would otherwise bootstrap a Raft group of its own and the "ensemble"
        // would silently diverge: refuse until paddock replicates between servers.
        if cfg.servers.len() > 1 && cfg.ignore_peers {
            warn!(
                servers = cfg.servers.len(),
                "--ignore-peers: running alone; the other listed servers do NOT share this server's data"
            );
        } else if cfg.servers.len() > 1 {
            anyhow::bail!(
                "this configuration lists {} servers (server.N lines), but paddock does not run \
                 ensembles yet; list at most one server (or pass --ignore-peers to run each alone, for tests)",
                cfg.servers.len()
            );
        }
        let cfg = Arc::new(cfg);
        std::fs::create_dir_all(&cfg.data_dir)
            .with_context(|| format!("creating dataDir {}", cfg.data_dir.display()))?;
        let dir = cfg.raft_dir();
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;

        let mut raft_cfg = consensus::Config::standalone(&dir);
        raft_cfg.id = cfg.my_id.unwrap_or(1);
        raft_cfg.voters = vec![raft_cfg.id];
        let started = tokio::task::spawn_blocking(move || consensus::start(raft_cfg))
            .await?
            .context("opening the raft log")?;
        let raft = started.handle.clone();

        let (tree, applied, term) = match started.snapshot {
            Some(snap) => {
                let tree = Tree::restore(&snap.data, cfg.tree_config())
                    .with_context(|| format!("restoring the snapshot at index {}", snap.index))?;
                info!(
                    index = snap.index,
                    nodes = tree.node_count(),
                    "restored snapshot"
                );
                (tree, snap.index, snap.term)
            }
            None => (Tree::new(cfg.tree_config()), 0, 0),
        };
        let replay_to = raft.status().last_index;

        let (core_tx, core_rx) = mpsc::channel(64 * 1024);
        let core = Core::new(cfg.clone(), tree, raft.clone(), applied, term);
        let params = Arc::new(ConnParams {
            max_frame: cfg.jute_max_buffer,
            stmk_allowed: cfg.four_letter_words.allows(wire::FourLetterWord::Stmk),
            response_sizes: core.response_sizes(),
            throttle: Throttle::new(cfg.global_outstanding_limit),
        });
        let core = tokio::spawn(core.run(core_rx));

        // The raft thread speaks crossbeam; the core listens on tokio. One thread bridges.
        let bridge_tx = core_tx.clone();
        let events = started.events;
        std::thread::Builder::new()
            .name("raft-events".into())
            .spawn(move || {
                while let Ok(ev) = events.recv() {
                    if bridge_tx.blocking_send(CoreMsg::Consensus(ev)).is_err() {
                        break;
                    }
                }
            })
            .context("spawning the raft event bridge")?;

        // Replay the log into the tree before anyone can connect.
        let (tx, rx) = oneshot::channel();
        core_tx
            .send(CoreMsg::WaitApplied {
                index: replay_to,
                reply: tx,
            })
            .await?;
        rx.await.context("core stopped during replay")?;
        info!(applied = replay_to, "log replayed");

        let bind = SocketAddr::new(cfg.client_port_address, cfg.client_port);
        let listener = TcpListener::bind(bind)
            .await
            .with_context(|| format!("binding the client port {bind}"))?;
        let addr = listener.local_addr()?;
        info!(%addr, data_dir = %cfg.data_dir.display(), "serving ZooKeeper clients");

        let accept = tokio::spawn(accept_loop(listener, core_tx.clone(), cfg.clone(), params));
        Ok(Server {
            addr,
            core_tx,
            raft,
            accept,
            core,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, stops the core, then flushes and stops the raft thread.
    pub async fn shutdown(self) {
        self.accept.abort();
        let _ = self.core_tx.send(CoreMsg::Shutdown).await;
        let _ = self.core.await;
        let raft = self.raft.clone();
        let _ = tokio::task::spawn_blocking(move || raft.shutdown()).await;
        info!("server stopped");
    }

    /// Serves until ctrl-c or SIGTERM, then shuts down cleanly.
    pub async fn run_until_signal(self) -> anyhow::Result<()> {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => info!("interrupted"),
            _ = term.recv() => info!("terminated"),
        }
        self.shutdown().await;
        Ok(())
    }
}

/// Counts connections per client address for `maxClientCnxns`.
#[derive(Default)]
struct PerIp(Mutex<HashMap<IpAddr, u32>>);

impl PerIp {
    fn try_add(&self, ip: IpAddr, max: u32) -> bool {
        let mut m = self.0.lock().unwrap();
        let n = m.entry(ip).or_insert(0);
        if max != 0 && *n >= max {
            return false;
        }
        *n += 1;
        true
    }

    fn remove(&self, ip: IpAddr) {
        let mut m = self.0.lock().unwrap();
        if let Some(n) = m.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                m.remove(&ip);
            }
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    core_tx: mpsc::Sender<CoreMsg>,
    cfg: Arc<Config>,
    params: Arc<ConnParams>,
) {
    let next_id = AtomicU64::new(1);
    let per_ip = Arc::new(PerIp::default());
    loop {
        let (stream, remote) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // Out of descriptors and the like: back off instead of spinning.
                warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        if !per_ip.try_add(remote.ip(), cfg.max_client_cnxns) {
            warn!(peer = %remote, max = cfg.max_client_cnxns, "too many connections from this address; closing");
            drop(stream);
            continue;
        }
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        let core_tx = core_tx.clone();
        let params = params.clone();
        let per_ip = per_ip.clone();
        tokio::spawn(async move {
            connection::serve(stream, remote, id, core_tx, params).await;
            per_ip.remove(remote.ip());
        });
    }
}
