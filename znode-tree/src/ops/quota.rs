//! The quota bookkeeping creates, deletes and setData do (the quota nodes' layout and the
//! `StatsTrack` text they hold are `crate::quota`'s):
//! - `quota_prefix`: the deepest path at or above a node that has a quota
//!   (`DataTree.getMaxPrefixWithQuota`; the root never counts);
//! - `check_quota`: with `zookeeper.enforceQuota`, refuses a create or setData that would take
//!   the usage past a hard limit (`countHardLimit`, `byteHardLimit`) with QuotaExceeded
//!   (`ZooKeeperServer.checkQuota`); soft limits (`count`, `bytes`) are never enforced;
//! - `update_quota_stat`: after the change, adds its count and bytes to the
//!   `zookeeper_stats` node in place, without a version bump or an event
//!   (`DataTree.updateQuotaStat`);
//! - `recount_quota`: a new `zookeeper_stats` node starts from its subtree's real usage
//!   (`DataTree.updateQuotaForPath`).

use wire::ErrorCode;

use crate::quota::{self, StatsTrack};
use crate::tree::Tree;

impl Tree {
    /// The deepest path at or above `p` that has a quota (ZooKeeper's `getMaxPrefixWithQuota`;
    /// the root never counts).
    pub(crate) fn quota_prefix(&self, p: &str) -> Option<String> {
        if self.quota_roots.is_empty() {
            return None;
        }
        let mut cur = p;
        loop {
            if cur == "/" || cur.is_empty() {
                return None;
            }
            if self.quota_roots.contains(cur) {
                return Some(cur.to_owned());
            }
            cur = crate::path::split(cur)?.0;
        }
    }

    /// Hard limits only, and only with `enforce_quota` (`ZooKeeperServer.checkQuota`).
    pub(crate) fn check_quota(&self, p: &str, bytes: i64, count: i64) -> Result<(), ErrorCode> {
        if !self.config.enforce_quota {
            return Ok(());
        }
        let Some(prefix) = self.quota_prefix(p) else {
            return Ok(());
        };
        let Some(limit) = self.node(&quota::limit_path(&prefix)) else {
            return Ok(());
        };
        let limit = StatsTrack::parse(limit.data.as_deref().unwrap_or(&[]));
        let check_count = count != 0 && (limit.count() > -1 || limit.get(quota::COUNT_HARD) > -1);
        let check_bytes = bytes != 0 && (limit.bytes() > -1 || limit.get(quota::BYTE_HARD) > -1);
        if !check_count && !check_bytes {
            return Ok(());
        }
        let Some(stats) = self.node(&quota::stat_path(&prefix)) else {
            return Ok(());
        };
        let stats = StatsTrack::parse(stats.data.as_deref().unwrap_or(&[]));
        let hard_count = limit.get(quota::COUNT_HARD);
        if check_count && hard_count > -1 && stats.count() + count > hard_count {
            return Err(ErrorCode::QuotaExceeded);
        }
        let hard_bytes = limit.get(quota::BYTE_HARD);
        if check_bytes && hard_bytes > -1 && stats.bytes() + bytes > hard_bytes {
            return Err(ErrorCode::QuotaExceeded);
        }
        Ok(())
    }

    /// Writes usage into the stats node in place: no version bump, no events.
    pub(crate) fn update_quota_stat(&mut self, p: &str, bytes: i64, count: i64) {
        let Some(prefix) = self.quota_prefix(p) else {
            return;
        };
        let sp = quota::stat_path(&prefix);
        let Some(n) = self.node(&sp) else { return };
        let mut st = StatsTrack::parse(n.data.as_deref().unwrap_or(&[]));
        st.add(count, bytes);
        self.update(&sp, |n, _| n.data = Some(st.render().into_boxed_slice()));
    }

    /// A new stats node starts from the subtree's real usage (`updateQuotaForPath`).
    pub(crate) fn recount_quota(&mut self, prefix: &str) {
        let (mut count, mut bytes) = (0i64, 0i64);
        if let Some(n) = self.node(prefix) {
            count += 1;
            bytes += n.data_len() as i64;
            for d in self.descendants(prefix) {
                count += 1;
                bytes += d.data_len() as i64;
            }
        }
        let sp = quota::stat_path(prefix);
        if self.node(&sp).is_none() {
            return;
        }
        let st = StatsTrack::new(count, bytes);
        self.update(&sp, |n, _| n.data = Some(st.render().into_boxed_slice()));
    }
}
