//! The way back to ZooKeeper: paddock's state as a ZooKeeper 3.9 snapshot, which ZooKeeper loads
//! as `version-2/snapshot.<zxid>` in a dataDir or through its AdminServer's `restore`.
//! `paddock export --data-dir DIR --out FILE` writes it offline from a stopped server's data
//! directory (its newest snapshot and the log after it); the AdminServer's `snapshot` command
//! streams it from a running one (`http/admin_snapshot.rs`). Both encode a `SnapshotView` with
//! `zk_snapshot`.
//!
//! What the snapshot holds: the sessions (id and timeout; ZooKeeper derives a session's password
//! from its id, so a session paddock created, whose password is random, cannot be resumed in
//! ZooKeeper, while one imported from ZooKeeper can), an ACL cache numbered from 1 in the order
//! nodes first use each list, every node depth first with its stored stat (cversion is the
//! stored count of child creates on both sides), and ZooKeeper's trailers: the tree digest as
//! of the snapshot's zxid (ZooKeeper compares it when it loads the file) and the last
//! processed zxid (which its `restore` requires).

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use clap::Args;
use wire::Acl;
use zk_format::snapshot::{SnapshotWriter, StatPersisted};

use crate::config::Config;

/// `ZooKeeper`'s snapshot of `view`, uncompressed (its `restore` reads only that).
pub fn zk_snapshot(view: &znode_tree::SnapshotView) -> Vec<u8> {
    let sessions: Vec<(i64, i32)> = view
        .sessions()
        .iter()
        .map(|s| (s.id, s.timeout_ms))
        .collect();
    // The ACL lists, numbered by first use; lists are interned, so one address is one list.
    let mut by_addr: HashMap<usize, i64> = HashMap::new();
    let mut cache: BTreeMap<i64, Vec<Acl>> = BTreeMap::new();
    view.for_each_node(|_, _, acl, _, _| {
        let addr = acl.as_ptr() as usize;
        if !by_addr.contains_key(&addr) {
            let idx = by_addr.len() as i64 + 1;
            by_addr.insert(addr, idx);
            cache.insert(idx, acl.to_vec());
        }
        ControlFlow::Continue(())
    });
    let guess = view.data_size() as usize + view.node_count() * 100 + 1024;
    let mut w = SnapshotWriter::new(&sessions, &cache, guess);
    let mut digest = 0u64;
    view.for_each_node(|path, data, acl, s, _| {
        let stat = StatPersisted {
            czxid: s.czxid,
            mzxid: s.mzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            version: s.version,
            cversion: s.cversion,
            aversion: s.aversion,
            ephemeral_owner: s.ephemeral_owner,
            pzxid: s.pzxid,
        };
        let zk_path = if path == "/" { "" } else { path };
        let idx = by_addr[&(acl.as_ptr() as usize)];
        w.node(zk_path, data, idx, &stat);
        digest = digest.wrapping_add(zk_format::digest::node_digest(zk_path, data, &stat));
        ControlFlow::Continue(())
    });
    w.finish(view.last_zxid(), digest as i64)
}

/// ZooKeeper's name for a snapshot at `zxid`.
pub fn zk_name(zxid: i64) -> String {
    format!("snapshot.{:x}", zxid)
}

#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// The stopped server's data directory (its dataDir; with --config, the config's).
    #[arg(long, value_name = "DIR", conflicts_with = "config")]
    pub data_dir: Option<PathBuf>,

    /// The server's zoo.cfg (dataDir and dataLogDir from it).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Where to write the snapshot: a file, or a directory (such as a ZooKeeper dataDir's
    /// version-2/) that receives snapshot.<zxid>.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// The tree a stopped server's data directory holds: its newest snapshot and every committed
/// entry after it, applied as the server applies them.
pub fn tree_of_data_dir(cfg: &Config) -> Result<znode_tree::Tree, String> {
    let raft_dir = cfg.raft_dir();
    let db = raft_dir.join("raftdb");
    if !db.join("CURRENT").exists() {
        return Err(format!("{}: no paddock raft log here", raft_dir.display()));
    }
    let store = consensus::storage::LogStore::open(&db).map_err(|e| {
        format!(
            "opening {} (is the server still running? export reads a stopped server's data): {e}",
            db.display()
        )
    })?;
    let snap_dir = raft_dir.join("snapshots");
    let last = store.last();
    let snap = consensus::snapshot_file::load_newest(&snap_dir, last)
        .map_err(|e| format!("reading the snapshots in {}: {e}", snap_dir.display()))?;
    let (mut tree, applied) = match snap {
        Some(s) => (
            cfg.tree_from_saved_snapshot(&s)
                .map_err(|e| format!("restoring the snapshot at {}: {e}", s.index))?,
            s.index,
        ),
        None => (znode_tree::Tree::new(cfg.tree_config()), store.first() - 1),
    };
    // A group of one commits all it has (its own vote); a member only what it knows committed.
    let to = if cfg.is_distributed() && !cfg.ignore_peers {
        store.hard_state().commit.min(last)
    } else {
        last
    };
    let mut next = applied + 1;
    while next <= to {
        let batch = raft::Storage::entries(
            &store,
            next,
            (to + 1).min(next + 1024),
            Some(64 << 20),
            raft::GetEntriesContext::empty(false),
        )
        .map_err(|e| format!("reading log entry {next}: {e}"))?;
        if batch.is_empty() {
            break;
        }
        for e in &batch {
            apply_entry(cfg, &mut tree, e.index, &e.data)?;
            next = e.index + 1;
        }
    }
    Ok(tree)
}

/// One committed entry, as `core/apply.rs` applies it (a reconfig as `core/reconfig.rs`
/// decides it).
fn apply_entry(
    cfg: &Config,
    tree: &mut znode_tree::Tree,
    index: u64,
    data: &[u8],
) -> Result<(), String> {
    use znode_tree::{Entry, Txn};
    if data.is_empty() {
        return Ok(());
    }
    let entry =
        Entry::decode(data).map_err(|e| format!("log entry {index} does not decode: {e}"))?;
    let zxid = tree.zxid_at(index);
    if let Txn::Write(wire::Request::Reconfig(req)) = &entry.txn {
        let current = members_of_tree(cfg, tree);
        let decided = crate::reconfig::next_members(&current, req, cfg.standalone_enabled)
            .ok()
            .filter(|_| may_write_config(tree, &entry.auth));
        match decided {
            Some(servers) => {
                let set = Entry {
                    txn: Txn::SetConfig {
                        members: crate::reconfig::render(&servers),
                    },
                    ..entry.clone()
                };
                tree.apply(zxid, &set);
            }
            None => {
                tree.apply(zxid, &entry);
            }
        }
        return Ok(());
    }
    tree.apply(zxid, &entry);
    Ok(())
}

/// The membership `/zookeeper/config` holds, or zoo.cfg's before one was written (as
/// `Core::current_members`).
fn members_of_tree(cfg: &Config, tree: &znode_tree::Tree) -> crate::reconfig::Members {
    let text = read_node(tree, "/zookeeper/config", &[])
        .and_then(|d| String::from_utf8(d).ok())
        .unwrap_or_default();
    let members = crate::reconfig::Members::parse(&text);
    if members.servers.is_empty() {
        crate::reconfig::Members {
            servers: cfg.servers.clone(),
            version: members.version,
        }
    } else {
        members
    }
}

fn read_node(tree: &znode_tree::Tree, path: &str, auth: &[wire::Id]) -> Option<Vec<u8>> {
    let ctx = znode_tree::ReadCtx {
        session_id: 0,
        auth,
    };
    let req = wire::Request::GetData(wire::ops::data::GetDataRequest {
        path: path.into(),
        watch: false,
    });
    match tree.read(&ctx, &req) {
        Ok(wire::Response::GetData(r)) => Some(r.data.unwrap_or_default()),
        _ => None,
    }
}

/// WRITE on `/zookeeper/config` for `auth` (as `Core::may_write_config`).
fn may_write_config(tree: &znode_tree::Tree, auth: &[wire::Id]) -> bool {
    let ctx = znode_tree::ReadCtx {
        session_id: 0,
        auth,
    };
    let req = wire::Request::GetAcl(wire::ops::get_acl::GetAclRequest {
        path: "/zookeeper/config".into(),
    });
    match tree.read(&ctx, &req) {
        Ok(wire::Response::GetAcl(r)) => {
            znode_tree::acl::allowed(tree.config(), &r.acl, wire::perms::WRITE, auth)
        }
        _ => false,
    }
}

fn config_of(args: &ExportArgs) -> Result<Config, String> {
    match (&args.config, &args.data_dir) {
        (Some(cfg), _) => Config::from_zoo_cfg(cfg).map_err(|e| e.to_string()),
        (None, Some(dir)) => crate::cli::ServeArgs {
            data_dir: Some(dir.clone()),
            ..Default::default()
        }
        .into_config()
        .map_err(|e| e.to_string()),
        (None, None) => Err("give --data-dir DIR or --config zoo.cfg".into()),
    }
}

/// Writes `bytes` to `path` durably (a temporary file, fsync, rename).
fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("paddock-tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// `paddock export`; the process's exit status.
pub fn run(args: &ExportArgs) -> i32 {
    match run_inner(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("paddock export: {e}");
            1
        }
    }
}

fn run_inner(args: &ExportArgs) -> Result<(), String> {
    let cfg = config_of(args)?;
    let started = std::time::Instant::now();
    let tree = tree_of_data_dir(&cfg)?;
    let view = tree.snapshot_view();
    let bytes = zk_snapshot(&view);
    let out = if args.out.is_dir() {
        args.out.join(zk_name(view.last_zxid()))
    } else {
        args.out.clone()
    };
    write_file(&out, &bytes).map_err(|e| format!("writing {}: {e}", out.display()))?;
    println!(
        "exported: {} ({} nodes, {} sessions, {:.1} MB, last zxid {:#x}, in {:.2} s); ZooKeeper \
         loads it as version-2/{} in its dataDir, or through POST /commands/restore",
        out.display(),
        view.node_count(),
        view.sessions().len(),
        bytes.len() as f64 / 1e6,
        view.last_zxid(),
        started.elapsed().as_secs_f64(),
        zk_name(view.last_zxid())
    );
    Ok(())
}
