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
//! while a view shares it; the parent with 100k children is a separate tree of 100k znodes.
//!
//! Numbers (the same machine; `before` is the flat map keyed by full path, snapshot format 1):
//!
//! | measure | before |
//! |---|---|
//! | heap bytes per znode (blocks per znode) | 292.6 (3.17) |
//! | resident bytes per znode | 322 |
//! | setData without a view (median of 200) | 5.3 µs |
//! | `snapshot_view()` | 494 ms |
//! | first setData after a view, parent of 1000 | 5–24 µs |
//! | first setData after a view, parent of 100k | 24–29 µs |
//! | `encode()` of the view (183 MiB) | 1.47 s |
//! | `restore` (heap bytes per znode after it) | 3.56 s (292.9) |

use std::alloc::System;
use std::time::{Duration, Instant};

use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use wire::ops::create::CreateRequest;
use wire::ops::data::SetDataRequest;
use wire::{Acl, Request};
use znode_tree::{Entry, Tree, TreeConfig, Txn};

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

    // A write without any view, for comparison.
    let mut plain: Vec<Duration> = (0..200)
        .map(|i| set(&mut tree, &format!("/dir{:04}/node{:07}", i, PARENTS + i)))
        .collect();
    plain.sort();
    println!("setData, no view: median {:?}", plain[plain.len() / 2]);

    let digest = tree.digest();
    let started = Instant::now();
    let view = tree.snapshot_view();
    println!("snapshot_view(): {:?}", started.elapsed());

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

    let mut big = Tree::new(TreeConfig::default());
    create(&mut big, "/big".into());
    for i in 0..100_000 {
        create(&mut big, format!("/big/node{i:07}"));
    }
    let mut first = Vec::new();
    for i in 0..3 {
        let view = big.snapshot_view();
        first.push(set(&mut big, &format!("/big/node{:07}", 1000 * i)));
        drop(view);
    }
    let again = set(&mut big, "/big/node0000001");
    println!("first setData after a view, parent of 100k: {first:?}; no view: {again:?}");

    assert!(
        heap_per < 400.0,
        "over budget: {heap_per:.1} bytes per znode"
    );
}
