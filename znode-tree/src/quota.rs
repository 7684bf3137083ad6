//! Quotas, laid out as ZooKeeper's `Quotas` names them: `/zookeeper/quota<P>/zookeeper_limits`
//! and `/zookeeper/quota<P>/zookeeper_stats`, with data in ZooKeeper's `StatsTrack` text form.
//! The checks and counts the writes make with them are in `ops/quota.rs`.

use std::collections::BTreeMap;

pub const QUOTA_ROOT: &str = "/zookeeper/quota";
pub const LIMIT_NODE: &str = "zookeeper_limits";
pub const STAT_NODE: &str = "zookeeper_stats";

pub const COUNT: &str = "count";
pub const BYTES: &str = "bytes";
pub const COUNT_HARD: &str = "countHardLimit";
pub const BYTE_HARD: &str = "byteHardLimit";

/// `StatsTrack`: `count=<n>,bytes=<n>` optionally followed by `=;key=value...` (the extra `=`
/// marks the newer form). Missing values read as -1.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StatsTrack {
    values: BTreeMap<String, i64>,
}

impl StatsTrack {
    pub fn parse(data: &[u8]) -> StatsTrack {
        let text = String::from_utf8_lossy(data);
        let mut values = BTreeMap::new();
        for pair in text.split([',', ';']) {
            let mut kv = pair.split('=');
            let (Some(k), Some(v)) = (kv.next(), kv.next()) else {
                continue;
            };
            // A malformed number would throw in Java; here the entry is just ignored.
            if let Ok(v) = v.trim().parse::<i64>() {
                values.insert(k.trim().to_owned(), v);
            }
        }
        StatsTrack { values }
    }

    pub fn new(count: i64, bytes: i64) -> StatsTrack {
        let mut s = StatsTrack::default();
        s.set(COUNT, count);
        s.set(BYTES, bytes);
        s
    }

    pub fn get(&self, key: &str) -> i64 {
        self.values.get(key).copied().unwrap_or(-1)
    }

    pub fn count(&self) -> i64 {
        self.get(COUNT)
    }

    pub fn bytes(&self) -> i64 {
        self.get(BYTES)
    }

    pub fn set(&mut self, key: &str, v: i64) {
        self.values.insert(key.to_owned(), v);
    }

    pub fn add(&mut self, count: i64, bytes: i64) {
        let (c, b) = (self.count(), self.bytes());
        self.set(COUNT, c + count);
        self.set(BYTES, b + bytes);
    }

    /// `StatsTrack.toString`: count and bytes first, then other keys sorted after an extra `=`.
    pub fn render(&self) -> Vec<u8> {
        let mut s = format!("{COUNT}={},{BYTES}={}", self.count(), self.bytes());
        let rest: Vec<_> = self
            .values
            .iter()
            .filter(|(k, _)| *k != COUNT && *k != BYTES)
            .collect();
        if !rest.is_empty() {
            s.push('=');
            for (k, v) in rest {
                s.push_str(&format!(";{k}={v}"));
            }
        }
        s.into_bytes()
    }
}

/// `/zookeeper/quota/a/b` → `/a/b`: the path a quota subtree node describes.
pub fn trim_quota_path(quota_dir: &str) -> &str {
    &quota_dir[QUOTA_ROOT.len()..]
}

pub fn limit_path(prefix: &str) -> String {
    format!("{QUOTA_ROOT}{prefix}/{LIMIT_NODE}")
}

pub fn stat_path(prefix: &str) -> String {
    format!("{QUOTA_ROOT}{prefix}/{STAT_NODE}")
}

/// True for a quota directory path (`/zookeeper/quota` or below it).
pub fn is_quota_dir(path: &str) -> bool {
    crate::path::is_at_or_below(path, QUOTA_ROOT)
}

/// `/zookeeper/quota/a/zookeeper_limits` → `Some("/a")`: the path a limit node puts a quota on
/// (ZooKeeper adds it to its `pTrie`); `None` for any other node.
pub fn root_of_limit_node(p: &str) -> Option<&str> {
    let (parent, name) = crate::path::split(p)?;
    if name == LIMIT_NODE && is_quota_dir(parent) {
        Some(trim_quota_path(parent))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_track_reads_both_forms_and_renders_javas_layout() {
        let s = StatsTrack::parse(b"count=10,bytes=100");
        assert_eq!((s.count(), s.bytes(), s.get(COUNT_HARD)), (10, 100, -1));
        let h = StatsTrack::parse(b"count=-1,bytes=-1=;byteHardLimit=50;countHardLimit=2");
        assert_eq!(
            (h.count(), h.get(BYTE_HARD), h.get(COUNT_HARD)),
            (-1, 50, 2)
        );
        assert_eq!(
            h.render(),
            b"count=-1,bytes=-1=;byteHardLimit=50;countHardLimit=2".to_vec()
        );
        let mut e = StatsTrack::parse(b"");
        e.add(0, 0);
        assert_eq!(e.render(), b"count=-1,bytes=-1".to_vec());
    }
}
