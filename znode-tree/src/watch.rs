//! The watch registry: per server, not replicated. Two tables, as in ZooKeeper's `DataTree`
//! (`dataWatches`, `childWatches`, each a `WatchManager`): the data table (getData/exists
//! watches, persistent, recursive) and the child table (getChildren watches, persistent). Each (path, watcher) entry holds a
//! bit set of modes. Everything is kept in ordered maps so event order is deterministic:
//! within one trigger, watchers are served in `WatcherId` order.

use std::collections::{BTreeMap, BTreeSet};

use wire::ops::watches::{watcher_type, SetWatches2};
use wire::{event_type, Acl, ErrorCode, WatcherEvent, STATE_SYNC_CONNECTED};

use crate::path;
use crate::tree::{Change, Tree};

/// Chosen by the server, one per connection.
pub type WatcherId = u64;

/// How a watch was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchKind {
    /// getData, or exists on an existing node.
    Data,
    /// exists on a missing node (same table as Data).
    Exist,
    /// getChildren / getChildren2.
    Child,
    /// addWatch mode 0: both tables, survives firing.
    Persistent,
    /// addWatch mode 1: data table, also matches descendants, never NodeChildrenChanged.
    PersistentRecursive,
}

const STANDARD: u8 = 1;
const PERSISTENT: u8 = 2;
const RECURSIVE: u8 = 4;

#[derive(Debug, Default, Clone)]
struct Table {
    paths: BTreeMap<String, BTreeMap<WatcherId, u8>>,
    watchers: BTreeMap<WatcherId, BTreeSet<String>>,
    recursive: usize,
}

impl Table {
    fn add(&mut self, w: WatcherId, p: &str, bit: u8) {
        let bits = self
            .paths
            .entry(p.to_owned())
            .or_default()
            .entry(w)
            .or_insert(0);
        if bit == RECURSIVE && *bits & RECURSIVE == 0 {
            self.recursive += 1;
        }
        *bits |= bit;
        self.watchers.entry(w).or_default().insert(p.to_owned());
    }

    fn has(&self, w: WatcherId, p: &str, mask: u8) -> bool {
        self.paths
            .get(p)
            .and_then(|m| m.get(&w))
            .is_some_and(|b| b & mask != 0)
    }

    /// Clears `mask` bits of one entry; true if any were set.
    fn clear(&mut self, w: WatcherId, p: &str, mask: u8) -> bool {
        let Some(m) = self.paths.get_mut(p) else {
            return false;
        };
        let Some(bits) = m.get_mut(&w) else {
            return false;
        };
        let hit = *bits & mask;
        if hit == 0 {
            return false;
        }
        if hit & RECURSIVE != 0 {
            self.recursive -= 1;
        }
        *bits &= !mask;
        if *bits == 0 {
            m.remove(&w);
            if m.is_empty() {
                self.paths.remove(p);
            }
            if let Some(s) = self.watchers.get_mut(&w) {
                s.remove(p);
                if s.is_empty() {
                    self.watchers.remove(&w);
                }
            }
        }
        true
    }

    fn remove_watcher(&mut self, w: WatcherId) {
        for p in self.watchers.remove(&w).unwrap_or_default() {
            if let Some(m) = self.paths.get_mut(&p) {
                if let Some(bits) = m.remove(&w) {
                    if bits & RECURSIVE != 0 {
                        self.recursive -= 1;
                    }
                }
                if m.is_empty() {
                    self.paths.remove(&p);
                }
            }
        }
    }

    /// `WatchManager.triggerWatch`: every mode matches on the path itself (one-shot entries
    /// are consumed); on ancestors only recursive entries match.
    fn trigger(&mut self, p: &str) -> BTreeSet<WatcherId> {
        let mut fired = BTreeSet::new();
        if let Some(m) = self.paths.get(p) {
            let ws: Vec<WatcherId> = m.keys().copied().collect();
            for w in ws {
                fired.insert(w);
                self.clear(w, p, STANDARD);
            }
        }
        if self.recursive > 0 {
            let mut cur = p;
            while cur != "/" {
                let Some((parent, _)) = path::split(cur) else {
                    break;
                };
                cur = parent;
                if let Some(m) = self.paths.get(cur) {
                    fired.extend(
                        m.iter()
                            .filter(|(_, b)| **b & RECURSIVE != 0)
                            .map(|(w, _)| *w),
                    );
                }
            }
        }
        fired
    }

    fn pairs(&self) -> usize {
        self.paths.values().map(|m| m.len()).sum()
    }
}

/// Counts and listings for the `wchs`/`wchc`/`wchp`/`mntr` four-letter words. Like ZooKeeper,
/// the listings show the data table only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchStats {
    /// (path, watcher) entries in the data table: wchs' "Total watches".
    pub data_watches: usize,
    /// (path, watcher) entries in the child table.
    pub child_watches: usize,
    /// wchc: data-table paths per watcher.
    pub data_by_watcher: BTreeMap<WatcherId, Vec<String>>,
    /// wchp: watchers per data-table path.
    pub data_by_path: BTreeMap<String, Vec<WatcherId>>,
}

impl WatchStats {
    /// mntr's `watch_count`: data plus child entries.
    pub fn total(&self) -> usize {
        self.data_watches + self.child_watches
    }
}

/// The counts `wchs` and `mntr` print, read without copying either table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WatchCounts {
    /// Watchers with an entry in the data table: wchs' "connections watching".
    pub data_watchers: usize,
    /// Paths in the data table: wchs' "paths".
    pub data_paths: usize,
    /// (path, watcher) entries in the data table: wchs' "Total watches".
    pub data_watches: usize,
    /// (path, watcher) entries in the child table.
    pub child_watches: usize,
}

impl WatchCounts {
    /// mntr's `watch_count`: data plus child entries.
    pub fn total(&self) -> usize {
        self.data_watches + self.child_watches
    }
}

#[derive(Debug, Default, Clone)]
pub struct WatchRegistry {
    data: Table,
    child: Table,
}

fn event(t: i32, p: &str) -> WatcherEvent {
    WatcherEvent {
        event_type: t,
        state: STATE_SYNC_CONNECTED,
        path: p.to_owned(),
    }
}

impl WatchRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, w: WatcherId, p: &str, kind: WatchKind) {
        match kind {
            WatchKind::Data | WatchKind::Exist => self.data.add(w, p, STANDARD),
            WatchKind::Child => self.child.add(w, p, STANDARD),
            WatchKind::Persistent => {
                self.data.add(w, p, PERSISTENT);
                self.child.add(w, p, PERSISTENT);
            }
            WatchKind::PersistentRecursive => self.data.add(w, p, RECURSIVE),
        }
    }

    /// Turns applied changes into events, in change order; within one change each watcher
    /// gets at most one event, and only if `can_read(watcher, acl)` allows it (the node's
    /// ACL, or the parent's for NodeChildrenChanged). Filtered watchers still lose their
    /// one-shot registrations, as in ZooKeeper. The server stamps the notification headers'
    /// zxid itself.
    pub fn trigger(
        &mut self,
        changes: &[Change],
        can_read: impl Fn(WatcherId, &[Acl]) -> bool,
    ) -> Vec<(WatcherId, WatcherEvent)> {
        let mut out = Vec::new();
        let mut emit = |ws: &mut dyn Iterator<Item = WatcherId>, t: i32, p: &str, acl: &[Acl]| {
            for w in ws {
                if can_read(w, acl) {
                    out.push((w, event(t, p)));
                }
            }
        };
        for c in changes {
            match c {
                Change::Created { path, acl } => emit(
                    &mut self.data.trigger(path).into_iter(),
                    event_type::NODE_CREATED,
                    path,
                    acl,
                ),
                Change::DataChanged { path, acl } => emit(
                    &mut self.data.trigger(path).into_iter(),
                    event_type::NODE_DATA_CHANGED,
                    path,
                    acl,
                ),
                Change::Deleted { path, acl } => {
                    let d = self.data.trigger(path);
                    let c = self.child.trigger(path);
                    let rest: Vec<WatcherId> = c.difference(&d).copied().collect();
                    emit(
                        &mut d.into_iter().chain(rest),
                        event_type::NODE_DELETED,
                        path,
                        acl,
                    );
                }
                Change::ChildrenChanged { path, acl } => emit(
                    &mut self.child.trigger(path).into_iter(),
                    event_type::NODE_CHILDREN_CHANGED,
                    path,
                    acl,
                ),
            }
        }
        out
    }

    /// setWatches / setWatches2 on reconnect (`DataTree.setWatches`). Returns the events to send
    /// at once (zxid -1, not ACL filtered); the rest is registered. For setWatches v1 the caller
    /// passes empty persistent lists.
    pub fn set_watches(
        &mut self,
        tree: &Tree,
        w: WatcherId,
        req: &SetWatches2,
    ) -> Vec<WatcherEvent> {
        let rel = req.relative_zxid;
        let mut out = Vec::new();
        for p in &req.data_watches {
            match tree.node(p) {
                None => out.push(event(event_type::NODE_DELETED, p)),
                Some(n) if n.stat.mzxid > rel => out.push(event(event_type::NODE_DATA_CHANGED, p)),
                Some(_) => self.data.add(w, p, STANDARD),
            }
        }
        for p in &req.exist_watches {
            match tree.node(p) {
                Some(_) => out.push(event(event_type::NODE_CREATED, p)),
                None => self.data.add(w, p, STANDARD),
            }
        }
        for p in &req.child_watches {
            match tree.node(p) {
                None => out.push(event(event_type::NODE_DELETED, p)),
                Some(n) if n.stat.pzxid > rel => {
                    out.push(event(event_type::NODE_CHILDREN_CHANGED, p))
                }
                Some(_) => self.child.add(w, p, STANDARD),
            }
        }
        for p in &req.persistent_watches {
            self.add(w, p, WatchKind::Persistent);
        }
        for p in &req.persistent_recursive_watches {
            self.add(w, p, WatchKind::PersistentRecursive);
        }
        out
    }

    /// checkWatches (`DataTree.containsWatcher`): NoWatcher when nothing matches. An unknown type
    /// is MarshallingError, as ZooKeeper's failed `WatcherType.fromInt` is.
    pub fn check(&self, w: WatcherId, p: &str, watcher_type: i32) -> Result<(), ErrorCode> {
        let found = match watcher_type {
            watcher_type::CHILDREN => self.child.has(w, p, STANDARD),
            watcher_type::DATA => self.data.has(w, p, STANDARD),
            watcher_type::ANY => self.child.has(w, p, 0xff) || self.data.has(w, p, 0xff),
            watcher_type::PERSISTENT => {
                self.data.has(w, p, PERSISTENT) || self.child.has(w, p, PERSISTENT)
            }
            watcher_type::PERSISTENT_RECURSIVE => self.data.has(w, p, RECURSIVE),
            _ => return Err(ErrorCode::MarshallingError),
        };
        if found {
            Ok(())
        } else {
            Err(ErrorCode::NoWatcher)
        }
    }

    /// removeWatches (`DataTree.removeWatch`): removes what `check` would match.
    pub fn remove(&mut self, w: WatcherId, p: &str, watcher_type: i32) -> Result<(), ErrorCode> {
        let removed = match watcher_type {
            watcher_type::CHILDREN => self.child.clear(w, p, STANDARD),
            watcher_type::DATA => self.data.clear(w, p, STANDARD),
            watcher_type::ANY => self.child.clear(w, p, 0xff) | self.data.clear(w, p, 0xff),
            watcher_type::PERSISTENT => {
                self.data.clear(w, p, PERSISTENT) | self.child.clear(w, p, PERSISTENT)
            }
            watcher_type::PERSISTENT_RECURSIVE => self.data.clear(w, p, RECURSIVE),
            _ => return Err(ErrorCode::MarshallingError),
        };
        if removed {
            Ok(())
        } else {
            Err(ErrorCode::NoWatcher)
        }
    }

    /// The connection closed: drop all its watches.
    pub fn remove_watcher(&mut self, w: WatcherId) {
        self.data.remove_watcher(w);
        self.child.remove_watcher(w);
    }

    pub fn stats(&self) -> WatchStats {
        let counts = self.counts();
        WatchStats {
            data_watches: counts.data_watches,
            child_watches: counts.child_watches,
            data_by_watcher: self.data_by_watcher(),
            data_by_path: self.data_by_path(),
        }
    }

    /// The counts alone: no path is copied (one pass over each table's paths).
    pub fn counts(&self) -> WatchCounts {
        WatchCounts {
            data_watchers: self.data.watchers.len(),
            data_paths: self.data.paths.len(),
            data_watches: self.data.pairs(),
            child_watches: self.child.pairs(),
        }
    }

    /// wchc: the data table's paths per watcher.
    pub fn data_by_watcher(&self) -> BTreeMap<WatcherId, Vec<String>> {
        self.data
            .watchers
            .iter()
            .map(|(w, ps)| (*w, ps.iter().cloned().collect()))
            .collect()
    }

    /// wchp: the data table's watchers per path.
    pub fn data_by_path(&self) -> BTreeMap<String, Vec<WatcherId>> {
        self.data
            .paths
            .iter()
            .map(|(p, m)| (p.clone(), m.keys().copied().collect()))
            .collect()
    }
}
