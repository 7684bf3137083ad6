//! Scale measurements at a million znodes (ignored by default; a measurement, run alone and in
//! release: `cargo test -p znode-tree --release --test scale -- --ignored --nocapture`).
//!
//! Method: 1000 parents `/dirNNNN`, then 999,000 znodes `/dirNNNN/nodeNNNNNNN` of 100 bytes
//! spread round-robin over them, one create entry each (1,000,000 created, plus the 4 nodes of
//! a fresh tree). Heap bytes are exact: this binary's global allocator counts the bytes asked
//! for and given back (`stats_alloc`); the allocator's own per-block overhead is not in them,
//! resident memory (`VmRSS` growth) includes it. Times are wall clock on the 2-core dev machine
//! with that counting allocator in place (two atomic adds per allocation), at `nice 19`, so
//! they are upper bounds. "First setData after a view" is the one write that copies its path
//! while a view shares it; the parents with 100k and 1M children are separate trees of one
//! parent each.
//!
//! Numbers, each the range over 4 to 7 runs on the same loaded machine (both versions run in
//! turn). `before` is the flat map keyed by full path (snapshot format 1); `after` is the
//! hierarchical copy-on-write layout with chunked children (format 2). Heap bytes are exact
//! and the same on every run.
//!
//! | measure | before | after |
//! |---|---|---|
//! | heap bytes per znode (blocks per znode) | 292.6 (3.17) | 237.1 (2.01) |
//! | resident bytes per znode | 322 | 258 |
//! | getData (median of 1000; parents of 1000) | 3.4–5.4 µs | 2.3–3.4 µs |
//! | getData (median of 1000; a parent of 100k) | 1.9–4.5 µs | 1.9–2.0 µs |
//! | getData (median of 1000; a parent of 1M) | 3.1–4.2 µs | 2.4–3.4 µs |
//! | setData without a view (median of 200) | 2.6–5.3 µs | 3.2–3.7 µs |
//! | `snapshot_view()` | 158–494 ms | 2.5–3.9 µs |
//! | first setData after a view, parents of 1000 | 3–24 µs | 10–46 µs |
//! | first setData after a view, a parent of 100k | 13–29 µs | 14–42 µs |
//! | first setData after a view, a parent of 1M | 16–24 µs | 72–673 µs |
//! | `encode()` of the view (183 MiB) | 0.45–1.47 s | 0.31–0.53 s |
//! | `restore` | 1.7–3.6 s | 1.1–1.3 s |
//! | heap bytes per znode of the restored tree | 292.9 | 236.3 |
//!
//! Before, the view copied every key and pointer (the stall); a write after it then copied only
//! its node. After, the view copies nothing per znode and the first write below each node after
//! it copies that node's path: each node on it, its chunk list and one chunk of 256 children.
//! With a plain `BTreeMap` per node (the layout's first version) that copy cloned whole child
//! maps: 0.17–1.2 ms for a parent of 1000 and 10–16 ms for a parent of 100k, at 267.8 heap
//! bytes per znode (std's leaves are half full when children are appended in order). Where the
//! 237 bytes go: 104 for the node and its `Arc` counts, 100 of data, 32 for its slot in its
//! parent's chunk.
//!
//! The node hash (the digest's part per znode, computed at every write and for every node a
//! restore builds) then went from FNV-1a, a byte at a time, to XXH3: `restore` 822–941 ms →
//! 589–603 ms and setData 3.7–3.9 µs → 2.8–3.6 µs, alternating the two builds twice (2 Dec).
//!
//! A child lookup's binary search then compared names by three big-endian words and a length
//! (`name::Key`) instead of a `memcmp` call per step: the fill of 1M znodes 5.03–5.13 s →
//! 4.26–4.37 s, alternating the two builds twice, pinned to one core (4 Dec). A restart's log
//! replay had spent 35% of its samples in that search (`memcmp`, `Chunks::find`, `chunk_for`).

// A measurement, not the state machine: it times the tree with the wall clock that
// clippy.toml keeps out of the library.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::alloc::System;
use std::time::{Duration, Instant};

use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use wire::ops::create::CreateRequest;
use wire::ops::data::{GetDataRequest, SetDataRequest};
use wire::{Acl, Request};
use znode_tree::{Entry, ReadCtx, Tree, TreeConfig, Txn};

#[global_allocator]
static HEAP: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const PARENTS: usize = 1000;
const ZNODES: usize = 1_000_000;

/// Live heap bytes and blocks right now.
fn heap() -> (i64, i64) {
    let s = HEAP.stats();
    (
        s.bytes_allocated as i64 - s.bytes_deallocated as i64,
        s.allocations as i64 - s.deallocations as i64,
    )
}

fn rss_bytes() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<i64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn write(tree: &mut Tree, req: Request) -> Duration {
    let zxid = tree.last_zxid() + 1;
    let e = Entry {
        session_id: 1,
        xid: 1,
        time_ms: zxid,
        auth: vec![],
        via: None,
        txn: Txn::Write(req),
    };
    let t = Instant::now();
    let applied = tree.apply(zxid, &e);
    let took = t.elapsed();
    assert!(applied.reply.is_ok(), "{:?}", applied.reply);
    took
}

fn create(tree: &mut Tree, path: String) {
    write(
        tree,
        Request::Create(CreateRequest {
            path,
            data: Some(vec![b'x'; 100]),
            acl: Acl::open_unsafe(),
            flags: 0,
        }),
    );
}

fn set(tree: &mut Tree, path: &str) -> Duration {
    write(
        tree,
        Request::SetData(SetDataRequest {
            path: path.into(),
            data: Some(vec![b'y'; 100]),
            version: -1,
        }),
    )
}

/// The median of 1000 getData calls, over `path(i)` for i in 0..1000.
fn median_get(tree: &Tree, path: impl Fn(usize) -> String) -> Duration {
    let ctx = ReadCtx {
        session_id: 1,
        auth: &[],
    };
    let mut times: Vec<Duration> = (0..1000)
        .map(|i| {
            let req = Request::GetData(GetDataRequest {
                path: path(i),
                watch: false,
            });
            let t = Instant::now();
            let r = tree.read(&ctx, &req);
            let took = t.elapsed();
            assert!(r.is_ok());
            took
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// `PARENTS` parents, then `n - PARENTS` znodes of 100 bytes spread over them.
fn fill(n: usize) -> Tree {
    let mut tree = Tree::new(TreeConfig::default());
    for i in 0..n {
        let path = if i < PARENTS {
            format!("/dir{i:04}")
        } else {
            format!("/dir{:04}/node{i:07}", i % PARENTS)
        };
        create(&mut tree, path);
    }
    tree
}

fn per_znode(bytes: i64) -> f64 {
    bytes as f64 / ZNODES as f64
}

#[test]
#[ignore]
fn a_million_znodes_memory_and_snapshot_costs() {
    let (heap0, blocks0) = heap();
    let rss0 = rss_bytes();
    let started = Instant::now();
    let mut tree = fill(ZNODES);
    let fill_took = started.elapsed();
    let (heap1, blocks1) = heap();
    let rss1 = rss_bytes();
    let heap_per = per_znode(heap1 - heap0);
    println!(
        "{} znodes in {fill_took:?}: {heap_per:.1} heap bytes per znode ({:.2} blocks), \
         {:.1} resident bytes per znode",
        tree.node_count(),
        per_znode(blocks1 - blocks0),
        per_znode(rss1 - rss0)
    );

    let get = median_get(&tree, |i| {
        let n = PARENTS + (i * 7919) % (ZNODES - PARENTS);
        format!("/dir{:04}/node{n:07}", n % PARENTS)
    });
    println!("getData: median {get:?}");

    // A write without any view, for comparison.
    let mut plain: Vec<Duration> = (0..200)
        .map(|i| set(&mut tree, &format!("/dir{:04}/node{:07}", i, PARENTS + i)))
        .collect();
    plain.sort();
    println!("setData, no view: median {:?}", plain[plain.len() / 2]);

    let digest = tree.digest();
    let started = Instant::now();
    let view = tree.snapshot_view();
    let view_took = started.elapsed();
    println!("snapshot_view(): {view_took:?}");

    // The first write into each of five parents while the view lives, then a second write into
    // the first of them (its path is already this tree's own).
    let first: Vec<Duration> = (0..5)
        .map(|i| {
            set(
                &mut tree,
                &format!("/dir{:04}/node{:07}", 10 + i, PARENTS + 10 + i),
            )
        })
        .collect();
    let again = set(&mut tree, &format!("/dir0010/node{:07}", 2 * PARENTS + 10));
    println!("first setData after the view, parents of 1000: {first:?}; again: {again:?}");
    let mut after_view = first;

    let started = Instant::now();
    let bytes = view.encode();
    println!(
        "encode(): {:?} for {} MiB",
        started.elapsed(),
        bytes.len() >> 20
    );
    drop(view);

    let (heap2, _) = heap();
    let started = Instant::now();
    let restored = Tree::restore(&bytes, TreeConfig::default()).expect("restores");
    let restore_took = started.elapsed();
    let (heap3, _) = heap();
    println!(
        "restore: {restore_took:?}, {:.1} heap bytes per znode",
        per_znode(heap3 - heap2)
    );
    assert_eq!(restored.digest(), digest);
    assert_eq!(restored.node_count(), tree.node_count());
    drop(restored);
    drop(bytes);
    drop(tree);

    for (children, label) in [(100_000, "100k"), (1_000_000, "1M")] {
        let mut big = Tree::new(TreeConfig::default());
        create(&mut big, "/big".into());
        for i in 0..children {
            create(&mut big, format!("/big/node{i:07}"));
        }
        let get = median_get(&big, |i| format!("/big/node{:07}", (i * 7919) % children));
        println!("getData, a parent of {label}: median {get:?}");
        let mut first = Vec::new();
        for i in 0..3 {
            let view = big.snapshot_view();
            first.push(set(&mut big, &format!("/big/node{:07}", 1000 * i)));
            drop(view);
        }
        let again = set(&mut big, "/big/node0000001");
        println!("first setData after a view, a parent of {label}: {first:?}; no view: {again:?}");
        after_view.extend(first);
    }

    // The targets: a snapshot never stalls the tree's owner for 10 ms (the view, then the
    // path copies of the writes after it), and the layout stays as compact as measured.
    assert!(view_took < Duration::from_millis(10), "view: {view_took:?}");
    let worst = after_view.iter().max().copied().unwrap_or_default();
    assert!(worst < Duration::from_millis(10), "path copy: {worst:?}");
    assert!(
        heap_per < 240.0,
        "over budget: {heap_per:.1} bytes per znode"
    );
}
