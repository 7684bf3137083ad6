//! Creates the directories a server keeps its data in, owner-only (`consensus::private_fs`:
//! directories 0700, files 0600), and warns about ones the operator made that others can open.
//! Their contents are secret: session passwords (in CreateSession log entries and in snapshots)
//! and digest hashes (in ACLs). paddock does not change the mode of a directory it did not create,
//! so the warning names the command that would.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::config::Config;

/// Creates dataDir, dataLogDir and the raft directory under them where missing (0700 each), after
/// warning about each of dataDir and dataLogDir that already exists with group or other
/// permission bits.
pub fn prepare(cfg: &Config) -> anyhow::Result<()> {
    for dir in top_dirs(cfg) {
        if let Some(mode) = open_to_others(&dir) {
            tracing::warn!(
                dir = %dir.display(),
                mode = format_args!("{mode:o}"),
                "this data directory can be opened by other users, and it holds session passwords \
                 and digest hashes; run `chmod 700 {}`",
                dir.display()
            );
        }
    }
    consensus::private_fs::create_dir_all(&cfg.data_dir)
        .with_context(|| format!("creating dataDir {}", cfg.data_dir.display()))?;
    let raft = cfg.raft_dir();
    consensus::private_fs::create_dir_all(&raft)
        .with_context(|| format!("creating {}", raft.display()))
}

fn top_dirs(cfg: &Config) -> Vec<PathBuf> {
    let mut dirs = vec![cfg.data_dir.clone()];
    if let Some(log) = &cfg.data_log_dir {
        if *log != cfg.data_dir {
            dirs.push(log.clone());
        }
    }
    dirs
}

/// The permission bits of an existing directory when any of them is for group or others. Any
/// bit counts, execute included: with `x` alone a user can open files whose names are known,
/// and paddock's names are.
fn open_to_others(dir: &Path) -> Option<u32> {
    let mode = std::fs::metadata(dir).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then_some(mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_group_or_other_bit_counts() {
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("d");
        std::fs::create_dir(&d).unwrap();
        for (mode, open) in [(0o700, None), (0o750, Some(0o750)), (0o701, Some(0o701))] {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(open_to_others(&d), open, "{mode:o}");
        }
        assert_eq!(open_to_others(&root.path().join("missing")), None);
    }
}
