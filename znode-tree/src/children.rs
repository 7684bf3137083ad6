//! A node's children by name, in byte order: a `BTreeMap`, boxed and absent while empty. Most
//! znodes are leaves, and an empty map in place would cost them 24 bytes instead of 8.
//!
//! Copying it (what a write does to each node on its path while a `SnapshotView` shares that
//! node) clones the whole map: O(children) pointer copies.

use std::collections::{btree_map, BTreeMap};
use std::sync::Arc;

use crate::name::Name;
use crate::node::Node;

type Entry = (Name, Arc<Node>);

// The box is the point: 8 bytes in every leaf instead of an empty map's 24.
#[allow(clippy::box_collection)]
#[derive(Clone, Default)]
pub(crate) struct Children(Option<Box<BTreeMap<Name, Arc<Node>>>>);

pub(crate) type Iter<'a> = btree_map::Iter<'a, Name, Arc<Node>>;

static NONE: BTreeMap<Name, Arc<Node>> = BTreeMap::new();

impl Children {
    /// Children from pairs in strictly increasing name order (restore checks that):
    /// `BTreeMap`'s bulk build, which fills its leaves instead of splitting them.
    pub fn from_sorted(pairs: Vec<Entry>) -> Children {
        if pairs.is_empty() {
            Children(None)
        } else {
            Children(Some(Box::new(pairs.into_iter().collect())))
        }
    }

    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |m| m.len())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub fn get(&self, name: &[u8]) -> Option<&Node> {
        self.0.as_ref()?.get(name).map(|n| &**n)
    }

    pub fn get_mut(&mut self, name: &[u8]) -> Option<&mut Arc<Node>> {
        self.0.as_mut()?.get_mut(name)
    }

    /// In name order.
    pub fn iter(&self) -> Iter<'_> {
        self.0.as_deref().unwrap_or(&NONE).iter()
    }

    /// Adds a child, or replaces the one of that name and returns it.
    pub fn insert(&mut self, name: Name, node: Arc<Node>) -> Option<Arc<Node>> {
        self.0.get_or_insert_with(Box::default).insert(name, node)
    }

    pub fn remove(&mut self, name: &[u8]) -> Option<Arc<Node>> {
        let map = self.0.as_mut()?;
        let node = map.remove(name);
        if map.is_empty() {
            self.0 = None;
        }
        node
    }

    /// Empties `self`, calling `f` with each child that nothing else shares (a view may still
    /// hold some; those are only released). `Node`'s drop uses it to take a subtree apart
    /// without recursion.
    pub fn release(&mut self, mut f: impl FnMut(Node)) {
        let Some(map) = self.0.take() else {
            return;
        };
        for (_, child) in *map {
            if let Some(node) = Arc::into_inner(child) {
                f(node);
            }
        }
    }
}
