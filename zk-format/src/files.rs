//! ZooKeeper's file names and which files a start reads (`Util.getZxidFromName`,
//! `Util.sortDataDir`, `FileTxnLog.getLogFiles`, `FileTxnIterator.init`): snapshots are
//! `snapshot.<hex zxid>[.gz|.snappy]`, logs `log.<hex zxid of their first transaction>`.

/// What a file in `version-2/` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileKind {
    Snapshot,
    Log,
}

/// The kind and zxid a file name carries, or `None` for any other file.
pub fn parse_name(name: &str) -> Option<(FileKind, i64)> {
    let (kind, rest) = if let Some(r) = name.strip_prefix("snapshot.") {
        (FileKind::Snapshot, r)
    } else if let Some(r) = name.strip_prefix("log.") {
        (FileKind::Log, r)
    } else {
        return None;
    };
    let hex = match kind {
        FileKind::Snapshot => rest
            .strip_suffix(".gz")
            .or_else(|| rest.strip_suffix(".snappy"))
            .unwrap_or(rest),
        FileKind::Log => rest,
    };
    if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok().map(|z| (kind, z as i64))
}

/// The logs a replay from snapshot zxid `snap_zxid` reads, oldest first: the newest log that
/// starts at or below `snap_zxid + 1`, and every later one. `logs` are (start zxid, name).
pub fn logs_to_replay(logs: &[(i64, String)], snap_zxid: i64) -> Vec<(i64, String)> {
    let mut sorted = logs.to_vec();
    sorted.sort();
    let from = snap_zxid.saturating_add(1);
    let first = sorted.iter().rposition(|(z, _)| *z <= from).unwrap_or(0);
    sorted.split_off(first)
}

/// `"0x" + hex`, as ZooKeeper prints a zxid (`ZxidUtils.zxidToString`).
pub fn zxid_hex(z: i64) -> String {
    format!("0x{:x}", z)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_selection() {
        assert_eq!(
            parse_name("snapshot.100000003"),
            Some((FileKind::Snapshot, 0x1_0000_0003))
        );
        assert_eq!(
            parse_name("snapshot.1a.snappy"),
            Some((FileKind::Snapshot, 0x1a))
        );
        assert_eq!(parse_name("log.1"), Some((FileKind::Log, 1)));
        assert_eq!(parse_name("log.1.fixed"), None);
        assert_eq!(parse_name("acceptedEpoch"), None);
        let logs = vec![
            (1, "log.1".to_string()),
            (0x40, "log.40".to_string()),
            (0x80, "log.80".to_string()),
        ];
        let names = |v: Vec<(i64, String)>| v.into_iter().map(|(_, n)| n).collect::<Vec<_>>();
        assert_eq!(names(logs_to_replay(&logs, 0x50)), ["log.40", "log.80"]);
        assert_eq!(names(logs_to_replay(&logs, 0x3f)), ["log.40", "log.80"]);
        assert_eq!(names(logs_to_replay(&logs, 0x80)), ["log.80"]);
        assert_eq!(
            names(logs_to_replay(&logs, 0)),
            ["log.1", "log.40", "log.80"]
        );
    }
}
