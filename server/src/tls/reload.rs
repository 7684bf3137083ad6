//! The current TLS configurations, and their reload when the store files change
//! (`sslQuorumReloadCertFiles`, `client.certReload`).
//!
//! ```text
//!  files ──poll (1 s)──▶ changed? ──▶ load + build ──ok──▶ swap Arc ──▶ new handshakes
//!                                          └──err──▶ keep old, log, count, retry on next change
//! ```
//!
//! A change is any difference in a file's (size, mtime, ctime, inode, device), read through
//! symlinks: an in-place rewrite moves mtime and ctime, a rename over the file or a Kubernetes
//! secret update (a `..data` symlink swapped to a new directory) changes the inode. Polling
//! rather than inotify (which ZooKeeper's FileChangeWatcher uses) because inotify watches the
//! directory entry and misses a swap two symlinks up; four stat calls a second cost nothing.
//!
//! The watcher is a std thread, not a tokio task: loading decrypts (PBKDF2, thousands of
//! rounds) and reads files, blocking work that does not belong on a runtime worker, and the
//! raft thread that dials peers runs outside any runtime, so this type must not need one.
//!
//! A reload replaces only the `Arc`s handed out from now on; a connection keeps the config it
//! was made with, so open links are untouched.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use rustls::{ClientConfig, ServerConfig};

use super::configs::{client_port_server_config, quorum_client_config, server_config, Material};
use super::error::TlsError;
use super::settings::{ClientAuth, TlsSettings};

/// One build of everything a side needs.
#[derive(Debug, Clone)]
pub struct TlsConfigs {
    /// For dialling peers; `None` on the client port, which only accepts.
    pub client: Option<Arc<ClientConfig>>,
    pub server: Arc<ServerConfig>,
}

/// Which configurations to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// Peer links: a client config to dial and a server config requiring a certificate.
    Quorum,
    /// The client port: a server config with the settings' `clientAuth`.
    ClientPort,
}

/// The live TLS configurations of one side. Reading them is a read lock and an `Arc` clone.
/// Dropping this stops the watcher.
pub struct LiveTls {
    shared: Arc<Shared>,
    watcher: Option<Watcher>,
}

struct Shared {
    settings: TlsSettings,
    side: Side,
    current: RwLock<Arc<TlsConfigs>>,
    reloads: AtomicU64,
    failures: AtomicU64,
    last_error: Mutex<Option<String>>,
}

struct Watcher {
    // Dropping the sender wakes the thread, which then exits.
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl LiveTls {
    /// How often the watcher looks at the files.
    pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

    /// Loads the material and builds the peer-link configurations; any error stops here (the
    /// server must not start). With `poll`, a watcher thread reloads on change.
    pub fn start_quorum(
        settings: TlsSettings,
        poll: Option<Duration>,
    ) -> Result<LiveTls, TlsError> {
        LiveTls::start(settings, Side::Quorum, poll)
    }

    /// The same for the client port, asking clients for certificates as `clientAuth` says.
    pub fn start_client_port(
        settings: TlsSettings,
        poll: Option<Duration>,
    ) -> Result<LiveTls, TlsError> {
        LiveTls::start(settings, Side::ClientPort, poll)
    }

    fn start(
        settings: TlsSettings,
        side: Side,
        poll: Option<Duration>,
    ) -> Result<LiveTls, TlsError> {
        // Stamped before loading, so that a change made while loading is seen by the first poll.
        let stamps = stamps(&settings);
        let configs = build(&settings, side)?;
        let shared = Arc::new(Shared {
            settings,
            side,
            current: RwLock::new(Arc::new(configs)),
            reloads: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            last_error: Mutex::new(None),
        });
        let watcher = match poll {
            None => None,
            Some(every) => Some(spawn_watcher(shared.clone(), every, stamps)?),
        };
        Ok(LiveTls { shared, watcher })
    }

    pub fn settings(&self) -> &TlsSettings {
        &self.shared.settings
    }

    /// The configurations for the next connection.
    pub fn current(&self) -> Arc<TlsConfigs> {
        self.shared
            .current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The config to dial a peer with; `None` on the client port.
    pub fn client_config(&self) -> Option<Arc<ClientConfig>> {
        self.current().client.clone()
    }

    /// The config to accept a connection with.
    pub fn server_config(&self) -> Arc<ServerConfig> {
        self.current().server.clone()
    }

    /// Successful reloads since start.
    pub fn reload_count(&self) -> u64 {
        self.shared.reloads.load(Ordering::Relaxed)
    }

    /// Reloads that failed (the configurations in use stayed as they were).
    pub fn reload_failures(&self) -> u64 {
        self.shared.failures.load(Ordering::Relaxed)
    }

    /// Why the last reload failed, until one succeeds. Names keys and files, never a password.
    pub fn last_reload_error(&self) -> Option<String> {
        self.shared
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Loads and builds now, as the watcher does on a change (for an operator's explicit
    /// request); on error the configurations in use stay.
    pub fn reload_now(&self) -> Result<(), TlsError> {
        self.shared.reload()
    }
}

impl Drop for LiveTls {
    fn drop(&mut self) {
        if let Some(w) = self.watcher.as_mut() {
            drop(w.stop.take());
            if let Some(thread) = w.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

impl Shared {
    fn reload(&self) -> Result<(), TlsError> {
        match build(&self.settings, self.side) {
            Ok(configs) => {
                *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(configs);
                self.reloads.fetch_add(1, Ordering::Relaxed);
                *self
                    .last_error
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = None;
                tracing::info!(prefix = %self.settings.prefix, "TLS key and trust stores reloaded");
                Ok(())
            }
            Err(e) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                *self
                    .last_error
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(e.to_string());
                tracing::error!(
                    prefix = %self.settings.prefix,
                    error = %e,
                    "TLS reload failed; new connections keep the previous certificates"
                );
                Err(e)
            }
        }
    }
}

fn build(settings: &TlsSettings, side: Side) -> Result<TlsConfigs, TlsError> {
    let material = Material::load(settings)?;
    Ok(match side {
        Side::Quorum => TlsConfigs {
            client: Some(quorum_client_config(settings, &material)?),
            server: server_config(settings, &material, ClientAuth::Need)?,
        },
        Side::ClientPort => TlsConfigs {
            client: None,
            server: client_port_server_config(settings, &material)?,
        },
    })
}

/// What identifies a file's content without reading it; `None` when it cannot be stat'ed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
    dev: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp {
        len: m.len(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
        ino: m.ino(),
        dev: m.dev(),
    })
}

fn stamps(settings: &TlsSettings) -> Vec<(PathBuf, Option<Stamp>)> {
    settings
        .files()
        .into_iter()
        .map(|p| (p.to_path_buf(), stamp(p)))
        .collect()
}

fn spawn_watcher(
    shared: Arc<Shared>,
    every: Duration,
    mut seen: Vec<(PathBuf, Option<Stamp>)>,
) -> Result<Watcher, TlsError> {
    let (stop, stopped) = mpsc::channel::<()>();
    let prefix = shared.settings.prefix.clone();
    let thread = std::thread::Builder::new()
        .name("tls-reload".into())
        .spawn(move || loop {
            match stopped.recv_timeout(every) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
            let now = stamps(&shared.settings);
            if now == seen {
                continue;
            }
            let changed: Vec<String> = now
                .iter()
                .zip(&seen)
                .filter(|(a, b)| a != b)
                .map(|((p, _), _)| p.display().to_string())
                .collect();
            tracing::info!(
                prefix = %shared.settings.prefix,
                files = %changed.join(","),
                "TLS store files changed; reloading"
            );
            // Remembered whatever the outcome: a failed load is retried on the next change,
            // not every second (a half-written file is finished by a later write, which is a
            // change).
            seen = now;
            let _ = shared.reload();
        })
        .map_err(|e| TlsError::Build {
            prefix,
            reason: format!("cannot start the reload watcher thread: {e}"),
        })?;
    Ok(Watcher {
        stop: Some(stop),
        thread: Some(thread),
    })
}
