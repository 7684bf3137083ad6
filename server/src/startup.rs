//! Start-up and shut-down of one paddock server: the raft log, the recovered tree, the core
//! task, the raft thread's event queue into it, and the client listener.
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
use tracing::{error, info, warn};

use znode_tree::Tree;

use crate::client_tls::{self, ClientPortTls, Port};
use crate::clock::WallClock;
use crate::config::Config;
use crate::connection::ConnParams;
use crate::core::Core;
use crate::identity::{self, Decision, Fresh, Identity, PeerAnswer};
use crate::msg::CoreMsg;
use crate::throttle::Throttle;

/// How long the stop after a member failed by itself may take before `run_until_signal` returns
/// anyway (a wedged disk must not keep the process alive).
const FAILED_STOP_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

/// A running server.
pub struct Server {
    addr: SocketAddr,
    /// `secureClientPort`'s address, when it is configured.
    secure_addr: Option<SocketAddr>,
    core_tx: mpsc::Sender<CoreMsg>,
    raft: consensus::Handle,
    /// The client ports' accept loops (the secure port's second, when there is one).
    accept: Vec<JoinHandle<()>>,
    core: JoinHandle<()>,
    /// The peer transport of an ensemble member.
    net: Option<consensus::PeerNet>,
    /// Its electionPort (bound, never spoken on).
    election: Option<crate::election_port::ElectionPort>,
    election_timeout: std::time::Duration,
    http: crate::http::Endpoints,
}

/// Whose data the directory holds, as start-up settled it (identity.rs), and the peer port of an
/// ensemble member, bound on the way (the probes need it).
struct Settled {
    identity: Identity,
    /// A new ensemble: this member lists the initial voters and learners in raft.
    bootstrap: bool,
    /// The identity file is to be (re)written once raft has opened the log.
    write_identity: bool,
    /// Joining a group born just now, whose log holds nothing this member missed.
    fresh_join: bool,
    net: Option<consensus::PeerNet>,
    /// The electionPort, bound but never spoken on (`election_port.rs`).
    election: Option<crate::election_port::ElectionPort>,
}

/// Where the raft loop runs and which wall clock the core reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runner {
    /// The raft thread, and the system's wall clock: every server.
    Thread,
    /// A task of the runtime's, and a wall clock that follows tokio's: `start_stepped`.
    #[cfg(feature = "testing")]
    Task,
}

/// What `open_raft` starts: the handle, the snapshot to restore, and the raft thread's events.
struct Opened {
    started: consensus::Started,
    events: mpsc::UnboundedReceiver<consensus::Event>,
}

/// The recovered tree and where it stands in the log.
struct Recovered {
    tree: Tree,
    applied: u64,
    term: u64,
    /// How long restoring the snapshot took (ZooKeeper's `startup_snap_load_time`).
    took: std::time::Duration,
}

impl Server {
    /// Recovers state from the data directory, then starts serving on the configured address
    /// (port 0 picks a free port; see `local_addr`).
    ///
    /// In order: whose data this is (`settle_identity`), the raft log opened and the raft thread
    /// started (`open_raft`), the tree restored from the newest snapshot (`recover_tree`), the
    /// core task (`spawn_core`), the log replayed into it (`replay`), and only then the client
    /// port (`listen`) and the HTTP endpoints.
    pub async fn start(cfg: Config) -> anyhow::Result<Server> {
        Server::start_on(cfg, Runner::Thread).await
    }

    /// As `start`, but every clock the server reads is the tokio runtime's: the raft loop is
    /// stepped on a task of the runtime (`consensus::start_stepped`), not a thread of its own in
    /// real time, and the core's wall clock follows tokio's. A test on paused time
    /// (`tokio::time::pause`, `advance`, or waiting, which advances it) then drives session
    /// expiry, the TTL and container sweeps and the session checkpoint, as mini-redis's server
    /// tests drive its expiry. A standalone server only.
    #[cfg(feature = "testing")]
    pub async fn start_stepped(cfg: Config) -> anyhow::Result<Server> {
        anyhow::ensure!(
            cfg.servers.len() <= 1 || cfg.ignore_peers,
            "a stepped start runs a standalone server only"
        );
        Server::start_on(cfg, Runner::Task).await
    }

    async fn start_on(cfg: Config, runner: Runner) -> anyhow::Result<Server> {
        let is_ensemble = cfg.servers.len() > 1 && !cfg.ignore_peers;
        if cfg.servers.len() > 1 && cfg.ignore_peers {
            warn!(
                servers = cfg.servers.len(),
                "--ignore-peers: running alone; the other listed servers do NOT share this server's data"
            );
        }
        let cfg = Arc::new(cfg);
        crate::data_dir::prepare(&cfg)?;
        // The client port's stores are read before anything else opens: one that does not load
        // stops the start at once.
        let client_tls = ClientPortTls::start(&cfg).map_err(anyhow::Error::msg)?;
        let dir = cfg.raft_dir();
        let stored = Identity::read(&dir).map_err(anyhow::Error::msg)?;
        let creating = match stored {
            None => Identity::read_creating(&dir).map_err(anyhow::Error::msg)?,
            Some(_) => None,
        };
        let store = open_log(&dir).map_err(|e| {
            crate::repair_cmd::with_advice(e, &cfg.data_dir, cfg.data_log_dir.as_deref())
        })?;
        let initialized = store.as_ref().is_some_and(log_is_initialized);
        // A creation a crash cut short: the log, if it was written, is that identity's (and the
        // identity is finished below); without one it starts afresh.
        let finish_creating = creating.is_some() && initialized;
        let stored = if finish_creating { creating } else { stored };
        let settled =
            settle_identity(&cfg, is_ensemble, stored, initialized, finish_creating).await?;
        if settled.write_identity && !finish_creating {
            // Before the log: a crash after the log's first record then leaves both (see
            // `identity::CREATING_FILE_NAME`).
            settled
                .identity
                .write_creating(&dir)
                .with_context(|| format!("writing {}", Identity::path(&dir).display()))?;
        }
        let opened = open_raft(&cfg, is_ensemble, store, &settled, runner).await?;
        let raft = opened.started.handle.clone();
        if settled.write_identity {
            settled
                .identity
                .write(&dir)
                .with_context(|| format!("writing {}", Identity::path(&dir).display()))?;
        }
        let net = settled.net;
        let election = settled.election;
        if let Some(net) = &net {
            net.attach(Arc::new(raft.clone()));
            tokio::spawn(publish_local_info(net.clone(), raft.clone()));
        }
        let recovered = recover_tree(&cfg, opened.started.snapshot)?;
        // A member replays what is known committed; a group of one all it has (its own votes
        // commit it).
        let replay_to = if is_ensemble {
            raft.status().commit.max(recovered.applied)
        } else {
            raft.status().last_index
        };
        let wall = match runner {
            Runner::Thread => WallClock::System,
            #[cfg(feature = "testing")]
            Runner::Task => WallClock::following_runtime(),
        };
        let running = spawn_core(&cfg, &raft, net.as_ref(), recovered, opened.events, wall);
        replay(&running, replay_to).await?;
        let listening = listen(&cfg, &running, client_tls).await;
        let listening = match listening {
            Ok(l) => l,
            Err(e) => {
                let _ = running.core_tx.send(CoreMsg::Shutdown).await;
                let _ = running.core.await;
                let r = raft.clone();
                let _ = tokio::task::spawn_blocking(move || r.shutdown()).await;
                return Err(e);
            }
        };
        let Listening {
            addr,
            secure_addr,
            accept,
        } = listening;
        let http = match crate::http::start(&cfg, running.core_tx.clone()).await {
            Ok(http) => http,
            Err(e) => {
                accept.iter().for_each(JoinHandle::abort);
                let _ = running.core_tx.send(CoreMsg::Shutdown).await;
                let _ = running.core.await;
                let r = raft.clone();
                let _ = tokio::task::spawn_blocking(move || r.shutdown()).await;
                return Err(e);
            }
        };
        let (tick, election_ticks, _) = cfg.raft_timing();
        Ok(Server {
            addr,
            secure_addr,
            core_tx: running.core_tx,
            raft,
            accept,
            core: running.core,
            net,
            election,
            election_timeout: tick * election_ticks,
            http,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where `secureClientPort` listens (TLS only), if it is configured.
    pub fn secure_addr(&self) -> Option<SocketAddr> {
        self.secure_addr
    }

    /// Where the electionPort is bound, on an ensemble member whose electionPort is its own.
    pub fn election_addr(&self) -> Option<SocketAddr> {
        self.election.as_ref().map(|e| e.local_addr())
    }

    /// Where the AdminServer listens, if it runs.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.http.admin_addr
    }

    /// Where `/metrics` is served, if a Prometheus provider is configured.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.http.metrics_addr
    }

    /// Stops accepting; a leader of an ensemble hands its leadership to the most up-to-date
    /// voter first (so the others need not wait for an election timeout); then stops the core,
    /// flushes and stops the raft thread, and closes the peer links.
    pub async fn shutdown(self) {
        self.accept.iter().for_each(JoinHandle::abort);
        if let Some(e) = &self.election {
            e.stop();
        }
        self.http.stop();
        if self.net.is_some() && self.raft.status().is_leader {
            let raft = self.raft.clone();
            let wait = self.election_timeout * 2;
            match tokio::task::spawn_blocking(move || raft.transfer_leadership_and_wait(wait)).await
            {
                Ok(Ok(to)) => info!(to, "leadership handed over"),
                // Every other voter is down (the last member of a stopping ensemble): nobody to
                // hand it to, and nothing to wait for.
                Ok(Err(consensus::ConsensusError::Invalid(why))) => {
                    info!(why, "leadership not handed over")
                }
                Ok(Err(e)) => warn!(error = %e, "leadership not handed over; stopping anyway"),
                Err(e) => warn!(error = %e, "leadership hand-over did not finish"),
            }
        }
        let _ = self.core_tx.send(CoreMsg::Shutdown).await;
        let _ = self.core.await;
        let raft = self.raft.clone();
        let _ = tokio::task::spawn_blocking(move || raft.shutdown()).await;
        if let Some(net) = &self.net {
            net.shutdown();
        }
        info!("server stopped");
    }

    /// The consensus handle (status, membership; tests stop it to stand in for a fatal error).
    pub fn consensus(&self) -> &consensus::Handle {
        &self.raft
    }

    /// Serves until ctrl-c or SIGTERM, then shuts down cleanly. Also returns, with an error
    /// after the same stop, when the member cannot go on by itself: its raft thread stopped (a
    /// fatal storage error, such as a full disk) or its core task ended. Lingering would leave
    /// a member that holds its ports but never serves again; exiting non-zero lets a supervisor
    /// (systemd's Restart=, Docker's restart policy) start it afresh, as ZooKeeper's critical
    /// threads end their server.
    pub async fn run_until_signal(self) -> anyhow::Result<()> {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let failed = tokio::select! {
            _ = tokio::signal::ctrl_c() => { info!("interrupted"); None }
            _ = term.recv() => { info!("terminated"); None }
            why = self.stopped_by_itself() => Some(why),
        };
        let Some(why) = failed else {
            self.shutdown().await;
            return Ok(());
        };
        error!(why, "this member cannot serve any more; stopping");
        if tokio::time::timeout(FAILED_STOP_BOUND, self.shutdown())
            .await
            .is_err()
        {
            warn!(
                bound_s = FAILED_STOP_BOUND.as_secs(),
                "the stop after the failure did not finish in time"
            );
        }
        anyhow::bail!("{why}")
    }

    /// Resolves when the raft thread or the core task has ended without being asked to.
    async fn stopped_by_itself(&self) -> &'static str {
        let mut every = tokio::time::interval(std::time::Duration::from_millis(200));
        loop {
            every.tick().await;
            if self.raft.is_stopped() {
                return "the raft thread stopped (its error is logged above)";
            }
            if self.core.is_finished() {
                return "the core task ended";
            }
        }
    }
}

/// Decides whose data the directory holds (identity.rs: refuse a foreign or standalone dir in an
/// ensemble), asking the peers when a member has none; an ensemble member binds its peer port on
/// the way. `initialized`: the raft directory holds a log to resume.
async fn settle_identity(
    cfg: &Config,
    is_ensemble: bool,
    stored: Option<Identity>,
    initialized: bool,
    finish_creating: bool,
) -> anyhow::Result<Settled> {
    let dir = cfg.raft_dir();
    let decision = identity::decide(cfg, stored, initialized);
    // Loaded once: a rebind below (another cluster id) keeps the same stores and watcher.
    let security = if is_ensemble {
        crate::quorum_security::build(cfg).map_err(anyhow::Error::msg)?
    } else {
        consensus::net::PeerSecurity::open()
    };
    let mut net = if is_ensemble {
        let cluster_id = match &decision {
            Decision::Resume(id) => id.cluster_id,
            _ => identity::cluster_id_of(cfg),
        };
        Some(bind_peer_port(cfg, cluster_id, initialized, &security).await?)
    } else {
        None
    };
    let election = if is_ensemble {
        let refuse_all = security.closed() || cfg.quorum_security.ssl_quorum;
        let mode = crate::election_port::mode_for(cfg, refuse_all);
        crate::election_port::bind(cfg, mode).await?
    } else {
        None
    };
    let mut fresh_join = false;
    let (bootstrap, identity, write_identity) = match decision {
        Decision::Resume(id) => (false, id, finish_creating),
        Decision::Adopt(id) => (false, id, true),
        Decision::Bootstrap(id) => (true, id, true),
        Decision::Refuse(why) => anyhow::bail!("{}: {why}", dir.display()),
        Decision::AskPeers => {
            let bound = net.as_ref().expect("an ensemble binds its peer port");
            let (bootstrap, cluster_id, at_birth) = ask_peers(cfg, bound).await?;
            fresh_join = at_birth;
            let mut identity = Identity::new_for(cfg);
            if cluster_id != identity.cluster_id {
                // Joining an ensemble that a reconfig grew: its links carry its id.
                info!(
                    cluster = format_args!("{cluster_id:016x}"),
                    "taking the ensemble's cluster id"
                );
                bound.shutdown();
                net = Some(bind_peer_port(cfg, cluster_id, initialized, &security).await?);
                identity.cluster_id = cluster_id;
            }
            (bootstrap, identity, true)
        }
    };
    info!(
        member = cfg.my_id.unwrap_or(1),
        cluster = format_args!("{:016x}", identity.cluster_id),
        incarnation = format_args!("{:016x}", identity.incarnation),
        mode = %identity.mode,
        bootstrap,
        "data directory identity"
    );
    Ok(Settled {
        identity,
        bootstrap,
        write_identity,
        fresh_join,
        net,
        election,
    })
}

/// raft's settings for this server: its timing and, for a new ensemble, the initial members.
fn raft_config(cfg: &Config, is_ensemble: bool, settled: &Settled) -> consensus::Config {
    let my_id = cfg.my_id.unwrap_or(1);
    let mut raft_cfg = consensus::Config::standalone(cfg.raft_dir());
    raft_cfg.id = my_id;
    if is_ensemble {
        let (tick, election, heartbeat) = cfg.raft_timing();
        raft_cfg.tick = tick;
        raft_cfg.election_tick = election as usize;
        raft_cfg.max_election_tick = cfg.raft_max_election_ticks() as usize;
        raft_cfg.heartbeat_tick = heartbeat as usize;
        // Only a member of a new ensemble bootstraps; one that joins (or resumes) lists no
        // one, so it waits for the leader instead of starting a group of its own.
        raft_cfg.voters = if settled.bootstrap {
            cfg.voters()
        } else {
            Vec::new()
        };
        raft_cfg.fresh_join = settled.fresh_join;
        raft_cfg.import_join = cfg
            .raft_dir()
            .join(crate::zk_import::IMPORT_JOIN_MARKER)
            .exists();
        raft_cfg.learners = if settled.bootstrap {
            cfg.observers()
        } else {
            Vec::new()
        };
    } else {
        raft_cfg.voters = vec![my_id];
    }
    raft_cfg
}

/// Starts the raft thread on the opened log (with `Runner::Task`, the raft loop on a task).
/// Raft hands its events straight to the core's event queue (unbounded, as raft must never wait
/// on the core: heartbeats and votes go out from the same thread).
async fn open_raft(
    cfg: &Config,
    is_ensemble: bool,
    store: Option<consensus::storage::LogStore>,
    settled: &Settled,
    runner: Runner,
) -> anyhow::Result<Opened> {
    let raft_cfg = raft_config(cfg, is_ensemble, settled);
    let transport: Box<dyn consensus::Transport> = match settled.net.as_ref() {
        Some(net) => Box::new(net.transport()),
        None => Box::new(consensus::NoPeers),
    };
    let (events_tx, events) = mpsc::unbounded_channel::<consensus::Event>();
    let sink = Box::new(move |ev| events_tx.send(ev).is_ok());
    let started = match runner {
        Runner::Thread => tokio::task::spawn_blocking(move || {
            consensus::start_opened(raft_cfg, store, transport, sink)
        })
        .await?
        .context("opening the raft log")?,
        #[cfg(feature = "testing")]
        Runner::Task => {
            let (started, stepper) = tokio::task::spawn_blocking(move || {
                consensus::start_stepped(raft_cfg, store, transport, sink)
            })
            .await?
            .context("opening the raft log")?;
            tokio::spawn(stepper.run());
            started
        }
    };
    Ok(Opened { started, events })
}

/// The tree as of the newest snapshot raft kept (empty without one), read a piece at a time.
fn recover_tree(
    cfg: &Config,
    snapshot: Option<consensus::ScannedSnapshot>,
) -> anyhow::Result<Recovered> {
    let started = std::time::Instant::now();
    let (tree, applied, term) = match snapshot {
        Some(snap) => {
            let tree = cfg
                .tree_from_saved_snapshot(&snap)
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
    Ok(Recovered {
        tree,
        applied,
        term,
        took: started.elapsed(),
    })
}

/// The core task, running, and what the listener hands each connection.
struct Running {
    core_tx: mpsc::Sender<CoreMsg>,
    core: JoinHandle<()>,
    params: Arc<ConnParams>,
    latency: Arc<crate::latency::Latency>,
    snap_load_took: std::time::Duration,
}

/// Spawns the core task over the recovered tree, and (on an ensemble member) the tasks that serve
/// other members' forward links.
fn spawn_core(
    cfg: &Arc<Config>,
    raft: &consensus::Handle,
    net: Option<&consensus::PeerNet>,
    recovered: Recovered,
    events: mpsc::UnboundedReceiver<consensus::Event>,
    wall: WallClock,
) -> Running {
    let (core_tx, core_rx) = mpsc::channel(64 * 1024);
    let ensemble = net.map(|n| crate::core::Ensemble::new(n.clone(), core_tx.clone()));
    let is_ensemble = ensemble.is_some();
    let core = Core::new(
        cfg.clone(),
        recovered.tree,
        raft.clone(),
        recovered.applied,
        recovered.term,
        ensemble,
        wall,
    );
    let latency = core.latency();
    // ZooKeeper's start-up summaries (FileTxnSnapLog.restore): the snapshot's load, then the
    // log's replay (`replay`).
    latency.startup_snap_load.record_ms(recovered.took);
    if let Some(net) = net {
        crate::forward::serve_followers(net.clone(), raft.clone(), core_tx.clone());
    }
    let params = Arc::new(ConnParams {
        max_frame: cfg.jute_max_buffer,
        four_letter_words: cfg.four_letter_words.clone(),
        response_sizes: core.response_sizes(),
        throttle: Throttle::new(cfg.global_outstanding_limit),
        latency: latency.clone(),
        counters: core.client_port_counters(),
    });
    // A member's core logs under its id, so that the members of an in-process ensemble (the
    // tests) can be told apart; a standalone server has no span.
    let span = if is_ensemble {
        tracing::info_span!("member", id = cfg.my_id.unwrap_or(1))
    } else {
        tracing::Span::none()
    };
    let core = tokio::spawn(tracing::Instrument::instrument(
        core.run(core_rx, events),
        span,
    ));
    Running {
        core_tx,
        core,
        params,
        latency,
        snap_load_took: recovered.took,
    }
}

/// Waits for the core to apply the log up to `replay_to`, before anyone can connect.
async fn replay(running: &Running, replay_to: u64) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let (tx, rx) = oneshot::channel();
    running
        .core_tx
        .send(CoreMsg::WaitApplied {
            index: replay_to,
            reply: tx,
        })
        .await?;
    rx.await.context("core stopped during replay")?;
    info!(applied = replay_to, "log replayed");
    let latency = &running.latency;
    latency
        .db_init
        .record_ms(running.snap_load_took + started.elapsed());
    // The transactions applied so far: clients cannot connect yet, so all were replayed (a new
    // term's no-op entry is none).
    let replayed = latency.applied_txns();
    if replayed > 0 {
        latency.startup_txns_load.record_ms(started.elapsed());
        latency.startup_txns_loaded.record(replayed);
    }
    Ok(())
}

/// The client ports, open.
struct Listening {
    addr: SocketAddr,
    secure_addr: Option<SocketAddr>,
    accept: Vec<JoinHandle<()>>,
}

/// Opens the client port and, with `secureClientPort`, the secure one, each with its accept
/// loop. The plaintext port takes TLS too with `client.portUnification`.
async fn listen(
    cfg: &Arc<Config>,
    running: &Running,
    tls: Option<Arc<ClientPortTls>>,
) -> anyhow::Result<Listening> {
    let bind = SocketAddr::new(cfg.client_port_address, cfg.client_port);
    let listener = TcpListener::bind(bind)
        .await
        .with_context(|| format!("binding the client port {bind}"))?;
    let addr = listener.local_addr()?;
    let secure = match (&tls, cfg.client_tls.secure_port) {
        (Some(tls), Some(port)) => {
            let ip = cfg
                .client_tls
                .secure_address
                .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
            let bind = SocketAddr::new(ip, port);
            let listener = TcpListener::bind(bind)
                .await
                .with_context(|| format!("binding the secure client port {bind}"))?;
            Some((listener, tls.clone()))
        }
        _ => None,
    };
    let secure_addr = match &secure {
        Some((l, _)) => Some(l.local_addr()?),
        None => None,
    };
    let unified = cfg.client_tls.port_unification;
    info!(%addr, secure = ?secure_addr, unified, data_dir = %cfg.data_dir.display(), "serving ZooKeeper clients");
    // Connection ids are unique across both ports: the core keys its connections by them.
    let ids = Arc::new(AtomicU64::new(1));
    let plain_port = match (&tls, unified) {
        (Some(tls), true) => Port::Unified(tls.clone()),
        _ => Port::Plain,
    };
    let mut accept = vec![tokio::spawn(accept_loop(
        listener,
        running.core_tx.clone(),
        cfg.clone(),
        running.params.clone(),
        plain_port,
        ids.clone(),
    ))];
    if let Some((listener, tls)) = secure {
        accept.push(tokio::spawn(accept_loop(
            listener,
            running.core_tx.clone(),
            cfg.clone(),
            running.params.clone(),
            Port::Secure(tls),
            ids,
        )));
    }
    Ok(Listening {
        addr,
        secure_addr,
        accept,
    })
}

/// Opens the raft directory's log if one was ever created (`None`: no store yet). The store stays
/// open and is handed to raft, so a restart opens RocksDB once.
fn open_log(raft_dir: &std::path::Path) -> anyhow::Result<Option<consensus::storage::LogStore>> {
    let db = raft_dir.join("raftdb");
    if !db.join("CURRENT").exists() {
        return Ok(None);
    }
    let store = consensus::storage::LogStore::open(&db)
        .with_context(|| format!("opening the raft log in {}", db.display()))?;
    Ok(Some(store))
}

/// Whether an opened store holds a log to resume. A member that joined empty and has not received
/// its first snapshot yet holds no log, but it did join: its store records that (`rejoining`), and
/// with it any vote it cast. It resumes, still abstaining until caught up, instead of being refused
/// as a member whose log is gone.
fn log_is_initialized(store: &consensus::storage::LogStore) -> bool {
    store.is_initialized() || store.is_rejoining()
}

/// Binds this member's peer port (its server line's host and peerPort) for the raft and forward
/// links.
async fn bind_peer_port(
    cfg: &Config,
    cluster_id: u64,
    initialized: bool,
    security: &consensus::net::PeerSecurity,
) -> anyhow::Result<consensus::PeerNet> {
    let (host, port) = cfg
        .peer_listen_host()
        .context("this server has no server.N line (myid) in the ensemble")?;
    let listen = tokio::net::lookup_host((host.as_str(), port))
        .await
        .with_context(|| format!("resolving this server's peer address {host}:{port}"))?
        .next()
        .with_context(|| format!("{host} resolves to no address"))?;
    let mut ncfg = consensus::NetConfig::new(cfg.my_id.unwrap_or(1), cluster_id, listen);
    ncfg.fingerprint = identity::fingerprint_of(cfg);
    ncfg.peers = cfg.peer_addresses();
    ncfg.security = security.clone();
    // A snapshot from a peer that would not restore closes its link instead of reaching raft
    // (where it would replace this member's state, then stop the core): restored into a
    // throwaway tree first, at the cost of the memory of a second tree for a moment.
    let check_cfg = cfg.clone();
    ncfg.check_snapshot = Some(consensus::net::SnapshotCheck(std::sync::Arc::new(
        move |data: &[u8]| {
            check_cfg
                .tree_from_snapshot(data)
                .map(drop)
                .map_err(|e| e.to_string())
        },
    )));
    // A member restarted at once may find its old links still closing: retry a little.
    let mut tries = 0;
    let net = loop {
        match consensus::PeerNet::bind(ncfg.clone()).await {
            Ok(net) => break net,
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && tries < 50 => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => {
                return Err(e).with_context(|| format!("binding the peer port {listen}"));
            }
        }
    };
    net.set_local_info(consensus::net::LocalInfo {
        initialized,
        last_index: 0,
    });
    info!(addr = %net.local_addr(), peers = ?cfg.peer_addresses(), "peer port bound");
    Ok(net)
}

/// A member with no data asks its peers whether the ensemble already exists (see
/// `identity::decide_fresh`): whether to bootstrap a new one, and the cluster id to use.
async fn ask_peers(cfg: &Config, net: &consensus::PeerNet) -> anyhow::Result<(bool, u64, bool)> {
    let started = std::time::Instant::now();
    let mut last_log = started;
    loop {
        let mut answers = Vec::new();
        // Whether every member that has a log holds only the bootstrap entry: a group born just
        // now, which this member joins without ever having held data.
        let mut at_birth = true;
        for (id, _) in cfg.peer_addresses() {
            match tokio::time::timeout(std::time::Duration::from_secs(2), net.probe(id)).await {
                Ok(Ok(info)) => answers.push({
                    if info.initialized && info.last_index > consensus::storage::BOOTSTRAP_INDEX {
                        at_birth = false;
                    }
                    PeerAnswer {
                        id: info.id,
                        cluster_id: info.cluster_id,
                        initialized: info.initialized,
                    }
                }),
                Ok(Err(e)) => tracing::debug!(peer = id, error = %e, "peer did not answer"),
                Err(_) => tracing::debug!(peer = id, "peer did not answer in time"),
            }
        }
        match identity::decide_fresh(cfg, &answers) {
            Fresh::Bootstrap => {
                info!(
                    answered = answers.len(),
                    "no member has a log yet: bootstrapping the ensemble"
                );
                return Ok((true, identity::cluster_id_of(cfg), false));
            }
            Fresh::Join { cluster_id } => {
                info!("the ensemble already has a log: joining it as an empty member, to catch up from the leader");
                return Ok((false, cluster_id, at_birth));
            }
            Fresh::Refuse(why) => anyhow::bail!("{why}"),
            Fresh::Wait => {
                if last_log.elapsed() >= std::time::Duration::from_secs(5) {
                    last_log = std::time::Instant::now();
                    info!(
                        answered = answers.len(),
                        waited_s = started.elapsed().as_secs(),
                        "waiting for a majority of the voters to answer before bootstrapping"
                    );
                }
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
        }
    }
}

/// Keeps what probes and handshakes report about this member current.
async fn publish_local_info(net: consensus::PeerNet, raft: consensus::Handle) {
    let mut every = tokio::time::interval(std::time::Duration::from_millis(500));
    while !raft.is_stopped() {
        every.tick().await;
        net.set_local_info(consensus::net::LocalInfo::from_status(&raft.status()));
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

/// One client port's accept loop. `maxClientCnxns` counts per port, as each of ZooKeeper's
/// connection factories counts its own.
async fn accept_loop(
    listener: TcpListener,
    core_tx: mpsc::Sender<CoreMsg>,
    cfg: Arc<Config>,
    params: Arc<ConnParams>,
    port: Port,
    next_id: Arc<AtomicU64>,
) {
    let per_ip = Arc::new(PerIp::default());
    // ZooKeeper's Netty factory counts every connection its plaintext port accepts (on a
    // unified port before it knows whether TLS follows).
    let count_non_mtls = cfg.client_tls.netty && !port.is_secure();
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
        if count_non_mtls {
            let c = &params.counters;
            crate::stats::ClientPortCounters::bump(if remote.ip().is_loopback() {
                &c.non_mtls_local
            } else {
                &c.non_mtls_remote
            });
        }
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        let core_tx = core_tx.clone();
        let params = params.clone();
        let per_ip = per_ip.clone();
        let port = port.clone();
        tokio::spawn(async move {
            client_tls::serve(stream, remote, id, core_tx, params, port).await;
            per_ip.remove(remote.ip());
        });
    }
}

#[cfg(test)]
mod tests {
    use super::{log_is_initialized, open_log};
    use consensus::storage::LogStore;

    fn log_initialized(dir: &std::path::Path) -> bool {
        open_log(dir)
            .unwrap()
            .as_ref()
            .is_some_and(log_is_initialized)
    }

    /// BUGS.md P5: a member that joined empty (its data wiped) and was stopped before its first
    /// snapshot holds no entry, only the `rejoining` mark. Its store must count as a log, or start-up
    /// refuses it at every restart as a member whose log is gone.
    #[test]
    fn a_store_that_only_records_its_empty_join_counts_as_a_log() {
        let dir = tempfile::tempdir().unwrap();
        assert!(open_log(dir.path()).unwrap().is_none(), "no raftdb at all");

        drop(LogStore::open(&dir.path().join("raftdb")).unwrap());
        assert!(
            !log_initialized(dir.path()),
            "an opened but never used store is no log"
        );

        let mut store = LogStore::open(&dir.path().join("raftdb")).unwrap();
        store.set_rejoining(true).unwrap();
        drop(store);
        assert!(
            log_initialized(dir.path()),
            "the empty join's mark is a log to resume"
        );

        let mut store = LogStore::open(&dir.path().join("raftdb")).unwrap();
        store.set_rejoining(false).unwrap();
        drop(store);
        assert!(
            !log_initialized(dir.path()),
            "without the mark and without entries: no log"
        );
    }
}
