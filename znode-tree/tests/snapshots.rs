//! The snapshot format's node order and its checks. Version 2 lists nodes depth first with
//! siblings in byte order; version 1 (the flat map's) in sorted full-path order, and files of
//! it must still restore to the same state.
//!
//! `fixtures/snapshot-v1.bin` was written by the version-1 encoder from the state
//! `fixture_history` builds; the test rebuilds that state from the same entries and compares.

mod common;

use common::{H, SESSION};
use wire::jute::{Record, Writer};
use wire::ops::children::GetAllChildrenNumberRequest;
use wire::{Acl, Request, Response};
use znode_tree::{ReadCtx, Tree, TreeConfig, TreeError};

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
/// digest (pinned when the fixture was written, unchanged by the tree's layout, changed with
/// the node hash's function), every
/// count, child list, ACL, ephemeral and session, and what later writes do to it.
#[test]
fn a_version_1_snapshot_restores_to_the_state_that_wrote_it() {
    assert_eq!((&V1[..4], V1[4], V1.len()), (&b"PDKT"[..], 1, 1075));
    let mut built = H::new();
    fixture_history(&mut built);
    let restored = Tree::restore(V1, TreeConfig::default()).expect("version 1 restores");
    // With the FNV-1a node hash of the fixture's day: 12_117_250_375_949_071_667; with XXH3
    // over every part: 12_455_218_134_989_732_684.
    assert_eq!(restored.digest(), 12_897_210_051_775_845_187);
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

/// A snapshot of `paths` (in the order given), each with empty data, a zero stat and the open
/// ACL, at zxid 9 and without sessions: the bytes the encoder would write for such a tree.
fn crafted(version: u8, paths: &[&str]) -> Vec<u8> {
    let mut w = Writer::new();
    w.buf.extend_from_slice(b"PDKT");
    w.write_u8(version);
    w.write_i64(9);
    w.write_i32(0);
    w.write_i32(1);
    w.write_vec(&Acl::open_unsafe(), |w, a| a.encode(w));
    w.write_i32(paths.len() as i32);
    for p in paths {
        w.write_string(p);
        w.write_buffer(Some(b""));
        w.write_i32(0);
        for _ in 0..6 {
            w.write_i64(0);
        }
        for _ in 0..3 {
            w.write_i32(0);
        }
    }
    let mut out = w.into_inner();
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

fn restore(bytes: &[u8]) -> Result<Tree, TreeError> {
    Tree::restore(bytes, TreeConfig::default())
}

/// `/a-x` sorts before `/a/b` as a string (`-` is below `/`) but after it depth first.
#[test]
fn version_2_lists_nodes_depth_first_and_version_1_by_full_path() {
    let v1 = crafted(1, &["/", "/a", "/a-x", "/a/b"]);
    let tree = restore(&v1).expect("version-1 order restores");
    let v2 = tree.snapshot();
    assert_eq!(v2, crafted(2, &["/", "/a", "/a/b", "/a-x"]));
    let again = restore(&v2).expect("version-2 order restores");
    assert_eq!(again.digest(), tree.digest());
    assert_eq!(again.snapshot(), v2);
    assert_eq!((again.node_count(), again.approximate_data_size()), (5, 11));
}

#[test]
fn restore_refuses_nodes_out_of_their_versions_order_with_the_node_named() {
    let bad = |version, paths: &[&str]| restore(&crafted(version, paths)).err();
    let inconsistent = |s: &str| Some(TreeError::Inconsistent(s.into()));
    // Each version's order is not the other's.
    assert_eq!(
        bad(2, &["/", "/a", "/a-x", "/a/b"]),
        inconsistent("node \"/a/b\" has no parent before it in depth-first order")
    );
    assert_eq!(
        bad(1, &["/", "/a", "/a/b", "/a-x"]),
        inconsistent("node \"/a-x\" out of order")
    );
    assert_eq!(
        bad(2, &["/", "/b", "/a"]),
        inconsistent("node \"/a\" is out of depth-first order")
    );
    assert_eq!(
        bad(2, &["/", "/a", "/a"]),
        inconsistent("node \"/a\" is listed twice")
    );
    assert_eq!(
        bad(2, &["/", "/"]),
        inconsistent("node \"/\" is listed twice")
    );
    assert_eq!(
        bad(2, &["/", "/a", "/b/c"]),
        inconsistent("node \"/b/c\" has no parent before it in depth-first order")
    );
    assert_eq!(
        bad(1, &["/", "/a", "/a/b/c"]),
        inconsistent("node \"/a/b/c\" has no parent before it in depth-first order")
    );
    assert_eq!(
        bad(2, &["/", "/a/"]),
        inconsistent("node \"/a/\" has no parent")
    );
    assert_eq!(
        bad(2, &["/", "x"]),
        inconsistent("node \"x\" has no parent")
    );
    assert_eq!(
        bad(2, &["/a"]),
        inconsistent("node \"/a\" comes before the root")
    );
    assert_eq!(bad(2, &[]), inconsistent("no root"));
    assert_eq!(bad(1, &[]), inconsistent("no root"));
    assert_eq!(bad(5, &["/"]), Some(TreeError::SnapshotFormat));
    assert_eq!(bad(0, &["/"]), Some(TreeError::SnapshotFormat));
}

/// A client can build a chain thousands of znodes deep. Walking, writing, encoding, restoring
/// and dropping it must not recurse per level: on a thread with a 128 KiB stack, 3000 levels of
/// recursion would overflow it (and abort the test binary).
#[test]
// The small stack is the test's point; clippy.toml keeps threads out of the library, not here.
#[allow(clippy::disallowed_methods)]
fn a_deep_chain_is_restored_written_encoded_and_dropped_without_recursion() {
    const DEPTH: usize = 3000;
    let mut paths = vec!["/".to_string()];
    let mut p = String::new();
    for _ in 0..DEPTH {
        p.push_str("/d");
        paths.push(p.clone());
    }
    let refs: Vec<&str> = paths.iter().map(|p| p.as_str()).collect();
    let bytes = crafted(2, &refs);
    std::thread::Builder::new()
        .stack_size(128 * 1024)
        .spawn(move || {
            let mut h = H::new();
            h.tree = restore(&bytes).expect("restores");
            h.zxid = 9;
            assert_eq!(h.tree.node_count(), DEPTH + 2);
            let ctx = ReadCtx {
                session_id: 0,
                auth: &[],
            };
            let all = h.tree.read(
                &ctx,
                &Request::GetAllChildrenNumber(GetAllChildrenNumberRequest { path: "/".into() }),
            );
            assert_eq!(
                all,
                Ok(Response::GetAllChildrenNumber(
                    wire::ops::children::GetAllChildrenNumberResponse {
                        total_number: DEPTH as i32
                    }
                ))
            );
            let view = h.tree.snapshot_view();
            h.set(&p, b"deep", -1).expect("the deepest node is written");
            h.create(&format!("{p}/e"), b"", 0).unwrap();
            assert_eq!(view.encode(), bytes, "the view kept the chain as it was");
            let copy = h.tree.clone();
            drop(view);
            drop(h);
            assert_eq!(copy.node_count(), DEPTH + 3);
            drop(copy);
        })
        .expect("spawns")
        .join()
        .expect("no overflow, no panic");
}
