//! Snapshot files outlive the code that wrote them: a version-1 snapshot (nodes in sorted
//! full-path order, written by the flat-map encoder) must still restore to the same state.
//!
//! `fixtures/snapshot-v1.bin` was written by the version-1 encoder from the state
//! `fixture_history` builds; the test rebuilds that state from the same entries and compares.

mod common;

use common::{H, SESSION};
use wire::{Acl, Request};
use znode_tree::{Tree, TreeConfig};

const V1: &[u8] = include_bytes!("fixtures/snapshot-v1.bin");

/// `/a`, `/a/b` and `/a-x` sort differently as full paths (`/a`, `/a-x`, `/a/b`) and depth
/// first (`/a`, `/a/b`, `/a-x`); plus an ephemeral, a digest ACL, a container and two sessions.
fn fixture_history(h: &mut H) {
    h.open_session(SESSION);
    h.open_session(0x42);
    h.create("/a", b"a", 0).unwrap();
    h.create("/a/b", b"ab", 0).unwrap();
    h.create_acl(
        "/a-x",
        vec![
            Acl::new(31, "digest", "u:hash"),
            Acl::new(1, "world", "anyone"),
        ],
    )
    .unwrap();
    h.create("/a/b/c", b"", 0).unwrap();
    h.create("/a/e", b"eph", 1).unwrap();
    h.create_container("/box").unwrap();
    h.create("/box/k", b"", 0).unwrap();
    h.create("/a/seq-", b"s", 2).unwrap();
    h.set("/a", b"a2", -1).unwrap();
    h.write(Request::Delete(wire::ops::delete::DeleteRequest {
        path: "/box/k".into(),
        version: -1,
    }))
    .unwrap();
}

/// The fixture's header says version 1, and it is the state `fixture_history` builds: the
/// digest (pinned when the fixture was written, and unchanged by the tree's layout), every
/// count, child list, ACL, ephemeral and session, and what later writes do to it.
#[test]
fn a_version_1_snapshot_restores_to_the_state_that_wrote_it() {
    assert_eq!((&V1[..4], V1[4], V1.len()), (&b"PDKT"[..], 1, 1075));
    let mut built = H::new();
    fixture_history(&mut built);
    let restored = Tree::restore(V1, TreeConfig::default()).expect("version 1 restores");
    assert_eq!(restored.digest(), 12_117_250_375_949_071_667);
    assert_eq!(restored.digest(), built.tree.digest());
    assert_eq!(restored.last_zxid(), 12);
    assert_eq!(restored.node_count(), 12);
    assert_eq!(restored.approximate_data_size(), 93);
    // Re-encoding gives what the live tree encodes to, whatever the current version is.
    assert_eq!(restored.snapshot(), built.tree.snapshot());

    let mut h = H::new();
    h.tree = restored;
    h.zxid = built.zxid;
    h.time = built.time;
    assert_eq!(
        h.children("/").unwrap(),
        vec!["a", "a-x", "box", "zookeeper"]
    );
    assert_eq!(h.children("/a").unwrap(), vec!["b", "e", "seq-0000000002"]);
    assert_eq!(h.children("/a/b").unwrap(), vec!["c"]);
    assert_eq!(h.get("/a").unwrap().0, Some(b"a2".to_vec()));
    assert_eq!(h.stat("/a").unwrap(), built.stat("/a").unwrap());
    assert_eq!(h.stat("/a").unwrap().num_children, 3);
    assert_eq!(h.stat("/a/e").unwrap().ephemeral_owner, SESSION);
    assert_eq!(h.tree.ephemerals_of(SESSION), vec!["/a/e"]);
    assert_eq!(h.tree.session(0x42).map(|s| s.timeout_ms), Some(30_000));
    assert_eq!(h.tree.expired_nodes(i64::MAX), vec!["/box"]);
    let acl = |h: &H| match h.read(Request::GetAcl(wire::ops::get_acl::GetAclRequest {
        path: "/a-x".into(),
    })) {
        Ok(wire::Response::GetAcl(r)) => r.acl,
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(
        acl(&h),
        vec![
            Acl::new(31, "digest", "u:x"),
            Acl::new(1, "world", "anyone")
        ]
    );
    // The restored tree goes on exactly as the tree that wrote the file.
    for t in [&mut h, &mut built] {
        t.create("/a/seq-", b"", 2).unwrap();
        t.delete("/a/b/c", -1).unwrap();
        t.apply(znode_tree::Txn::CloseSession);
    }
    assert_eq!(h.tree.digest(), built.tree.digest());
    assert_eq!(
        h.children("/a").unwrap(),
        vec!["b", "seq-0000000002", "seq-0000000003"]
    );
}
