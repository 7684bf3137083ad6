//! One znode as stored: the persisted stat (ZooKeeper's `StatPersisted`), data, an index into
//! the interned ACL table, and its children by name. The tree is hierarchical: each node owns
//! its children (`children.rs`), so a name is stored once, beside its node's pointer in its
//! parent, and a full path exists only while it is being walked, indexed or encoded.
//!
//! Sizes, because they are paid per znode: `Node` is 88 bytes (the stat packed to 60, the ACL
//! index 4, data 16, children 8) and sits behind an `Arc` (16 more), so a leaf is one block of
//! 104 bytes plus its data, plus one slot (24-byte name, 8-byte pointer) in its parent's
//! children (`children.rs`). A leaf has no children structure at all, only an empty pointer.
//! Data is not kept inline, however small: without `unsafe` an inline variant does not fit beside
//! the 16-byte pointer, and a 24-byte field would move every node into glibc's next size class
//! (bench/README.md, "Small data inline").
//!
//! Nodes are shared copy-on-write: children are `Arc<Node>`, a write reaches its node through
//! `Arc::make_mut` from the root down (`Tree::update`), so a `SnapshotView` holding the old root
//! keeps the old path, and only the nodes on the written path are copied, each once per view.
//! Copying a node copies its children's chunk list and, on the way down, the one chunk the
//! path goes through: O(256 + children / 256) pointer copies, whatever the parent's size.

use std::ops::ControlFlow;

use wire::Stat;

pub(crate) use crate::children::Children;

/// `EphemeralType.CONTAINER_EPHEMERAL_OWNER`.
pub const CONTAINER_OWNER: i64 = i64::MIN;
/// Top byte of an extended ephemeralOwner (TTL): `0xFF`, then feature id 0, then 40 bits of ttl.
pub const TTL_MARK: i64 = 0xFF00_0000_0000_0000_u64 as i64;
pub const TTL_MASK: i64 = 0xFFFF_0000_0000_0000_u64 as i64;
pub const MAX_TTL: i64 = (1 << 40) - 1;

/// What `ephemeralOwner` says the node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Persistent,
    Ephemeral(i64),
    Container,
    Ttl(i64),
}

pub fn kind_of(owner: i64) -> Kind {
    if owner == 0 {
        Kind::Persistent
    } else if owner == CONTAINER_OWNER {
        Kind::Container
    } else if owner & TTL_MASK == TTL_MARK {
        Kind::Ttl(owner & MAX_TTL)
    } else {
        Kind::Ephemeral(owner)
    }
}

pub fn ttl_owner(ttl: i64) -> i64 {
    TTL_MARK | (ttl & MAX_TTL)
}

/// The stored stat; `cversion` is the count of child creates, not the wire value (ZooKeeper's
/// `DataNode.copyStat` sends `cversion * 2 - numChildren`).
/// Packed to 4-byte alignment: 60 bytes instead of 64, so the ACL index beside it in `Node`
/// fills what would be padding. Fields are read and written by value (no references).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(C, packed(4))]
pub struct StoredStat {
    pub czxid: i64,
    pub mzxid: i64,
    pub pzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub ephemeral_owner: i64,
    pub version: i32,
    pub cversion: i32,
    pub aversion: i32,
}

impl StoredStat {
    /// The stored fields in the one order the snapshot encoder and the digest both use:
    /// the six i64s, then the three i32s. Changing it changes the snapshot format.
    pub fn fields(&self) -> ([i64; 6], [i32; 3]) {
        (
            [
                self.czxid,
                self.mzxid,
                self.pzxid,
                self.ctime,
                self.mtime,
                self.ephemeral_owner,
            ],
            [self.version, self.cversion, self.aversion],
        )
    }
}

#[derive(Clone)]
pub struct Node {
    pub stat: StoredStat,
    pub acl: u32,
    pub data: Option<Box<[u8]>>,
    pub(crate) children: Children,
}

impl Node {
    /// A node without children.
    pub fn new(stat: StoredStat, data: Option<Box<[u8]>>, acl: u32) -> Node {
        Node {
            stat,
            acl,
            data,
            children: Children::default(),
        }
    }

    pub fn num_children(&self) -> usize {
        self.children.len()
    }

    pub fn data_len(&self) -> usize {
        self.data.as_ref().map_or(0, |d| d.len())
    }

    pub fn kind(&self) -> Kind {
        kind_of(self.stat.ephemeral_owner)
    }

    /// The client-visible Stat (`DataNode.copyStat`).
    pub fn wire_stat(&self) -> Stat {
        let s = &self.stat;
        let n = self.num_children() as i32;
        Stat {
            czxid: s.czxid,
            mzxid: s.mzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            version: s.version,
            cversion: s.cversion.wrapping_mul(2).wrapping_sub(n),
            aversion: s.aversion,
            // Containers and TTL nodes show 0 so clients see them as persistent.
            ephemeral_owner: match self.kind() {
                Kind::Ephemeral(id) => id,
                _ => 0,
            },
            data_length: self.data_len() as i32,
            num_children: n,
            pzxid: s.pzxid,
        }
    }

    pub fn data_vec(&self) -> Option<Vec<u8>> {
        self.data.as_ref().map(|d| d.to_vec())
    }
}

/// Not derived: a derived `Debug` would print the whole subtree.
impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("stat", &self.stat)
            .field("acl", &self.acl)
            .field("data_len", &self.data.as_ref().map(|d| d.len()))
            .field("children", &self.children.len())
            .finish()
    }
}

/// Dropping a subtree one level at a time instead of by recursion: a chain of nodes a few
/// thousand deep (a client can build one) would otherwise overflow the dropping thread's stack.
/// Children still shared with a view are only released.
impl Drop for Node {
    fn drop(&mut self) {
        if self.children.is_empty() {
            return;
        }
        let mut pending = vec![std::mem::take(&mut self.children)];
        while let Some(mut children) = pending.pop() {
            children.release(|mut child| {
                if !child.children.is_empty() {
                    pending.push(std::mem::take(&mut child.children));
                }
            });
        }
    }
}

/// Calls `f` on every node below and including `root`, depth first, siblings in byte order
/// of name, with the node's full path (built in one reused buffer). An explicit stack, not
/// recursion, so a deep tree cannot overflow the stack. Stops early when `f` breaks.
pub(crate) fn depth_first(root: &Node, mut f: impl FnMut(&[u8], &Node) -> ControlFlow<()>) {
    let mut path = vec![b'/'];
    if f(&path, root).is_break() {
        return;
    }
    // Each entry: the children still to visit, and the length of their parent's path.
    let mut stack = vec![(root.children.iter(), 1usize)];
    while let Some((siblings, parent_len)) = stack.last_mut() {
        let parent_len = *parent_len;
        let Some((name, child)) = siblings.next() else {
            stack.pop();
            continue;
        };
        path.truncate(parent_len);
        if parent_len > 1 {
            path.push(b'/');
        }
        path.extend_from_slice(name.as_bytes());
        if f(&path, child).is_break() {
            return;
        }
        if !child.children.is_empty() {
            stack.push((child.children.iter(), path.len()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes the module documentation states, paid once per znode.
    #[test]
    fn a_node_is_88_bytes_with_a_60_byte_stat_and_an_8_byte_empty_children() {
        use std::mem::size_of;
        assert_eq!(size_of::<StoredStat>(), 60);
        assert_eq!(size_of::<Children>(), 8);
        assert_eq!(size_of::<Node>(), 88);
        let n = Node::new(StoredStat::default(), None, 0);
        assert!(n.children.is_empty());
        assert_eq!(n.wire_stat().num_children, 0);
    }
}
