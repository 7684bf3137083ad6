//! A node's children by name: a sorted list cut into chunks of at most `CAP` entries, each
//! chunk behind its own `Arc`. A plain `BTreeMap` would do for lookups, but two of its costs
//! are paid per znode or per snapshot:
//!
//! - copying it (what a write does to each node on its path while a `SnapshotView` shares
//!   that node) touches every child's reference count: 10–16 ms for a parent of 100k children.
//!   Here a copy clones the chunk list (a name and a pointer per chunk) and the one chunk the
//!   write goes through: O(CAP + children / CAP), 14–42 µs at 100k children;
//! - appending in order (sequential znodes, the usual way a parent gets many children)
//!   leaves std's leaves about half full, 60 bytes per 32-byte slot. Here an append past a
//!   full chunk starts the next one, so chunks filled in order stay full; inserts elsewhere
//!   split a full chunk in halves, and a chunk emptied below a quarter merges with a
//!   neighbour when both fit in one.
//!
//! Invariants (`check` tests them): names strictly increase across the whole list, no chunk
//! is empty or holds more than `CAP`, each chunk's pointer sits beside a copy of its first
//! name (finding the chunk is one binary search over one array: getData under a parent of 1M
//! children went from 7 µs to 2.4–3.4 µs with it), `len` is the total. A leaf has no chunks
//! at all: the whole structure is boxed and absent while empty, so it costs a leaf 8 bytes.

use std::sync::Arc;

use crate::name::{Key, Name};
use crate::node::Node;

/// 256 entries of 32 bytes: an 8 KiB chunk, small enough to copy and shift in a few
/// microseconds, large enough that a million children need only about 4000 chunks.
const CAP: usize = 256;

type Entry = (Name, Arc<Node>);
type Chunk = Vec<Entry>;

#[derive(Clone, Default)]
pub(crate) struct Children(Option<Box<Chunks>>);

#[derive(Clone)]
struct Chunks {
    len: usize,
    /// Each chunk after a copy of its first name.
    chunks: Vec<(Name, Arc<Chunk>)>,
}

impl Chunks {
    /// The chunk that holds `name` or would: the last one whose first name is not above it
    /// (the first chunk for a name below all of them).
    fn chunk_for(&self, name: &[u8], key: Option<Key>) -> usize {
        self.chunks
            .partition_point(|(first, _)| first.cmp_bytes(name, key).is_le())
            .saturating_sub(1)
    }

    /// The chunk for `name`, and where in it `name` is (`Ok`) or would go (`Err`).
    fn locate(&self, name: &[u8], key: Option<Key>) -> (usize, Result<usize, usize>) {
        let i = self.chunk_for(name, key);
        let at = self.chunks[i]
            .1
            .binary_search_by(|(k, _)| k.cmp_bytes(name, key));
        (i, at)
    }

    fn find(&self, name: &[u8]) -> Option<(usize, usize)> {
        let (i, at) = self.locate(name, Key::of(name));
        Some((i, at.ok()?))
    }

    fn chunk_mut(&mut self, i: usize) -> &mut Chunk {
        Arc::make_mut(&mut self.chunks[i].1)
    }

    /// After a change at the front of chunk `i`.
    fn refresh_first(&mut self, i: usize) {
        let (first, chunk) = &mut self.chunks[i];
        *first = chunk[0].0.clone();
    }

    fn new_chunk(&mut self, at: usize, entry: Entry) {
        self.chunks
            .insert(at, (entry.0.clone(), Arc::new(vec![entry])));
    }
}

/// Children gathered in strictly increasing name order (restore checks that), straight into
/// full chunks: a parent of 1,000 children no longer grows one vector to 1,000 (copying it at
/// each doubling) and then copies it again into chunks.
#[derive(Default)]
pub(crate) struct SortedChildren {
    len: usize,
    full: Vec<(Name, Arc<Chunk>)>,
    current: Chunk,
}

impl SortedChildren {
    pub fn push(&mut self, name: Name, node: Arc<Node>) {
        if self.current.len() == CAP {
            self.seal(Vec::with_capacity(CAP));
        }
        self.current.push((name, node));
        self.len += 1;
    }

    /// The last name pushed.
    pub fn last(&self) -> Option<&Name> {
        match self.current.last() {
            Some((name, _)) => Some(name),
            None => self
                .full
                .last()
                .and_then(|(_, c)| c.last())
                .map(|(name, _)| name),
        }
    }

    fn seal(&mut self, next: Chunk) {
        let mut chunk = std::mem::replace(&mut self.current, next);
        // Only a parent's last chunk can be short; the doubling may have left it room to spare.
        chunk.shrink_to_fit();
        if let Some((first, _)) = chunk.first() {
            self.full.push((first.clone(), Arc::new(chunk)));
        }
    }

    pub fn finish(mut self) -> Children {
        if self.len == 0 {
            return Children(None);
        }
        self.seal(Vec::new());
        Children(Some(Box::new(Chunks {
            len: self.len,
            chunks: self.full,
        })))
    }
}

impl Children {
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |c| c.len)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub fn get(&self, name: &[u8]) -> Option<&Node> {
        let c = self.0.as_ref()?;
        let (i, j) = c.find(name)?;
        Some(&c.chunks[i].1[j].1)
    }

    /// The child's pointer, for the caller to make its own (`Arc::make_mut`); the chunk that
    /// holds it is made this node's own first, copied if a view shares it.
    pub fn get_mut(&mut self, name: &[u8]) -> Option<&mut Arc<Node>> {
        let c = self.0.as_mut()?;
        let (i, j) = c.find(name)?;
        Some(&mut c.chunk_mut(i)[j].1)
    }

    /// In name order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            chunks: self.0.as_ref().map_or(&[][..], |c| &c.chunks[..]).iter(),
            current: [].iter(),
        }
    }

    /// Adds a child, or replaces the one of that name and returns it.
    pub fn insert(&mut self, name: Name, node: Arc<Node>) -> Option<Arc<Node>> {
        let Some(c) = self.0.as_mut() else {
            let mut c = Chunks {
                len: 0,
                chunks: Vec::new(),
            };
            c.new_chunk(0, (name, node));
            c.len = 1;
            self.0 = Some(Box::new(c));
            return None;
        };
        let (i, at) = c.locate(name.as_bytes(), name.key());
        let j = match at {
            Ok(j) => return Some(std::mem::replace(&mut c.chunk_mut(i)[j].1, node)),
            Err(j) => j,
        };
        c.len += 1;
        let len = c.chunks[i].1.len();
        if len < CAP {
            c.chunk_mut(i).insert(j, (name, node));
            if j == 0 {
                c.refresh_first(i);
            }
        } else if j == len {
            // Past the last name of a full chunk (and below the next chunk's first): the next
            // chunk's front if it has room, else a chunk of its own. Appends in order fill
            // chunk after chunk this way.
            if c.chunks
                .get(i + 1)
                .is_some_and(|(_, next)| next.len() < CAP)
            {
                c.chunk_mut(i + 1).insert(0, (name, node));
                c.refresh_first(i + 1);
            } else {
                c.new_chunk(i + 1, (name, node));
            }
        } else if j == 0 {
            // Below every name (only the first chunk is asked about those).
            c.new_chunk(i, (name, node));
        } else {
            let left = c.chunk_mut(i);
            let mut right = left.split_off(CAP / 2);
            if j <= CAP / 2 {
                left.insert(j, (name, node));
            } else {
                right.insert(j - CAP / 2, (name, node));
            }
            let first = right[0].0.clone();
            c.chunks.insert(i + 1, (first, Arc::new(right)));
        }
        None
    }

    pub fn remove(&mut self, name: &[u8]) -> Option<Arc<Node>> {
        let c = self.0.as_mut()?;
        let (i, j) = c.find(name)?;
        let (_, node) = c.chunk_mut(i).remove(j);
        c.len -= 1;
        if c.len == 0 {
            self.0 = None;
            return Some(node);
        }
        let left = c.chunks[i].1.len();
        if left == 0 {
            c.chunks.remove(i);
            return Some(node);
        }
        if j == 0 {
            c.refresh_first(i);
        }
        if left < CAP / 4 {
            // Merge with a neighbour when both fit in one chunk, so deletes cannot leave many
            // nearly empty chunks behind.
            let pair = if i + 1 < c.chunks.len() {
                Some((i, i + 1))
            } else {
                i.checked_sub(1).map(|h| (h, i))
            };
            if let Some((a, b)) = pair {
                if c.chunks[a].1.len() + c.chunks[b].1.len() <= CAP {
                    let (_, moved) = c.chunks.remove(b);
                    c.chunk_mut(a).extend(Arc::unwrap_or_clone(moved));
                }
            }
        }
        Some(node)
    }

    /// Empties `self`, calling `f` with each child that nothing else shares (a view may still
    /// hold chunks or nodes; those are only released). `Node`'s drop uses it to take a
    /// subtree apart without recursion.
    pub fn release(&mut self, mut f: impl FnMut(Node)) {
        let Some(c) = self.0.take() else {
            return;
        };
        for (_, chunk) in c.chunks {
            let Some(chunk) = Arc::into_inner(chunk) else {
                continue;
            };
            for (_, child) in chunk {
                if let Some(node) = Arc::into_inner(child) {
                    f(node);
                }
            }
        }
    }

    /// The invariants in the module documentation, for tests.
    #[cfg(test)]
    fn check(&self) {
        let Some(c) = self.0.as_ref() else {
            return;
        };
        assert!(!c.chunks.is_empty());
        assert!(c
            .chunks
            .iter()
            .all(|(_, ch)| !ch.is_empty() && ch.len() <= CAP));
        assert!(c.chunks.iter().all(|(first, ch)| *first == ch[0].0));
        assert_eq!(
            c.chunks.iter().map(|(_, ch)| ch.len()).sum::<usize>(),
            c.len
        );
        let names: Vec<&[u8]> = self.iter().map(|(k, _)| k.as_bytes()).collect();
        assert!(names.windows(2).all(|w| w[0] < w[1]), "names out of order");
    }
}

pub(crate) struct Iter<'a> {
    chunks: std::slice::Iter<'a, (Name, Arc<Chunk>)>,
    current: std::slice::Iter<'a, Entry>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Name, &'a Arc<Node>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((k, v)) = self.current.next() {
                return Some((k, v));
            }
            self.current = self.chunks.next()?.1.iter();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::node::StoredStat;

    fn leaf(tag: u32) -> Arc<Node> {
        Arc::new(Node::new(StoredStat::default(), None, tag))
    }

    fn chunk_lens(c: &Children) -> Vec<usize> {
        c.0.as_ref().map_or(vec![], |c| {
            c.chunks.iter().map(|(_, ch)| ch.len()).collect()
        })
    }

    #[test]
    fn sorted_children_come_in_whole_chunks_with_no_room_to_spare() {
        for n in [0usize, 1, 3, 255, 256, 257, 1000] {
            let mut s = SortedChildren::default();
            for i in 0..n {
                s.push(Name::new(&format!("n{i:07}")), leaf(i as u32));
                assert_eq!(
                    s.last().map(Name::as_str),
                    Some(format!("n{i:07}").as_str())
                );
            }
            let c = s.finish();
            c.check();
            assert_eq!(c.len(), n);
            let mut lens = vec![CAP; n / CAP];
            if n % CAP != 0 {
                lens.push(n % CAP);
            }
            assert_eq!(chunk_lens(&c), lens, "{n}");
            if let Some(c) = &c.0 {
                assert!(c.chunks.iter().all(|(_, ch)| ch.capacity() == ch.len()));
            }
            let names: Vec<_> = c.iter().map(|(k, _)| k.as_str().to_owned()).collect();
            let want: Vec<_> = (0..n).map(|i| format!("n{i:07}")).collect();
            assert_eq!(names, want);
        }
    }

    #[test]
    fn appends_in_order_fill_whole_chunks() {
        let mut c = Children::default();
        for i in 0..1000 {
            assert!(c.insert(Name::new(&format!("n{i:07}")), leaf(i)).is_none());
        }
        c.check();
        assert_eq!(chunk_lens(&c), vec![256, 256, 256, 232]);
        // Descending appends fill from the front the same way.
        let mut d = Children::default();
        for i in (0..600).rev() {
            d.insert(Name::new(&format!("n{i:07}")), leaf(i));
        }
        d.check();
        assert_eq!(chunk_lens(&d), vec![88, 256, 256]);
    }

    #[test]
    fn an_insert_inside_a_full_chunk_splits_it_and_removes_merge_back() {
        let mut c = Children::default();
        for i in 0..256 {
            c.insert(Name::new(&format!("n{:07}", 2 * i)), leaf(i));
        }
        assert_eq!(chunk_lens(&c), vec![256]);
        c.insert(Name::new("n0000101"), leaf(999));
        c.check();
        assert_eq!(chunk_lens(&c), vec![129, 128]);
        assert_eq!(c.get(b"n0000101").map(|n| n.acl), Some(999));
        assert!(c.insert(Name::new("n0000101"), leaf(7)).is_some());
        assert_eq!((c.len(), c.get(b"n0000101").map(|n| n.acl)), (257, Some(7)));
        // Empty the second chunk below a quarter: it merges into the first.
        for i in 128..256 {
            assert!(c.remove(format!("n{:07}", 2 * i).as_bytes()).is_some());
            c.check();
        }
        assert_eq!(chunk_lens(&c), vec![129]);
        assert!(c.remove(b"nope").is_none());
    }

    #[test]
    fn a_copy_shares_the_chunks_it_does_not_write() {
        let mut c = Children::default();
        for i in 0..1000 {
            c.insert(Name::new(&format!("n{i:07}")), leaf(i));
        }
        let view = c.clone();
        Arc::make_mut(c.get_mut(b"n0000600").unwrap()).acl = 5;
        let (a, b) = (c.0.as_ref().unwrap(), view.0.as_ref().unwrap());
        let shared: Vec<bool> = (0..4)
            .map(|i| Arc::ptr_eq(&a.chunks[i].1, &b.chunks[i].1))
            .collect();
        assert_eq!(shared, vec![true, true, false, true]);
        assert_eq!(view.get(b"n0000600").map(|n| n.acl), Some(600));
        assert_eq!(c.get(b"n0000600").map(|n| n.acl), Some(5));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Any sequence of inserts and removes (a small key space, so chunks fill, split and
        /// merge) gives the same contents and answers as a BTreeMap, with every invariant.
        #[test]
        fn behaves_as_a_sorted_map(ops in prop::collection::vec((any::<bool>(), 0u16..1200), 1..3000)) {
            let mut c = Children::default();
            let mut model = BTreeMap::new();
            let mut views = Vec::new();
            for (n, (add, k)) in ops.into_iter().enumerate() {
                let key = format!("{k:04}");
                if add {
                    let was = c.insert(Name::new(&key), leaf(n as u32)).map(|o| o.acl);
                    prop_assert_eq!(was, model.insert(key, n as u32));
                } else {
                    prop_assert_eq!(c.remove(key.as_bytes()).map(|o| o.acl), model.remove(&key));
                }
                if n % 500 == 0 {
                    views.push((c.clone(), model.clone()));
                }
            }
            c.check();
            prop_assert_eq!(c.len(), model.len());
            prop_assert_eq!(c.is_empty(), model.is_empty());
            let got: Vec<(String, u32)> =
                c.iter().map(|(k, v)| (k.as_str().to_owned(), v.acl)).collect();
            let want: Vec<(String, u32)> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
            prop_assert_eq!(got, want);
            for k in 0u16..1200 {
                let key = format!("{k:04}");
                prop_assert_eq!(c.get(key.as_bytes()).map(|n| n.acl), model.get(&key).copied());
            }
            // Copies taken on the way were not changed by the writes after them.
            for (view, then) in views {
                view.check();
                let got: Vec<u32> = view.iter().map(|(_, v)| v.acl).collect();
                let want: Vec<u32> = then.values().copied().collect();
                prop_assert_eq!(got, want);
            }
        }
    }
}
