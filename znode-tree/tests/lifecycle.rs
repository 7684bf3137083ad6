//! Expiry (containers, TTL), multiRead, entries on the wire, snapshots and determinism.

mod common;

use common::{stat, H, SESSION};
use wire::ops::children::GetChildrenRequest;
use wire::ops::data::{GetDataRequest, SetDataRequest};
use wire::{perms, Acl, ErrorCode, Id, MultiResult, Request, Response};
use znode_tree::{Change, Entry, ReadCtx, Restore, Tree, TreeConfig, TreeError, Txn};

fn ttl_cfg() -> TreeConfig {
    TreeConfig {
        extended_types: true,
        ..TreeConfig::default()
    }
}

/// `znode.container.maxNeverUsedIntervalMs`: a container that never had a child becomes a
/// candidate once `now - mtime` exceeds the interval (strictly), and never with 0.
#[test]
fn a_never_used_container_expires_after_the_never_used_interval() {
    let mut h = H::new();
    h.create_container("/box").unwrap();
    let mtime = h.get("/box").unwrap().1.mtime;
    assert!(h.tree.expired_nodes_with(i64::MAX, 0).is_empty());
    assert!(h.tree.expired_nodes_with(mtime + 500, 500).is_empty());
    assert_eq!(h.tree.expired_nodes_with(mtime + 501, 500), vec!["/box"]);
    // A child keeps it, as for any container.
    h.create("/box/c", b"", 0).unwrap();
    assert!(h.tree.expired_nodes_with(i64::MAX, 500).is_empty());
    let a = h.apply(Txn::DeleteExpired {
        path: "/box".into(),
    });
    assert_eq!(a.reply, Err(ErrorCode::NotEmpty));
}

#[test]
fn container_expires_only_after_it_had_children_and_lost_them() {
    let mut h = H::new();
    let (p, st) = h.create_container("/box").unwrap();
    assert_eq!(p, "/box");
    // Wire owner is 0 even though the stored owner is Long.MIN_VALUE.
    assert_eq!(st, stat(1, 1, 1010, 1010, 0, 0, 0, 0, 0, 0, 1));
    assert!(h.tree.expired_nodes(i64::MAX).is_empty());
    h.create("/box/c", b"", 0).unwrap();
    assert!(h.tree.expired_nodes(i64::MAX).is_empty());
    h.delete("/box/c", -1).unwrap();
    assert_eq!(h.tree.expired_nodes(0), vec!["/box"]);
    // A child that appears before the cleanup entry applies wins: NotEmpty.
    h.create("/box/d", b"", 0).unwrap();
    let a = h.apply(Txn::DeleteExpired {
        path: "/box".into(),
    });
    assert_eq!(a.reply, Err(ErrorCode::NotEmpty));
    h.delete("/box/d", -1).unwrap();
    let a = h.apply(Txn::DeleteExpired {
        path: "/box".into(),
    });
    assert_eq!(a.reply, Ok(Response::Empty));
    assert_eq!(
        a.changes,
        vec![
            Change::Deleted {
                path: "/box".into(),
                acl: Acl::open_unsafe().into()
            },
            Change::ChildrenChanged {
                path: "/".into(),
                acl: Acl::open_unsafe().into()
            }
        ]
    );
    assert!(h.tree.expired_nodes(i64::MAX).is_empty());
}

#[test]
fn ttl_node_expires_when_idle_longer_than_its_ttl_and_childless() {
    let mut h = H::with(ttl_cfg());
    let (_, st) = h.create_ttl("/t", 5, 100).unwrap(); // zxid 1, mtime 1010
    assert_eq!(st.ephemeral_owner, 0);
    assert!(h.tree.expired_nodes(1110).is_empty());
    assert_eq!(h.tree.expired_nodes(1111), vec!["/t"]);
    h.create("/t/c", b"", 0).unwrap();
    assert!(h.tree.expired_nodes(10_000).is_empty());
    h.delete("/t/c", -1).unwrap();
    // Only setData moves mtime.
    h.set("/t", b"x", -1).unwrap(); // zxid 4, time 1040
    assert!(h.tree.expired_nodes(1140).is_empty());
    assert_eq!(h.tree.expired_nodes(1141), vec!["/t"]);
    assert_eq!(
        h.apply(Txn::DeleteExpired { path: "/t".into() }).reply,
        Ok(Response::Empty)
    );
}

#[test]
fn expired_nodes_are_sorted_and_skip_plain_nodes() {
    let mut h = H::with(ttl_cfg());
    h.create_ttl("/z", 5, 1).unwrap();
    h.create_ttl("/a", 6, 1).unwrap();
    h.create("/plain", b"", 0).unwrap();
    assert_eq!(h.tree.expired_nodes(1_000_000), vec!["/a0000000001", "/z"]);
}

#[test]
fn delete_expired_refuses_ephemerals_special_paths_and_missing_nodes() {
    let mut h = H::with_session();
    h.create("/e", b"", 1).unwrap();
    assert_eq!(
        h.apply(Txn::DeleteExpired { path: "/e".into() }).reply,
        Err(ErrorCode::BadVersion)
    );
    assert_eq!(
        h.apply(Txn::DeleteExpired {
            path: "/zookeeper".into()
        })
        .reply,
        Err(ErrorCode::BadArguments)
    );
    assert_eq!(
        h.apply(Txn::DeleteExpired {
            path: "/nope".into()
        })
        .reply,
        Err(ErrorCode::NoNode)
    );
    // No ACL check: cleanup runs as the server.
    h.create_acl(
        "/locked",
        vec![Acl::new(wire::perms::READ, "world", "anyone")],
    )
    .unwrap();
    h.auth = vec![Id::new("super", "")];
    h.create_container("/locked/box").unwrap();
    h.auth = vec![];
    assert_eq!(h.delete("/locked/box", -1), Err(ErrorCode::NoAuth));
    assert_eq!(
        h.apply(Txn::DeleteExpired {
            path: "/locked/box".into()
        })
        .reply,
        Ok(Response::Empty)
    );
}

#[test]
fn ttl_create_rules() {
    let mut off = H::new();
    assert_eq!(off.create_ttl("/t", 5, 100), Err(ErrorCode::Unimplemented));
    assert_eq!(off.create_ttl("/t", 0, 100), Err(ErrorCode::BadArguments));
    assert_eq!(off.create("/t", b"", 5), Err(ErrorCode::Unimplemented));
    let mut on = H::with(ttl_cfg());
    assert_eq!(on.create("/t", b"", 6), Err(ErrorCode::BadArguments));
    assert_eq!(on.create_ttl("/t", 0, 100), Err(ErrorCode::BadArguments));
    assert_eq!(on.create_ttl("/t", 5, -5), Err(ErrorCode::BadArguments));
    assert_eq!(on.create_ttl("/t", 1, 100), Err(ErrorCode::BadArguments));
    // createTTL with a plain mode and no ttl is a plain create.
    assert_eq!(on.create_ttl("/t", 0, -1).map(|r| r.0), Ok("/t".into()));
}

#[test]
fn multi_read_runs_each_op_independently() {
    let mut h = H::new();
    h.create("/a", b"data", 0).unwrap();
    h.create("/a/k", b"", 0).unwrap();
    h.create_acl("/s", vec![Acl::new(wire::perms::WRITE, "world", "anyone")])
        .unwrap();
    let r = h.read(Request::MultiRead(vec![
        Request::GetData(GetDataRequest {
            path: "/a".into(),
            watch: true,
        }),
        Request::GetChildren(GetChildrenRequest {
            path: "/missing".into(),
            watch: false,
        }),
        Request::GetChildren(GetChildrenRequest {
            path: "/a".into(),
            watch: false,
        }),
        Request::GetData(GetDataRequest {
            path: "/s".into(),
            watch: false,
        }),
    ]));
    assert_eq!(
        r,
        Ok(Response::Multi(vec![
            MultiResult::GetData {
                data: Some(b"data".to_vec()),
                stat: stat(1, 1, 1010, 1010, 0, 1, 0, 0, 4, 1, 2)
            },
            MultiResult::Error(ErrorCode::NoNode.code()),
            MultiResult::GetChildren {
                children: vec!["k".into()]
            },
            MultiResult::Error(ErrorCode::NoAuth.code()),
        ]))
    );
}

/// As ZooKeeper 3.9.5 answers (back-to-back suite): create2 with a plain mode keeps its stat, a
/// container mode sent as plain create gives a create2-style result with its stat, createContainer
/// with a plain mode keeps its create2-style result, and createTTL with a non-TTL mode is a plain
/// create whose ttl is ignored.
#[test]
fn multi_create_results_follow_the_mode_not_the_opcode() {
    let mut h = H::new();
    let r = h.write(Request::Multi(vec![
        Request::Create(H::create_req("/a", b"", 0)),
        Request::Create2(H::create_req("/b", b"xy", 0)),
        Request::CreateContainer(H::create_req("/c", b"", 4)),
        Request::Create(H::create_req("/d", b"", 4)),
        Request::CreateContainer(H::create_req("/f", b"", 0)),
        Request::CreateTtl(wire::ops::create::CreateTtlRequest {
            path: "/e".into(),
            data: None,
            acl: Acl::open_unsafe(),
            flags: 0,
            ttl: 5000,
        }),
    ]));
    assert_eq!(
        r,
        Ok(Response::Multi(vec![
            MultiResult::Create { path: "/a".into() },
            MultiResult::Create2 {
                path: "/b".into(),
                stat: stat(1, 1, 1010, 1010, 0, 0, 0, 0, 2, 0, 1)
            },
            MultiResult::Create2 {
                path: "/c".into(),
                stat: stat(1, 1, 1010, 1010, 0, 0, 0, 0, 0, 0, 1)
            },
            MultiResult::Create2 {
                path: "/d".into(),
                stat: stat(1, 1, 1010, 1010, 0, 0, 0, 0, 0, 0, 1)
            },
            MultiResult::Create2 {
                path: "/f".into(),
                stat: stat(1, 1, 1010, 1010, 0, 0, 0, 0, 0, 0, 1)
            },
            MultiResult::Create { path: "/e".into() },
        ]))
    );
}

/// An invalid mode, or a TTL mode without the createTTL record, fails the whole multi at
/// decode time in ZooKeeper: MarshallingError in the header, no per-op results.
#[test]
fn multi_with_an_invalid_or_ttl_mode_in_a_plain_create_is_a_marshalling_error() {
    let mut h = H::new();
    for flags in [7, -1, 5, 6] {
        let r = h.write(Request::Multi(vec![
            Request::Create(H::create_req("/ok", b"", 0)),
            Request::Create(H::create_req("/bad", b"", flags)),
        ]));
        assert_eq!(r, Err(ErrorCode::MarshallingError), "flags {flags}");
    }
    assert_eq!(
        h.tree.read(
            &ReadCtx {
                session_id: 0,
                auth: &[]
            },
            &Request::Exists(wire::ops::exists::ExistsRequest {
                path: "/ok".into(),
                watch: false
            })
        ),
        Err(ErrorCode::NoNode)
    );
}

/// createTTL (opcode 21) with an invalid mode is not a decode error in ZooKeeper 3.9.5:
/// `Op.create(.., flags, ttl)` makes it a plain create keeping the flags, and the op's own check
/// refuses them with BadArguments, so the multi fails per op (found by the back-to-back suite's
/// fresh seed 814387570: ZooKeeper `[error -8]`, paddock answered MarshallingError).
#[test]
fn multi_createttl_with_an_invalid_mode_fails_that_op_with_bad_arguments() {
    let mut h = H::new();
    for flags in [7, -1, 100] {
        let r = h.write(Request::Multi(vec![
            Request::Create(H::create_req("/ok", b"", 0)),
            Request::CreateTtl(wire::ops::create::CreateTtlRequest {
                path: "/bad".into(),
                data: Some(b"x".to_vec()),
                acl: Acl::open_unsafe(),
                flags,
                ttl: 3_600_000,
            }),
            Request::Create(H::create_req("/after", b"", 0)),
        ]));
        assert_eq!(
            r,
            Ok(Response::Multi(vec![
                MultiResult::error(ErrorCode::Ok),
                MultiResult::error(ErrorCode::BadArguments),
                MultiResult::error(ErrorCode::RuntimeInconsistency),
            ])),
            "flags {flags}"
        );
    }
    for path in ["/ok", "/bad", "/after"] {
        assert_eq!(
            h.tree.read(
                &ReadCtx {
                    session_id: 0,
                    auth: &[]
                },
                &Request::Exists(wire::ops::exists::ExistsRequest {
                    path: path.into(),
                    watch: false
                })
            ),
            Err(ErrorCode::NoNode),
            "{path}"
        );
    }
}

#[test]
fn failed_multi_restores_counters_indexes_and_acl_table() {
    let mut h = H::with_session();
    h.create("/keep", b"12345", 0).unwrap();
    let before = (
        h.tree.digest(),
        h.tree.node_count(),
        h.tree.approximate_data_size(),
        h.tree.ephemerals_count(),
    );
    let snap = h.tree.snapshot();
    let a = h.apply(Txn::Write(Request::Multi(vec![
        Request::Create(wire::ops::create::CreateRequest {
            path: "/n".into(),
            data: Some(b"abc".to_vec()),
            acl: vec![Acl::new(31, "digest", "x:y")],
            flags: 1,
        }),
        Request::SetData(wire::ops::data::SetDataRequest {
            path: "/keep".into(),
            data: None,
            version: 0,
        }),
        Request::Delete(wire::ops::delete::DeleteRequest {
            path: "/keep".into(),
            version: -1,
        }),
        Request::Delete(wire::ops::delete::DeleteRequest {
            path: "/keep".into(),
            version: -1,
        }),
    ])));
    assert_eq!(
        a.reply,
        Ok(Response::Multi(vec![
            MultiResult::Error(0),
            MultiResult::Error(0),
            MultiResult::Error(0),
            MultiResult::Error(ErrorCode::NoNode.code())
        ]))
    );
    assert!(a.changes.is_empty());
    // Everything but last_zxid is back; the snapshot differs only in that.
    assert_eq!(h.tree.node_count(), before.1);
    assert_eq!(h.tree.approximate_data_size(), before.2);
    assert_eq!(h.tree.ephemerals_count(), before.3);
    assert_eq!(h.get("/keep").unwrap().0, Some(b"12345".to_vec()));
    let mut restored = Tree::restore(&snap, TreeConfig::default()).unwrap();
    restored.apply(h.zxid, &h.entry(Txn::Write(Request::Ping)));
    assert_eq!(restored.digest(), h.tree.digest());
    assert_ne!(before.0, h.tree.digest());
}

#[test]
fn entries_round_trip_and_bad_bytes_are_errors() {
    let entries = vec![
        Entry {
            session_id: 1,
            xid: 2,
            time_ms: 3,
            auth: vec![Id::new("digest", "u:h"), Id::new("ip", "1.2.3.4")],
            via: None,
            txn: Txn::CloseSession,
        },
        Entry {
            session_id: -1,
            xid: 0,
            time_ms: 0,
            auth: vec![],
            via: None,
            txn: Txn::CreateSession {
                timeout_ms: 4000,
                password: [9; 16],
            },
        },
        Entry {
            session_id: 5,
            xid: 6,
            time_ms: 7,
            auth: vec![],
            via: None,
            txn: Txn::DeleteExpired { path: "/c".into() },
        },
        Entry {
            session_id: 5,
            xid: 6,
            time_ms: 7,
            auth: vec![],
            via: None,
            txn: Txn::Write(Request::Multi(vec![Request::Create(H::create_req(
                "/x", b"d", 1,
            ))])),
        },
    ];
    for e in &entries {
        let b = e.encode();
        assert_eq!(b[0], 1);
        assert_eq!(&Entry::decode(&b).unwrap(), e);
        // Every strict prefix is refused with an error, never a panic.
        for n in 0..b.len() {
            assert!(Entry::decode(&b[..n]).is_err(), "prefix {n} of {e:?}");
        }
    }
    // A write's body is encoded in place behind its length: the bytes are exactly the
    // documented layout, with the body as a jute buffer (what logs already written hold).
    let write = &entries[3];
    let Txn::Write(req) = &write.txn else {
        unreachable!()
    };
    let body = req.body_bytes();
    let mut want = vec![1u8];
    want.extend_from_slice(&5i64.to_be_bytes());
    want.extend_from_slice(&6i32.to_be_bytes());
    want.extend_from_slice(&7i64.to_be_bytes());
    want.extend_from_slice(&0i32.to_be_bytes()); // no auth ids
    want.push(2);
    want.extend_from_slice(&req.opcode().code().to_be_bytes());
    want.extend_from_slice(&(body.len() as i32).to_be_bytes());
    want.extend_from_slice(&body);
    assert_eq!(write.encode(), want);
    assert_eq!(Entry::decode(&[]), Err(TreeError::EmptyEntry));
    assert_eq!(Entry::decode(&[2]), Err(TreeError::EntryVersion(2)));
    let mut b = entries[0].encode();
    let tag_at = b.len() - 1;
    b[tag_at] = 9;
    assert_eq!(Entry::decode(&b), Err(TreeError::EntryTag(9)));
}

#[test]
fn write_entries_with_read_requests_are_unimplemented_but_count() {
    let mut h = H::new();
    let r = h.write(Request::GetData(GetDataRequest {
        path: "/".into(),
        watch: false,
    }));
    assert_eq!(r, Err(ErrorCode::Unimplemented));
    assert_eq!(h.tree.last_zxid(), 1);
}

fn busy_history(h: &mut H) {
    h.open_session(SESSION);
    h.open_session(77);
    h.create("/a", b"one", 0).unwrap();
    h.create("/a/s-", b"", 2).unwrap();
    h.create("/e", b"eph", 1).unwrap();
    h.create_acl(
        "/acl",
        vec![
            Acl::new(31, "digest", "u:h"),
            Acl::new(1, "world", "anyone"),
        ],
    )
    .unwrap();
    h.set("/a", b"two", -1).unwrap();
    h.create_container("/box").unwrap();
    h.create("/box/x", b"", 0).unwrap();
    h.delete("/box/x", -1).unwrap();
    h.write(Request::Multi(vec![
        Request::Create(H::create_req("/m", b"", 0)),
        Request::Delete(wire::ops::delete::DeleteRequest {
            path: "/zz".into(),
            version: -1,
        }),
    ]))
    .unwrap();
    h.create("/zookeeper/quota/a", b"", 0).unwrap();
    h.create(
        "/zookeeper/quota/a/zookeeper_limits",
        b"count=10,bytes=100",
        0,
    )
    .unwrap();
    h.create("/zookeeper/quota/a/zookeeper_stats", b"", 0)
        .unwrap();
    h.create("/a/t", b"xx", 0).unwrap();
    let set_acl = |acl, version| {
        Request::SetAcl(wire::ops::set_acl::SetAclRequest {
            path: "/acl".into(),
            acl,
            version,
        })
    };
    h.write(set_acl(Acl::read_unsafe(), -1)).unwrap_err(); // no ADMIN for anyone: NoAuth
    h.auth = vec![Id::new("digest", "u:h")];
    h.write(set_acl(vec![Acl::new(31, "digest", "u:h")], 0))
        .unwrap();
    // A failed multi that touched data, quota stats, ACLs and the sequence counter.
    h.write(Request::Multi(vec![
        Request::Create(H::create_req("/a/s-", b"zz", 2)),
        Request::SetData(wire::ops::data::SetDataRequest {
            path: "/a".into(),
            data: None,
            version: -1,
        }),
        Request::Delete(wire::ops::delete::DeleteRequest {
            path: "/acl".into(),
            version: 7,
        }),
    ]))
    .unwrap();
    h.auth = vec![];
}

#[test]
fn same_entries_give_same_digest_and_snapshot_bytes() {
    let mut h1 = H::new();
    let mut h2 = H::new();
    busy_history(&mut h1);
    busy_history(&mut h2);
    assert_eq!(h1.tree.digest(), h2.tree.digest());
    assert_eq!(h1.tree.snapshot(), h2.tree.snapshot());
    let mut h3 = H::new();
    busy_history(&mut h3);
    h3.set("/a", b"different", -1).unwrap();
    assert_ne!(h1.tree.digest(), h3.tree.digest());
}

#[test]
fn a_refused_set_changes_nothing_even_while_a_snapshot_view_shares_the_nodes() {
    // setData checks and changes the node in one walk down its path, which copies the nodes a
    // view shares before the checks run: a refusal must leave the tree's digest, size and
    // contents, and the view, as they were. A refused txn still takes its zxid (the digest and
    // the snapshot hold the last one), so the twin makes as many refused deletes of no node.
    let history = |h: &mut H| {
        busy_history(h);
        h.create("/deep", b"", 0).unwrap();
        h.create("/deep/er", b"", 0).unwrap();
        h.create_acl(
            "/deep/er/ro",
            vec![Acl::new(perms::READ, "world", "anyone")],
        )
        .unwrap();
    };
    let (mut h, mut twin) = (H::new(), H::new());
    history(&mut h);
    history(&mut twin);
    let then = h.tree.snapshot();
    let size = h.tree.approximate_data_size();
    let view = h.tree.snapshot_view();
    let version = h.get("/a").unwrap().1.version;
    assert_eq!(h.set("/a", b"x", version + 1), Err(ErrorCode::BadVersion));
    assert_eq!(h.set("/deep/er/ro", b"x", -1), Err(ErrorCode::NoAuth));
    assert_eq!(h.set("/deep/er/none", b"x", -1), Err(ErrorCode::NoNode));
    for _ in 0..3 {
        assert_eq!(twin.delete("/none", -1), Err(ErrorCode::NoNode));
    }
    assert_eq!(h.tree.digest(), twin.tree.digest());
    assert_eq!(h.tree.snapshot(), twin.tree.snapshot());
    assert_eq!(h.tree.approximate_data_size(), size);
    assert_eq!(view.encode(), then);
    // The one that passes changes the live tree alone.
    h.set("/deep/er", b"yes", 0).unwrap();
    twin.set("/deep/er", b"yes", 0).unwrap();
    assert_eq!(h.tree.digest(), twin.tree.digest());
    assert_eq!(h.tree.approximate_data_size(), size + 3);
    assert_eq!(view.encode(), then);
    let restored = Tree::restore(&h.tree.snapshot(), TreeConfig::default()).unwrap();
    assert_eq!(restored.digest(), h.tree.digest());
}

#[test]
fn a_snapshot_view_encodes_the_state_it_was_taken_at_whatever_changes_after() {
    let mut h = H::new();
    busy_history(&mut h);
    let then = h.tree.snapshot();
    let digest_then = h.tree.digest();
    let view = h.tree.snapshot_view();
    assert_eq!(view.last_zxid(), h.tree.last_zxid());
    let mut children = h.children("/a").unwrap();

    // Change, remove and add nodes (parents' child counts too), ACLs and sessions.
    h.set("/a", b"three", -1).unwrap();
    h.delete("/e", -1).unwrap();
    h.create("/later", b"new", 0).unwrap();
    h.create("/a/child", b"", 0).unwrap();
    h.create_acl("/acl2", vec![Acl::new(31, "digest", "v:h")])
        .unwrap();
    h.open_session(88);
    assert_ne!(h.tree.snapshot(), then);

    let bytes = view.encode();
    assert_eq!(bytes, then, "the view kept the state it was taken at");
    let restored = Tree::restore(&bytes, TreeConfig::default()).unwrap();
    assert_eq!(restored.digest(), digest_then);
    // And the live tree is what the writes made it, untouched by the view.
    assert_eq!(h.get("/a").unwrap().0.as_deref(), Some(&b"three"[..]));
    children.push("child".to_string());
    children.sort();
    assert_eq!(h.children("/a").unwrap(), children);
    drop(view);
    h.set("/a", b"four", -1).unwrap();
    assert_eq!(h.get("/a").unwrap().0.as_deref(), Some(&b"four"[..]));
}

#[test]
fn restore_then_replay_matches_the_live_tree() {
    let mut live = H::new();
    busy_history(&mut live);
    let snap = live.tree.snapshot();
    let restored = Tree::restore(&snap, TreeConfig::default()).unwrap();
    assert_eq!(restored.digest(), live.tree.digest());
    assert_eq!(restored.snapshot(), snap);
    assert_eq!(restored.last_zxid(), live.tree.last_zxid());
    assert_eq!(restored.node_count(), live.tree.node_count());
    assert_eq!(
        restored.approximate_data_size(),
        live.tree.approximate_data_size()
    );
    assert_eq!(restored.ephemerals_of(SESSION), vec!["/e"]);
    assert_eq!(restored.expired_nodes(i64::MAX), vec!["/box"]);
    assert_eq!(restored.session(77).map(|s| s.timeout_ms), Some(30_000));
    // Replay more entries on both and compare again.
    let mut replayed = H {
        tree: restored,
        zxid: live.zxid,
        time: live.time,
        session: live.session,
        auth: vec![],
    };
    for h in [&mut live, &mut replayed] {
        h.create("/a/u", b"123", 0).unwrap();
        h.apply(Txn::CloseSession);
        h.create("/a/s-", b"", 2).unwrap();
    }
    assert_eq!(live.tree.digest(), replayed.tree.digest());
    assert_eq!(live.tree.snapshot(), replayed.tree.snapshot());
    // Quota tracking survived the restore.
    assert_eq!(
        replayed
            .get("/zookeeper/quota/a/zookeeper_stats")
            .unwrap()
            .0,
        Some(b"count=5,bytes=8".to_vec())
    );
}

#[test]
fn corrupt_snapshots_are_refused() {
    let mut h = H::new();
    busy_history(&mut h);
    let snap = h.tree.snapshot();
    let mut flipped = snap.clone();
    flipped[10] ^= 1;
    assert!(matches!(
        Tree::restore(&flipped, TreeConfig::default()),
        Err(TreeError::Checksum { .. })
    ));
    assert!(matches!(
        Tree::restore(&snap[..3], TreeConfig::default()),
        Err(TreeError::SnapshotTooShort(3))
    ));
    // A truncated body with a recomputed checksum is a decode error, not a panic.
    for cut in [6, 20, snap.len() / 2, snap.len() - 5] {
        let mut body = snap[..cut].to_vec();
        let crc = crc32fast::hash(&body);
        body.extend_from_slice(&crc.to_be_bytes());
        assert!(
            Tree::restore(&body, TreeConfig::default()).is_err(),
            "cut {cut}"
        );
    }
    let mut magic = snap[..snap.len() - 4].to_vec();
    magic[0] = b'X';
    let crc = crc32fast::hash(&magic);
    magic.extend_from_slice(&crc.to_be_bytes());
    assert_eq!(
        Tree::restore(&magic, TreeConfig::default()).err(),
        Some(TreeError::SnapshotFormat)
    );
}

/// `Restore` fed `bytes` in pieces of `size` bytes.
fn restore_in_pieces(bytes: &[u8], size: usize) -> Result<Tree, TreeError> {
    let mut r = Restore::new(TreeConfig::default());
    for piece in bytes.chunks(size) {
        r.feed(piece)?;
    }
    r.finish()
}

#[test]
fn a_snapshot_fed_in_pieces_of_any_size_restores_the_same_tree() {
    let mut h = H::new();
    busy_history(&mut h);
    let snap = h.tree.snapshot();
    for size in [1, 2, 3, 7, 64, 4095, 4096, snap.len() - 1, snap.len()] {
        let t = restore_in_pieces(&snap, size).unwrap();
        assert_eq!(t.digest(), h.tree.digest(), "pieces of {size}");
        assert_eq!(t.snapshot(), snap, "pieces of {size}");
        assert_eq!(t.node_count(), h.tree.node_count());
    }
    // Uneven pieces, empty ones included.
    let mut r = Restore::new(TreeConfig::default());
    let mut at = 0;
    for (i, size) in [0usize, 5, 0, 1, 300, 17, 0].iter().cycle().enumerate() {
        if at == snap.len() {
            break;
        }
        let end = (at + size + i % 3).min(snap.len());
        r.feed(&snap[at..end]).unwrap();
        at = end;
    }
    assert_eq!(r.finish().unwrap().snapshot(), snap);
}

#[test]
fn a_snapshot_fed_in_pieces_checks_what_a_whole_one_does() {
    let mut h = H::new();
    busy_history(&mut h);
    let snap = h.tree.snapshot();
    let mut flipped = snap.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert!(matches!(
        restore_in_pieces(&flipped, 7),
        Err(TreeError::Checksum { .. })
    ));
    assert!(matches!(
        restore_in_pieces(&snap[..3], 1),
        Err(TreeError::SnapshotTooShort(3))
    ));
    for cut in [6, 20, snap.len() / 2, snap.len() - 5, snap.len() - 1] {
        assert!(restore_in_pieces(&snap[..cut], 5).is_err(), "cut {cut}");
    }
    let mut longer = snap.clone();
    longer.extend_from_slice(b"xy");
    assert_eq!(
        restore_in_pieces(&longer, 9).err(),
        Some(TreeError::Inconsistent("2 trailing bytes".into()))
    );
    let mut magic = snap.clone();
    magic[0] = b'X';
    assert_eq!(
        restore_in_pieces(&magic, 2).err(),
        Some(TreeError::SnapshotFormat)
    );
    // Once a piece is refused, the restore stays failed whatever follows.
    let mut r = Restore::new(TreeConfig::default());
    assert_eq!(r.feed(&magic[..10]).err(), Some(TreeError::SnapshotFormat));
    assert!(r.feed(&snap[10..]).is_err());
    assert!(r.finish().is_err());
}

/// `of_checked_bytes` trusts the caller's check of the bytes: a wrong trailing checksum passes,
/// while a missing trailer, trailing bytes and a bad record still fail.
#[test]
fn a_restore_of_checked_bytes_skips_only_the_checksum() {
    let mut h = H::new();
    busy_history(&mut h);
    let snap = h.tree.snapshot();
    let restore = |bytes: &[u8]| {
        let mut r = Restore::of_checked_bytes(TreeConfig::default());
        for piece in bytes.chunks(7) {
            r.feed(piece)?;
        }
        r.finish()
    };
    let t = restore(&snap).unwrap();
    assert_eq!(t.snapshot(), snap);
    assert_eq!(t.digest(), h.tree.digest());
    let mut flipped = snap.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert_eq!(restore(&flipped).unwrap().snapshot(), snap);
    assert!(matches!(
        restore_in_pieces(&flipped, 7),
        Err(TreeError::Checksum { .. })
    ));
    assert!(restore(&snap[..snap.len() - 2]).is_err());
    let mut longer = snap.clone();
    longer.extend_from_slice(b"xy");
    assert_eq!(
        restore(&longer).err(),
        Some(TreeError::Inconsistent("2 trailing bytes".into()))
    );
    let mut magic = snap.clone();
    magic[0] = b'X';
    assert_eq!(restore(&magic).err(), Some(TreeError::SnapshotFormat));
}

#[test]
fn sequential_suffix_goes_negative_after_the_counter_wraps() {
    // Reaching 2^31 creates is impractical; patch /q's stored cversion in a snapshot instead.
    let mut h = H::new();
    h.create("/q", b"", 0).unwrap();
    let mut snap = h.tree.snapshot();
    snap.truncate(snap.len() - 4);
    let rec = b"\x00\x00\x00\x02/q\x00\x00\x00\x00";
    let at = snap.windows(rec.len()).position(|w| w == rec).unwrap();
    // path(6) data(4) acl(4) six i64 (48) version(4), then cversion.
    let cv = at + 6 + 4 + 4 + 48 + 4;
    snap[cv..cv + 4].copy_from_slice(&i32::MAX.to_be_bytes());
    let crc = crc32fast::hash(&snap);
    snap.extend_from_slice(&crc.to_be_bytes());
    h.tree = Tree::restore(&snap, TreeConfig::default()).unwrap();
    assert_eq!(h.create("/q/n", b"", 2), Ok("/q/n2147483647".into()));
    assert_eq!(h.create("/q/n", b"", 2), Ok("/q/n-2147483648".into()));
    assert_eq!(h.create("/q/n", b"", 2), Ok("/q/n-2147483647".into()));
    // Wire cversion wraps the same way: stored * 2 - children.
    assert_eq!(
        h.stat("/q").unwrap().cversion,
        (i32::MIN + 2).wrapping_mul(2).wrapping_sub(3)
    );
}

/// ZooKeeper stores the root under `""` as well as `/`, so reads of the empty path answer
/// with the root (found by the back-to-back suite).
#[test]
fn reads_of_the_empty_path_answer_with_the_root() {
    let mut h = H::new();
    h.create("/x", b"", 0).unwrap();
    let ctx = ReadCtx {
        session_id: 0,
        auth: &[],
    };
    let root = h.tree.read(
        &ctx,
        &Request::Exists(wire::ops::exists::ExistsRequest {
            path: "/".into(),
            watch: false,
        }),
    );
    let empty = h.tree.read(
        &ctx,
        &Request::Exists(wire::ops::exists::ExistsRequest {
            path: "".into(),
            watch: false,
        }),
    );
    assert!(root.is_ok());
    assert_eq!(empty, root);
    let kids = h
        .tree
        .read(
            &ctx,
            &Request::GetChildren(GetChildrenRequest {
                path: "".into(),
                watch: false,
            }),
        )
        .unwrap();
    assert_eq!(
        kids,
        Response::GetChildren(wire::ops::children::GetChildrenResponse {
            children: vec!["x".into(), "zookeeper".into()]
        })
    );
    let data = h.tree.read(
        &ctx,
        &Request::GetData(GetDataRequest {
            path: "".into(),
            watch: false,
        }),
    );
    assert!(data.is_ok());
}

/// The snapshot format and the digest are on disk and compared across replicas: a refactor of
/// either encoder must not change a single byte. The digest is pinned since the commit that
/// added this test; the bytes since format version 2 (nodes depth first), which kept the length
/// and the digest of version 1 (crc32 2_230_744_020) and changed only the order. The digest
/// changed on purpose when the per-node hash went from FNV-1a to XXH3 (it was
/// 16_914_876_875_222_360_156), and when the stat and the ACL were folded in by multiplies
/// instead of XXH3 calls (it was 7_871_612_634_043_605_672).
#[test]
fn snapshot_bytes_and_digest_of_a_fixed_tree_are_pinned() {
    let mut h = H::new();
    busy_history(&mut h);
    let snap = h.tree.snapshot();
    let crc = crc32fast::hash(&snap);
    assert_eq!(
        (snap.len(), snap[4], crc, h.tree.digest()),
        (1303, 2, 2_012_537_251, 10_437_050_294_055_667_198),
        "snapshot length, version, crc32 and digest"
    );
}

#[test]
fn a_refused_write_takes_its_zxid_changes_nothing_and_answers_its_code() {
    let mut h = H::with_session();
    h.create("/a", b"x", 0).unwrap();
    let before = (h.get("/a"), h.children("/"), h.tree.node_count());
    for code in [ErrorCode::NewConfigNoQuorum, ErrorCode::ReconfigInProgress] {
        let a = h.apply(Txn::Refused { code: code.code() });
        assert_eq!(a.reply, Err(code));
        assert!(a.changes.is_empty());
        assert_eq!(h.tree.last_zxid(), h.zxid);
    }
    // A code this build does not know still refuses, as a system error, and never panics.
    let a = h.apply(Txn::Refused { code: -9999 });
    assert_eq!(a.reply, Err(ErrorCode::SystemError));
    assert_eq!((h.get("/a"), h.children("/"), h.tree.node_count()), before);
}

/// SessionMoved (ZooKeeper's owner check): once an entry attached the session to member 2, a
/// write that came through member 1 is refused with SessionMoved, takes its zxid and changes
/// nothing; a write through member 2, or one naming no member (a standalone server), passes.
/// The owner survives a snapshot (format version 4), and a tree without owners still writes
/// version 2, byte for byte as before.
#[test]
fn a_write_through_a_member_the_session_moved_away_from_is_session_moved() {
    let mut h = H::with_session();
    let via = |h: &mut H, member: u64, req: Request| {
        h.zxid += 1;
        let mut e = h.entry(Txn::Write(req));
        e.via = Some(member);
        let e2 = Entry::decode(&e.encode()).expect("entry round-trips");
        assert_eq!(e, e2);
        h.tree.apply(h.zxid, &e2)
    };
    // No owner yet: any member's write passes.
    let a = via(&mut h, 1, Request::Create(H::create_req("/a", b"1", 0)));
    assert!(a.reply.is_ok(), "{:?}", a.reply);
    assert_eq!(h.tree.snapshot()[4], 2, "no owner: version 2");

    let a = h.apply(Txn::Attach { member: 2 });
    assert_eq!(a.reply, Ok(Response::Empty));
    assert_eq!(h.tree.session(SESSION).unwrap().owner, Some(2));

    let before = (h.get("/a"), h.children("/"));
    let set = |v: &[u8]| {
        Request::SetData(SetDataRequest {
            path: "/a".into(),
            data: Some(v.to_vec()),
            version: -1,
        })
    };
    let a = via(&mut h, 1, set(b"old"));
    assert_eq!(a.reply, Err(ErrorCode::SessionMoved));
    assert!(a.changes.is_empty());
    assert_eq!(h.tree.last_zxid(), h.zxid, "the refusal takes its zxid");
    let multi = Request::Multi(vec![set(b"old")]);
    assert_eq!(via(&mut h, 1, multi).reply, Err(ErrorCode::SessionMoved));
    assert_eq!((h.get("/a"), h.children("/")), before);
    // An empty multi checks nothing, as in ZooKeeper.
    assert!(via(&mut h, 1, Request::Multi(vec![])).reply.is_ok());

    assert!(via(&mut h, 2, set(b"new")).reply.is_ok());
    assert!(h.write(set(b"standalone")).is_ok());

    // The owner is state: a snapshot keeps it, and the restored tree refuses alike.
    let snap = h.tree.snapshot();
    assert_eq!(snap[4], 4, "owners: version 4");
    let restored = Tree::restore(&snap, TreeConfig::default()).unwrap();
    assert_eq!(restored.session(SESSION).unwrap().owner, Some(2));
    assert_eq!(restored.digest(), h.tree.digest());
    assert_eq!(restored.snapshot(), snap);

    // The log's bytes: Attach is tag 7 `i64 member`; a write's member is the prefix tag 8
    // `i64 member` before the write's own tag 2, which is unchanged; a second prefix is refused.
    let attach = h.entry(Txn::Attach { member: 2 }).encode();
    assert_eq!(
        attach[attach.len() - 9..],
        [&[7u8][..], &2i64.to_be_bytes()].concat()[..]
    );
    let plain = h.entry(Txn::Write(set(b"x"))).encode();
    let mut e = h.entry(Txn::Write(set(b"x")));
    e.via = Some(3);
    let prefixed = e.encode();
    let head = 1 + 8 + 4 + 8 + 4; // version, session, xid, time, an empty auth vector
    assert_eq!(prefixed[..head], plain[..head]);
    assert_eq!(
        prefixed[head..head + 9],
        [&[8u8][..], &3i64.to_be_bytes()].concat()[..]
    );
    assert_eq!(prefixed[head + 9..], plain[head..]);
    let mut twice = prefixed[..head + 9].to_vec();
    twice.extend_from_slice(&prefixed[head..]);
    assert_eq!(Entry::decode(&twice), Err(TreeError::EntryTag(8)));

    // Attaching a session the state does not hold is SessionExpired and changes nothing.
    h.session = 0x0200_0000_0000_0002;
    let a = h.apply(Txn::Attach { member: 3 });
    assert_eq!(a.reply, Err(ErrorCode::SessionExpired));
    assert!(h.tree.session(h.session).is_none());
}
