//! The quota bookkeeping creates, deletes and setData do (the quota nodes' layout and the
//! `StatsTrack` text they hold are `crate::quota`'s):
//! - `quota_prefix`: the deepest path at or above a node that has a quota
//!   (`DataTree.getMaxPrefixWithQuota`; the root never counts);
//! - `check_quota`: with `zookeeper.enforceQuota`, refuses a create or setData that would take
//!   the usage past a hard limit (`countHardLimit`, `byteHardLimit`) with QuotaExceeded
//!   (`ZooKeeperServer.checkQuota`); soft limits (`count`, `bytes`) are never enforced. Inside a
//!   multi it reads the quota nodes as they were before the multi: ZooKeeper's
//!   PrepRequestProcessor checks each op against the committed DataTree, where the earlier ops of
//!   the same multi have not been applied yet (so `multi[create, create]` with room for one more
//!   node creates both; measured against ZooKeeper 3.9.5 by compat-tests/b2b). The write's own
//!   size change still counts from the node as the earlier ops left it (ZooKeeper's pending
//!   change record);
//! - `update_quota_stat`: after the change, adds its count and bytes to the
//!   `zookeeper_stats` node in place, without a version bump or an event
//!   (`DataTree.updateQuotaStat`);
//! - `recount_quota`: a new `zookeeper_stats` node starts from its subtree's real usage
//!   (`DataTree.updateQuotaForPath`).

use wire::ErrorCode;

use crate::quota::{self, StatsTrack};
use crate::tree::{Tree, Undo};

impl Tree {
    /// The node at `p` as the running multi found it (the current node outside a multi):
    /// `None` if there was none, else its data. The first step of the undo log that names `p`
    /// holds its state from before the multi.
    fn committed_data(&self, p: &str) -> Option<Option<&[u8]>> {
        for step in self.undo.iter().flatten() {
            match step {
                Undo::Inserted(q) if &**q == p => return None,
                Undo::Removed(q, node, _) if &**q == p => return Some(node.data.as_deref()),
                Undo::Meta { path, data, .. } if &**path == p => return Some(data.as_deref()),
                _ => {}
            }
        }
        self.node(p).map(|n| n.data.as_deref())
    }

    /// `quota_prefix` as of before the running multi (ZooKeeper's pTrie is only updated when a
    /// txn is applied).
    fn committed_quota_prefix(&self, p: &str) -> Option<String> {
        let quota_touched = self.undo.iter().flatten().any(|step| {
            let q = match step {
                Undo::Inserted(q) | Undo::Removed(q, ..) => q,
                Undo::Meta { path, .. } => path,
            };
            quota::root_of_limit_node(q).is_some()
        });
        if !quota_touched {
            return self.quota_prefix(p);
        }
        let mut cur = p;
        loop {
            if cur == "/" || cur.is_empty() {
                return None;
            }
            if self.committed_data(&quota::limit_path(cur)).is_some() {
                return Some(cur.to_owned());
            }
            cur = crate::path::split(cur)?.0;
        }
    }

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
        let Some(prefix) = self.committed_quota_prefix(p) else {
            return Ok(());
        };
        let Some(limit) = self.committed_data(&quota::limit_path(&prefix)) else {
            return Ok(());
        };
        let limit = StatsTrack::parse(limit.unwrap_or(&[]));
        let check_count = count != 0 && (limit.count() > -1 || limit.get(quota::COUNT_HARD) > -1);
        let check_bytes = bytes != 0 && (limit.bytes() > -1 || limit.get(quota::BYTE_HARD) > -1);
        if !check_count && !check_bytes {
            return Ok(());
        }
        let Some(stats) = self.committed_data(&quota::stat_path(&prefix)) else {
            return Ok(());
        };
        let stats = StatsTrack::parse(stats.unwrap_or(&[]));
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
