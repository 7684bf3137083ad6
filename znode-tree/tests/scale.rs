//! Scale check (ignored by default; run with `--ignored --nocapture`): 500k znodes with 100
//! bytes of data each, reporting resident memory per znode. ZooKeeper needs roughly 1 KB per
//! such znode; the budget is a third of that.

use wire::ops::create::CreateRequest;
use wire::{Acl, Request};
use znode_tree::{Entry, Tree, TreeConfig, Txn};

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// 1000 parents, then `n - 1000` znodes of 100 bytes spread over them, one entry each.
fn fill(n: usize) -> Tree {
    let mut tree = Tree::new(TreeConfig::default());
    for i in 0..n {
        let zxid = i as i64 + 1;
        let path = if i < 1000 {
            format!("/dir{i:04}")
        } else {
            format!("/dir{:04}/node{i:07}", i % 1000)
        };
        let req = CreateRequest {
            path,
            data: Some(vec![b'x'; 100]),
            acl: Acl::open_unsafe(),
            flags: 0,
        };
        let e = Entry {
            session_id: 1,
            xid: 1,
            time_ms: zxid,
            auth: vec![],
            txn: Txn::Write(Request::Create(req)),
        };
        assert!(tree.apply(zxid, &e).reply.is_ok());
    }
    tree
}

#[test]
#[ignore]
fn half_a_million_znodes_fit_the_memory_budget() {
    const N: usize = 500_000;
    let before = rss_bytes();
    let tree = fill(N);
    let used = rss_bytes().saturating_sub(before);
    println!(
        "{} znodes: {} MiB resident, {} bytes per znode",
        tree.node_count(),
        used >> 20,
        used / N as u64
    );
    assert!(
        used / (N as u64) < 340,
        "over budget: {} bytes per znode",
        used / N as u64
    );
}

/// Prints how long the snapshot path takes at 500k znodes (ignored; a measurement, not a test
/// of speed): clone, serialize, restore.
#[test]
#[ignore]
fn snapshot_costs_at_half_a_million_znodes() {
    let tree = fill(500_000);
    let t = std::time::Instant::now();
    let copy = tree.clone();
    println!("clone: {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let bytes = copy.snapshot();
    println!("snapshot: {:?} ({} MiB)", t.elapsed(), bytes.len() >> 20);
    let t = std::time::Instant::now();
    let restored = Tree::restore(&bytes, TreeConfig::default()).unwrap();
    println!("restore: {:?}", t.elapsed());
    assert_eq!(restored.digest(), tree.digest());
}
