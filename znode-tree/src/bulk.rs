//! The bulk build: a whole node structure from a depth-first listing, each node's children
//! built in one pass (`Children` from sorted input) rather than inserted one by one. Two users:
//! `Tree::new` (the four nodes of a fresh tree) and `snapshot::Restore` (every node of a
//! snapshot, as it is decoded). ZooKeeper's `DataTree.deserialize` inserts each node into a
//! hash map and links it to its parent; here the listing's order makes every child map a
//! single build.

use std::sync::Arc;

use crate::children::SortedChildren;
use crate::name::Name;
use crate::node::Node;
use crate::path;

/// Builds a whole tree from nodes listed depth first with siblings in byte order of name (the
/// order a version-2 snapshot lists them in, and the fresh tree's): each node's children are
/// gathered in a vector while it is open and become its map in one bulk build when the listing
/// leaves its subtree, so nothing is inserted one by one. Out-of-order, duplicate and orphan
/// nodes are errors. It knows nothing of the tree's indexes: `Tree::bulk_push` and
/// `Tree::bulk_finish` put every node through the same index bookkeeping as `insert_node`.
#[derive(Default)]
pub(crate) struct Builder {
    /// The open nodes, root first; each one's path is `path[..len]`.
    open: Vec<Open>,
    path: String,
    rooted: bool,
}

struct Open {
    len: usize,
    name: Name,
    node: Node,
    children: SortedChildren,
}

impl Builder {
    /// Adds the next node in depth-first order and returns it as stored, for the caller's
    /// indexes.
    pub fn push(&mut self, p: &str, node: Node) -> Result<&Node, String> {
        if !self.rooted {
            if p != "/" {
                return Err(format!("node {p:?} comes before the root"));
            }
            self.rooted = true;
            self.path.push('/');
            self.open.push(Open {
                len: 1,
                name: Name::new(""),
                node,
                children: SortedChildren::default(),
            });
            return Ok(self.top());
        }
        if p == "/" {
            return Err(format!("node {p:?} is listed twice"));
        }
        let Some((parent, name)) = path::split(p).filter(|(_, name)| !name.is_empty()) else {
            return Err(format!("node {p:?} has no parent"));
        };
        // Close the subtrees the listing has left: every open node that is not `parent` or
        // above it. The root is above every path that starts with `/`.
        while self.open.len() > 1 && !path::is_at_or_below(parent, self.open_path()) {
            self.close();
        }
        if self.open_path() != parent {
            return Err(format!(
                "node {p:?} has no parent before it in depth-first order"
            ));
        }
        let top = self.open.last().expect("the root stays open");
        if let Some(last) = top.children.last() {
            match last.as_bytes().cmp(name.as_bytes()) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => return Err(format!("node {p:?} is listed twice")),
                std::cmp::Ordering::Greater => {
                    return Err(format!("node {p:?} is out of depth-first order"))
                }
            }
        }
        self.path.clear();
        self.path.push_str(p);
        self.open.push(Open {
            len: p.len(),
            name: Name::new(name),
            node,
            children: SortedChildren::default(),
        });
        Ok(self.top())
    }

    /// The node pushed last.
    fn top(&self) -> &Node {
        &self.open.last().expect("a node was just pushed").node
    }

    /// The finished tree's root.
    pub fn finish(mut self) -> Result<Node, String> {
        if !self.rooted {
            return Err("no root".into());
        }
        while self.open.len() > 1 {
            self.close();
        }
        let mut root = self.open.pop().expect("the root is open");
        root.node.children = root.children.finish();
        Ok(root.node)
    }

    fn open_path(&self) -> &str {
        &self.path[..self.open.last().map_or(0, |o| o.len)]
    }

    /// Finishes the innermost open node (not the root) into its parent's list.
    fn close(&mut self) {
        let Some(mut done) = self.open.pop() else {
            return;
        };
        done.node.children = done.children.finish();
        if let Some(parent) = self.open.last_mut() {
            parent.children.push(done.name, Arc::new(done.node));
            self.path.truncate(parent.len);
        }
    }
}
