//! Owner-only files and directories. What paddock keeps on disk is secret at rest: session
//! passwords ride in CreateSession log entries and in snapshots, and ACLs hold digest hashes. So
//! every directory paddock creates is 0700 and every file 0600, set at creation (`mkdir`/`open`
//! modes) rather than left to the process umask: the umask can only take bits away from these,
//! never add any. Modes of what already exists are left alone (a directory the operator made is
//! theirs to set; start-up warns when a data directory is readable by others).

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// The mode of every directory paddock creates.
pub const DIR_MODE: u32 = 0o700;
/// The mode of every file paddock creates.
pub const FILE_MODE: u32 = 0o600;

/// `fs::create_dir_all`, each directory it creates 0700 and durable: the directory holding each
/// new one is fsynced after it, so a power loss cannot take back a directory whose files were
/// then written and synced (the log's, the snapshots').
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    if path.is_dir() {
        return Ok(());
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir_all(parent)?;
    }
    match DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => {}
        // Made meanwhile by another thread or process: theirs to sync.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => return Ok(()),
        Err(e) => return Err(e),
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)?.sync_all()
}

/// `OpenOptions::new()` whose files, when created, are 0600.
pub fn open_options() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.mode(FILE_MODE);
    o
}

/// A new, empty file at `path`, 0600, for writing; a file already there (a temporary left by a
/// crash, perhaps from a paddock that did not set modes) is removed first, so the new one cannot
/// inherit its mode.
pub fn create_file(path: &Path) -> io::Result<File> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    open_options().write(true).create_new(true).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn created_dirs_are_0700_and_files_0600() {
        let root = tempfile::tempdir().unwrap();
        let deep = root.path().join("a/b");
        create_dir_all(&deep).unwrap();
        assert_eq!(mode(&root.path().join("a")), 0o700);
        assert_eq!(mode(&deep), 0o700);
        let f = deep.join("f");
        create_file(&f).unwrap();
        assert_eq!(mode(&f), 0o600);
    }

    #[test]
    fn a_stale_file_is_replaced_not_reused() {
        let root = tempfile::tempdir().unwrap();
        let f = root.path().join("x.tmp");
        std::fs::write(&f, b"old").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        create_file(&f).unwrap();
        assert_eq!(mode(&f), 0o600);
        assert_eq!(std::fs::read(&f).unwrap(), b"");
    }

    #[test]
    fn an_existing_dir_keeps_its_mode() {
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("mine");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        create_dir_all(&d.join("sub")).unwrap();
        assert_eq!(mode(&d), 0o755);
        assert_eq!(mode(&d.join("sub")), 0o700);
    }
}
