//! Who a data directory belongs to: the cluster it was created for, the member it was created as,
//! and that member's incarnation. Kept in `<raft dir>/cluster` beside the log.
//!
//! Raft's safety rests on every member keeping its log and its vote. A data directory used by the
//! wrong server breaks that silently, so start-up checks it before Raft runs (hazard H1 of the
//! ensemble review):
//! - a standalone data dir started with an ensemble config would elect itself alone, a second
//!   group beside the real one: refused;
//! - a data dir created for another member id, or another cluster, would bring foreign entries
//!   and votes into this one: refused (the peer handshake also refuses a foreign cluster id);
//! - a wiped member (no data) whose peers already have a log must not bootstrap a fresh group,
//!   which would forget its vote and could help elect a leader that lacks acknowledged writes: it
//!   joins as an empty member and catches up from the leader instead (`decide_fresh`).
//!
//! The cluster id is derived from the initial membership (ids, hosts, peer ports, roles), so the
//! members of a new ensemble agree on it without talking; it never changes afterwards, also when
//! reconfig changes the membership. The incarnation is random per creation of a data dir, so logs
//! tell a re-created member from the one it replaces.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::config::{Config, PeerRole};

/// The file's name inside the raft directory.
pub const FILE_NAME: &str = "cluster";
/// The identity of a data directory being created: written before the raft log is, and renamed
/// to `FILE_NAME` once the log's first record is durable. A crash in between leaves it alone
/// beside a log it wrote, or none: the next start resumes that log with it, or starts afresh
/// (with the file written after the log, a crash in between left a log without an identity, which
/// an ensemble member refused as a standalone server's).
pub const CREATING_FILE_NAME: &str = "cluster.creating";

/// What the `cluster` file records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub cluster_id: u64,
    pub member_id: u64,
    pub incarnation: u64,
    pub mode: Mode,
}

/// Whether the data dir was created by a standalone server or an ensemble member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Standalone,
    Ensemble,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Standalone => "standalone",
            Mode::Ensemble => "ensemble",
        })
    }
}

/// The cluster id a configuration implies: FNV-1a over its sorted `id:host:peerPort:role` lines
/// (a standalone server hashes only its mode). Stable across Rust versions and machines, unlike
/// `std`'s hasher.
pub fn cluster_id_of(cfg: &Config) -> u64 {
    let mut text = String::new();
    if cfg.is_distributed() {
        for s in &cfg.servers {
            let role = match s.role {
                Some(PeerRole::Observer) => "observer",
                _ => "participant",
            };
            text.push_str(&format!("{}:{}:{}:{}\n", s.id, s.host, s.peer_port, role));
        }
    } else {
        text.push_str("standalone\n");
    }
    fnv1a(text.as_bytes())
}

/// A fingerprint of the settings that change what apply computes (`TreeConfig`): members whose
/// fingerprints differ would build different trees from one log, so the peer handshake refuses
/// them to each other.
///
/// The super digest is not among them, though `TreeConfig` carries it: it decides only whether
/// an `addauth` on this member's connection gains `super`, and the ids an entry carries are fixed
/// by the proposer, so no member applies differently for it. It was in the text until Dec 2026,
/// which made the fingerprint, answered to any prober, an offline oracle for the super password
/// (one SHA-1 and one FNV per guess). The text keeps `super_digest=None` so that members without a
/// super digest still agree with older members during a rolling upgrade.
pub fn fingerprint_of(cfg: &Config) -> u64 {
    let t = cfg.tree_config();
    let text = format!(
        "extended_types={}\nenforce_quota={}\nskip_acl={}\nsuper_digest=None\nlet_any_sasl_user_do_x={:?}\n",
        t.extended_types, t.enforce_quota, t.skip_acl, t.let_any_sasl_user_do_x
    );
    fnv1a(text.as_bytes())
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Identity {
    /// A new identity for this config's server.
    pub fn new_for(cfg: &Config) -> Identity {
        Identity {
            cluster_id: cluster_id_of(cfg),
            member_id: cfg.my_id.unwrap_or(1),
            incarnation: rand::random::<u64>() | 1,
            mode: if cfg.is_distributed() {
                Mode::Ensemble
            } else {
                Mode::Standalone
            },
        }
    }

    pub fn path(raft_dir: &Path) -> PathBuf {
        raft_dir.join(FILE_NAME)
    }

    /// Reads the file; `Ok(None)` when there is none.
    pub fn read(raft_dir: &Path) -> Result<Option<Identity>, String> {
        Identity::read_file(&Identity::path(raft_dir))
    }

    /// Reads the identity of a creation a crash cut short (`CREATING_FILE_NAME`), if any.
    pub fn read_creating(raft_dir: &Path) -> Result<Option<Identity>, String> {
        Identity::read_file(&raft_dir.join(CREATING_FILE_NAME))
    }

    fn read_file(path: &Path) -> Result<Option<Identity>, String> {
        let path = path.to_path_buf();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("reading {}: {e}", path.display())),
        };
        Identity::parse(&text)
            .map(Some)
            .map_err(|why| format!("{}: {why}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Identity, String> {
        let (mut cluster, mut member, mut incarnation, mut mode) = (None, None, None, None);
        for line in text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| format!("bad line {line:?}"))?;
            let hex = || u64::from_str_radix(v.trim(), 16).map_err(|_| format!("bad {k} {v:?}"));
            match k.trim() {
                "cluster_id" => cluster = Some(hex()?),
                "incarnation" => incarnation = Some(hex()?),
                "member_id" => {
                    member = Some(
                        v.trim()
                            .parse::<u64>()
                            .map_err(|_| format!("bad member_id {v:?}"))?,
                    )
                }
                "mode" => {
                    mode = Some(match v.trim() {
                        "standalone" => Mode::Standalone,
                        "ensemble" => Mode::Ensemble,
                        other => return Err(format!("unknown mode {other:?}")),
                    })
                }
                _ => {} // later versions may add keys
            }
        }
        Ok(Identity {
            cluster_id: cluster.ok_or("no cluster_id")?,
            member_id: member.ok_or("no member_id")?,
            incarnation: incarnation.ok_or("no incarnation")?,
            mode: mode.ok_or("no mode")?,
        })
    }

    pub fn render(&self) -> String {
        format!(
            "# Written by paddock when this data directory was created; do not edit.\n\
             cluster_id={:016x}\nmember_id={}\nincarnation={:016x}\nmode={}\n",
            self.cluster_id, self.member_id, self.incarnation, self.mode
        )
    }

    /// Writes the file durably (temporary file, fsync, rename, fsync of the directory), and
    /// removes the one of the creation, if any.
    pub fn write(&self, raft_dir: &Path) -> std::io::Result<()> {
        self.write_as(raft_dir, FILE_NAME)?;
        match std::fs::remove_file(raft_dir.join(CREATING_FILE_NAME)) {
            Ok(()) => std::fs::File::open(raft_dir)?.sync_all(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Writes the identity of a data directory about to be created (`CREATING_FILE_NAME`),
    /// durably, before its raft log is written.
    pub fn write_creating(&self, raft_dir: &Path) -> std::io::Result<()> {
        self.write_as(raft_dir, CREATING_FILE_NAME)
    }

    fn write_as(&self, raft_dir: &Path, name: &str) -> std::io::Result<()> {
        use std::io::Write;
        let tmp = raft_dir.join(format!("{name}.tmp"));
        {
            let mut f = consensus::private_fs::create_file(&tmp)?;
            f.write_all(self.render().as_bytes())?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, raft_dir.join(name))?;
        std::fs::File::open(raft_dir)?.sync_all()
    }
}

/// What start-up does with a data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The data dir is this server's: carry on with its log.
    Resume(Identity),
    /// A data dir from before identities were recorded, holding a standalone server's log:
    /// record it as standalone and carry on.
    Adopt(Identity),
    /// No data: a standalone server bootstraps its group of one at once.
    Bootstrap(Identity),
    /// No data, ensemble config: ask the peers before bootstrapping (`decide_fresh`).
    AskPeers,
    /// Refuse to start, with the reason for the operator.
    Refuse(String),
}

/// Decides from the local facts alone. `log_initialized` is whether the raft store holds a log.
pub fn decide(cfg: &Config, stored: Option<Identity>, log_initialized: bool) -> Decision {
    let my_id = cfg.my_id.unwrap_or(1);
    let ensemble = cfg.is_distributed() && !cfg.ignore_peers;
    match stored {
        Some(id) => {
            if cfg.is_distributed() && id.member_id != my_id {
                return Decision::Refuse(format!(
                    "this data directory belongs to member {} (myid is {my_id}); each member needs its own dataDir",
                    id.member_id
                ));
            }
            match (id.mode, ensemble) {
                (Mode::Standalone, true) => Decision::Refuse(
                    "this data directory was created by a standalone server, but the config lists an ensemble: \
                     a standalone log cannot join an ensemble (it would elect itself alone and diverge). Start the \
                     ensemble on empty data directories, or run this one standalone"
                        .into(),
                ),
                (Mode::Ensemble, false) => Decision::Refuse(format!(
                    "this data directory belongs to member {} of an ensemble (cluster {:016x}), but the config is \
                     standalone: start it with its ensemble's config",
                    id.member_id, id.cluster_id
                )),
                _ if !log_initialized => Decision::Refuse(format!(
                    "{} names member {} of cluster {:016x}, but the raft log beside it is missing or empty: the \
                     member's vote and log are gone. Remove the whole data directory to rejoin as a new member",
                    FILE_NAME, id.member_id, id.cluster_id
                )),
                _ => Decision::Resume(id),
            }
        }
        None if log_initialized => {
            if ensemble {
                Decision::Refuse(
                    "this data directory holds a log from a standalone server (written before cluster identities \
                     were recorded), but the config lists an ensemble: start the ensemble on empty data directories"
                        .into(),
                )
            } else {
                Decision::Adopt(Identity::new_for(cfg))
            }
        }
        None if ensemble => Decision::AskPeers,
        None => Decision::Bootstrap(Identity::new_for(cfg)),
    }
}

/// What a peer said when asked (None: unreachable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerAnswer {
    pub id: u64,
    pub cluster_id: u64,
    pub initialized: bool,
}

/// The outcome of asking the peers, for a member with no data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fresh {
    /// Every voter that answered is empty too, and they are a majority with this one: a new
    /// ensemble. Bootstrap with the configured membership.
    Bootstrap,
    /// A peer already has a log: join without bootstrapping, catch up from the leader. The
    /// cluster id is the ensemble's (with reconfigEnabled it may differ from what this member's
    /// server lines imply: a member being added lists the current members plus itself).
    Join { cluster_id: u64 },
    /// Not enough voters answered to know: ask again.
    Wait,
    /// A peer belongs to another cluster.
    Refuse(String),
}

/// Decides for a member with no data from its peers' answers. Bootstrapping needs a majority of
/// the voters (this server included, when it votes) to be known empty, so a wiped member never
/// starts a new group while the old one is merely out of reach.
///
/// A member whose peers already have a log takes their cluster id when they all agree on one:
/// the server lines of a member added later (by reconfig, or by a rolling restart with a longer
/// server list) differ from the initial ones the id was derived from. Joining is safe for a
/// member without data: it holds no entries and no vote, and it counts for nothing until the
/// leader adds it (first as a learner, see `core/reconfig.rs`). A data directory keeps the id it
/// was created with whatever server list it is restarted with, so one from another cluster is
/// still refused by every peer's handshake.
pub fn decide_fresh(cfg: &Config, answers: &[PeerAnswer]) -> Fresh {
    let expected = cluster_id_of(cfg);
    let mut existing = answers.iter().filter(|a| a.initialized);
    if let Some(first) = existing.next() {
        if let Some(other) = existing.find(|a| a.cluster_id != first.cluster_id) {
            return Fresh::Refuse(format!(
                "members {} and {} belong to different clusters ({:016x}, {:016x})",
                first.id, other.id, first.cluster_id, other.cluster_id
            ));
        }
        return Fresh::Join {
            cluster_id: first.cluster_id,
        };
    }
    if let Some(a) = answers.iter().find(|a| a.cluster_id != expected) {
        return Fresh::Refuse(format!(
            "member {} belongs to cluster {:016x}, but this config describes cluster {expected:016x}: the server \
             lines differ between the members' configs",
            a.id, a.cluster_id
        ));
    }
    let voters = cfg.voters();
    let me = cfg.my_id.unwrap_or(0);
    let empty_voters = voters
        .iter()
        .filter(|v| **v == me || answers.iter().any(|a| a.id == **v))
        .count();
    if empty_voters * 2 > voters.len() {
        Fresh::Bootstrap
    } else {
        Fresh::Wait
    }
}
