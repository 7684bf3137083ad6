//! ZooKeeper's dynamic configuration files: the membership kept beside zoo.cfg.
//!
//! Reading (at start): `dynamicConfigFile=<path>` in zoo.cfg names a file of `server.N` lines only;
//! the membership's version is the hex number after the file name's last dot
//! (`zoo.cfg.dynamic.100000000` is version 0x100000000; no such number: version 0). As in
//! ZooKeeper 3.9, that file may not hold a `version=` line, and with `dynamicConfigFile` set the
//! zoo.cfg itself may not hold `server.N` lines. Without the key, zoo.cfg's own `server.N` lines
//! are the membership and a `version=<hex>` line in it is its version (ZooKeeper's "backward
//! compatible" form). `group.*`/`weight.*` (hierarchical quorums) are refused in either file:
//! paddock's quorums are Raft majorities, so a config asking for other quorums cannot be honoured.
//! `zoo.cfg.dynamic.next` (ZooKeeper's proposed-but-uncommitted membership) is not read: after a
//! restart paddock's pending membership change comes back from its own log.
//!
//! Writing (each time a member applies a new membership, with reconfigEnabled, on an ensemble
//! started from a zoo.cfg; see `core/reconfig.rs`): `<zoo.cfg>.dynamic.<version hex>` gets the
//! membership's `server.N` lines, sorted as text and joined by newlines, no version line and no
//! final newline (byte for byte what ZooKeeper writes); then zoo.cfg is rewritten without its
//! `server.`/`group`/`weight`/`peerType`/`dynamicConfigFile` lines (and without `clientPort*`
//! when this member's line names a client address) and with `dynamicConfigFile=<absolute path>`
//! last, so a member restarted later reads the new membership. Both writes go to a temporary
//! file that is synced and renamed over the old one. Differences from ZooKeeper: the rewritten
//! zoo.cfg keeps its keys in their original order (ZooKeeper's come out in hash order; both drop
//! comments), and the `zoo.cfg.bak` copy of a zoo.cfg holding `server.N` lines is made when that
//! file is first rewritten rather than at every start.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::zoo_cfg::parse_properties;
use super::{ConfigError, ServerSpec};

/// Whether a key belongs to ZooKeeper's hierarchical quorums (`group.N`, `weight.N`).
pub(super) fn is_hierarchical_key(key: &str) -> bool {
    key.starts_with("group") || key.starts_with("weight")
}

pub(super) const HIERARCHICAL_REFUSED: &str =
    "hierarchical quorums (group/weight) are not supported: paddock's quorums are majorities of the participants";

/// The version a dynamic file's name carries: the hex number after its last dot, else 0.
pub fn version_from_file_name(path: &Path) -> i64 {
    let name = path.to_string_lossy();
    name.rsplit_once('.')
        .and_then(|(_, hex)| i64::from_str_radix(hex, 16).ok())
        .unwrap_or(0)
}

/// Reads a `dynamicConfigFile`: its servers (in id order) and its version.
pub(super) fn read_dynamic_file(path: &Path) -> Result<(Vec<ServerSpec>, i64), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut servers: Vec<ServerSpec> = Vec::new();
    for e in parse_properties(&text, path) {
        let invalid = |reason: String| ConfigError::InvalidValue {
            origin: e.origin.clone(),
            key: e.key.clone(),
            reason,
        };
        if e.key == "version" {
            return Err(invalid(
                "a dynamic config file holds no version line: its version is the hex number ending its name".into(),
            ));
        }
        if is_hierarchical_key(&e.key) {
            return Err(invalid(HIERARCHICAL_REFUSED.into()));
        }
        let Some(id) = e.key.strip_prefix("server.") else {
            return Err(invalid(
                "unrecognised parameter: a dynamic config file holds only server.N lines".into(),
            ));
        };
        let id: u64 = id
            .parse()
            .map_err(|_| invalid(format!("{id:?} is not a server id")))?;
        let spec = ServerSpec::parse(id, &e.value).map_err(invalid)?;
        servers.retain(|s| s.id != id);
        servers.push(spec);
    }
    servers.sort_by_key(|s| s.id);
    Ok((servers, version_from_file_name(path)))
}

/// The text of a dynamic file for a membership given as `/zookeeper/config` holds it: its
/// `server.N=...` lines sorted as text, joined by newlines, without the version.
pub fn dynamic_file_text(config_text: &str) -> String {
    let mut lines: Vec<&str> = config_text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("server."))
        .collect();
    lines.sort_unstable();
    lines.join("\n")
}

/// zoo.cfg's text rewritten to point at `dynamic_file` (an absolute path): the membership's keys
/// dropped (and `clientPort*` when `erase_client_port`), every other key once, in its first
/// position, with its last value, then `dynamicConfigFile=`.
pub fn rewrite_static(zoo_cfg_text: &str, dynamic_file: &Path, erase_client_port: bool) -> String {
    let mut kept: Vec<(String, String)> = Vec::new();
    for e in parse_properties(zoo_cfg_text, Path::new("zoo.cfg")) {
        let k = e.key.as_str();
        if k.starts_with("server.")
            || is_hierarchical_key(k)
            || k.starts_with("dynamicConfigFile")
            || k.starts_with("peerType")
            || (erase_client_port && k.starts_with("clientPort"))
        {
            continue;
        }
        match kept.iter_mut().find(|(key, _)| *key == e.key) {
            Some(slot) => slot.1 = e.value,
            None => kept.push((e.key, e.value)),
        }
    }
    let mut out: String = kept.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    out.push_str(&format!("dynamicConfigFile={}\n", dynamic_file.display()));
    out
}

/// Writes `<zoo_cfg>.dynamic.<version hex>` for the membership `config_text` (as
/// `/zookeeper/config` holds it) and points `zoo_cfg` at it. `my_id`'s line in the membership
/// decides whether zoo.cfg's `clientPort*` keys go (the line then carries the client address).
/// Returns the dynamic file's path.
pub fn write_dynamic_config(
    zoo_cfg: &Path,
    config_text: &str,
    version: i64,
    my_id: u64,
) -> std::io::Result<PathBuf> {
    let mut name = zoo_cfg.as_os_str().to_owned();
    name.push(format!(".dynamic.{version:x}"));
    let dynamic = PathBuf::from(name);
    write_atomically(&dynamic, dynamic_file_text(config_text).as_bytes())?;
    let dynamic_abs = dynamic.canonicalize()?;
    let current = std::fs::read_to_string(zoo_cfg)?;
    let has_servers = parse_properties(&current, zoo_cfg)
        .iter()
        .any(|e| e.key.starts_with("server."));
    if has_servers {
        // The operator's original, before its membership lines leave it.
        let mut bak = zoo_cfg.as_os_str().to_owned();
        bak.push(".bak");
        write_atomically(Path::new(&bak), current.as_bytes())?;
    }
    let mine = crate::reconfig::Members::parse(config_text)
        .servers
        .into_iter()
        .find(|s| s.id == my_id);
    let erase = mine.is_some_and(|s| s.client_port.is_some());
    write_atomically(
        zoo_cfg,
        rewrite_static(&current, &dynamic_abs, erase).as_bytes(),
    )?;
    Ok(dynamic)
}

/// Writes `bytes` to a temporary file beside `path`, syncs it, renames it over `path` and syncs
/// the directory, so a crash leaves the old file or the new one.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_the_hex_suffix() {
        assert_eq!(
            version_from_file_name(Path::new("/c/zoo.cfg.dynamic.100000000")),
            0x1_0000_0000
        );
        assert_eq!(
            version_from_file_name(Path::new("zoo.cfg.dynamic.1001")),
            0x1001
        );
        assert_eq!(version_from_file_name(Path::new("zoo.cfg.dynamic")), 0);
    }

    #[test]
    fn dynamic_text_sorts_as_text_and_drops_the_version() {
        let cfg = "server.2=b:1:2:participant;0.0.0.0:3\nserver.10=c:1:2:participant;0.0.0.0:3\n\
                   server.1=a:1:2:participant;0.0.0.0:3\nversion=100000008";
        // As Java sorts the strings: '0' comes before '=', so server.10 before server.1.
        assert_eq!(
            dynamic_file_text(cfg),
            "server.10=c:1:2:participant;0.0.0.0:3\nserver.1=a:1:2:participant;0.0.0.0:3\n\
             server.2=b:1:2:participant;0.0.0.0:3"
        );
    }

    #[test]
    fn static_rewrite_drops_membership_keys() {
        let text = "# comment\ntickTime=2000\nclientPort=2181\nserver.1=a:1:2;2181\n\
                    peerType=participant\ndataDir=/d\ndynamicConfigFile=/old\ntickTime=3000\n";
        assert_eq!(
            rewrite_static(text, Path::new("/c/zoo.cfg.dynamic.5"), false),
            "tickTime=3000\nclientPort=2181\ndataDir=/d\ndynamicConfigFile=/c/zoo.cfg.dynamic.5\n"
        );
        assert_eq!(
            rewrite_static(text, Path::new("/c/zoo.cfg.dynamic.5"), true),
            "tickTime=3000\ndataDir=/d\ndynamicConfigFile=/c/zoo.cfg.dynamic.5\n"
        );
    }
}
