//! Per-op tests: exact replies, every Stat field, and the changes apply reports.

mod common;

use common::{stat, H, SESSION};
use wire::ops::children::GetAllChildrenNumberRequest;
use wire::ops::ephemerals::GetEphemeralsRequest;
use wire::ops::exists::ExistsRequest;
use wire::ops::get_acl::GetAclRequest;
use wire::ops::set_acl::SetAclRequest;
use wire::ops::sync::SyncRequest;
use wire::{perms, Acl, ErrorCode, Id, Request, Response};
use znode_tree::{Change, TreeConfig, Txn};

fn open() -> Vec<Acl> {
    Acl::open_unsafe()
}

fn all_children(h: &H, p: &str) -> i32 {
    match h
        .read(Request::GetAllChildrenNumber(GetAllChildrenNumberRequest {
            path: p.into(),
        }))
        .unwrap()
    {
        Response::GetAllChildrenNumber(r) => r.total_number,
        other => panic!("{other:?}"),
    }
}

#[test]
fn fresh_tree_matches_zookeepers_special_nodes() {
    let h = H::new();
    assert_eq!(h.stat("/").unwrap(), stat(0, 0, 0, 0, 0, -1, 0, 0, 0, 1, 0));
    assert_eq!(
        h.stat("/zookeeper").unwrap(),
        stat(0, 0, 0, 0, 0, -2, 0, 0, 0, 2, 0)
    );
    assert_eq!(
        h.stat("/zookeeper/quota").unwrap(),
        stat(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    );
    assert_eq!(
        h.stat("/zookeeper/config").unwrap(),
        stat(0, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0)
    );
    assert_eq!(h.children("/zookeeper").unwrap(), vec!["config", "quota"]);
    assert_eq!(h.get("/").unwrap().0, Some(vec![]));
    match h
        .read(Request::GetAcl(GetAclRequest {
            path: "/zookeeper/config".into(),
        }))
        .unwrap()
    {
        Response::GetAcl(r) => assert_eq!(r.acl, Acl::read_unsafe()),
        other => panic!("{other:?}"),
    }
    assert_eq!(h.tree.node_count(), 5);
    assert_eq!(h.tree.approximate_data_size(), 44);
    assert_eq!(all_children(&h, "/"), 3);
    assert_eq!(h.tree.last_zxid(), 0);
}

#[test]
fn create_sets_every_stat_field_and_reports_created_then_parent_children_changed() {
    let mut h = H::new();
    let a = h.apply(Txn::Write(Request::Create2(H::create_req(
        "/a", b"hello", 0,
    ))));
    let expected = stat(1, 1, 1010, 1010, 0, 0, 0, 0, 5, 0, 1);
    match a.reply.unwrap() {
        Response::Create2(r) => {
            assert_eq!(r.path, "/a");
            assert_eq!(r.stat, expected);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        a.changes,
        vec![
            Change::Created {
                path: "/a".into(),
                acl: open().into()
            },
            Change::ChildrenChanged {
                path: "/".into(),
                acl: open().into()
            }
        ]
    );
    assert_eq!(h.get("/a").unwrap(), (Some(b"hello".to_vec()), expected));
    // Root: stored cversion 1, two children -> wire 0; pzxid is the create's zxid.
    assert_eq!(h.stat("/").unwrap(), stat(0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1));
    assert_eq!(h.tree.last_zxid(), 1);
    assert_eq!(h.tree.node_count(), 6);
    assert_eq!(h.tree.approximate_data_size(), 44 + 2 + 5);
}

#[test]
fn create_plain_replies_with_path_only() {
    let mut h = H::new();
    assert_eq!(h.create("/a", b"", 0), Ok("/a".into()));
    assert_eq!(h.create("/a", b"", 0), Err(ErrorCode::NodeExists));
    assert_eq!(h.create("/", b"", 0), Err(ErrorCode::NodeExists));
    assert_eq!(h.create("/b/c", b"", 0), Err(ErrorCode::NoNode));
}

#[test]
fn cversion_counts_creates_plus_deletes_on_the_wire() {
    // ZooKeeper's wire cversion is `cversion * 2 - numChildren` (`DataNode.copyStat`).
    let mut h = H::new();
    h.create("/p", b"", 0).unwrap(); // zxid 1
    h.create("/p/c", b"", 0).unwrap(); // zxid 2
    assert_eq!(
        h.stat("/p").unwrap(),
        stat(1, 1, 1010, 1010, 0, 1, 0, 0, 0, 1, 2)
    );
    h.delete("/p/c", -1).unwrap(); // zxid 3
    assert_eq!(
        h.stat("/p").unwrap(),
        stat(1, 1, 1010, 1010, 0, 2, 0, 0, 0, 0, 3)
    );
}

#[test]
fn sequential_suffix_counts_non_sequential_creates_and_deleted_children() {
    let mut h = H::new();
    h.create("/q", b"", 0).unwrap();
    assert_eq!(h.create("/q/s-", b"", 2), Ok("/q/s-0000000000".into()));
    h.create("/q/a", b"", 0).unwrap();
    assert_eq!(h.create("/q/s-", b"", 2), Ok("/q/s-0000000002".into()));
    h.delete("/q/a", -1).unwrap();
    h.delete("/q/s-0000000000", -1).unwrap();
    assert_eq!(h.create("/q/s-", b"", 2), Ok("/q/s-0000000003".into()));
    assert_eq!(
        h.children("/q").unwrap(),
        vec!["s-0000000002", "s-0000000003"]
    );
}

#[test]
fn sequential_create_accepts_trailing_slash_but_plain_create_does_not() {
    let mut h = H::new();
    h.create("/q", b"", 0).unwrap();
    assert_eq!(h.create("/q/", b"", 2), Ok("/q/0000000000".into()));
    assert_eq!(h.create("/q/", b"", 0), Err(ErrorCode::BadArguments));
    // The parent of "/q//" is "/q/", which does not exist: NoNode comes before validation.
    assert_eq!(h.create("/q//", b"", 2), Err(ErrorCode::NoNode));
    assert_eq!(h.create("/nope/", b"", 2), Err(ErrorCode::NoNode));
}

#[test]
fn invalid_flags_and_paths_are_bad_arguments_and_still_use_a_zxid() {
    let mut h = H::new();
    assert_eq!(h.create("/a", b"", 7), Err(ErrorCode::BadArguments));
    assert_eq!(h.create("/a", b"", -1), Err(ErrorCode::BadArguments));
    assert_eq!(h.create("a", b"", 0), Err(ErrorCode::BadArguments));
    assert_eq!(h.create("/a\0", b"", 0), Err(ErrorCode::BadArguments));
    assert_eq!(h.create("/a/..", b"", 0), Err(ErrorCode::NoNode));
    assert_eq!(h.create("/..", b"", 0), Err(ErrorCode::BadArguments));
    assert_eq!(h.tree.last_zxid(), 6);
    assert_eq!(h.tree.node_count(), 5);
}

#[test]
fn ephemeral_is_owned_by_the_entry_session_and_refuses_children() {
    let mut h = H::with_session();
    let (p, st) = h.create2("/e", b"x", 1).unwrap();
    assert_eq!(p, "/e");
    assert_eq!(st, stat(2, 2, 1020, 1020, 0, 0, 0, SESSION, 1, 0, 2));
    assert_eq!(
        h.create("/e/c", b"", 0),
        Err(ErrorCode::NoChildrenForEphemerals)
    );
    assert_eq!(
        h.create("/e/c", b"", 1),
        Err(ErrorCode::NoChildrenForEphemerals)
    );
    assert_eq!(h.tree.ephemerals_of(SESSION), vec!["/e"]);
    assert_eq!(h.tree.ephemerals_count(), 1);
}

#[test]
fn ephemeral_create_without_a_live_session_is_session_expired() {
    let mut h = H::new();
    assert_eq!(h.create("/e", b"", 1), Err(ErrorCode::SessionExpired));
    assert_eq!(h.create("/e", b"", 3), Err(ErrorCode::SessionExpired));
    assert_eq!(h.create("/e", b"", 0), Ok("/e".into()));
}

#[test]
fn close_session_deletes_ephemerals_in_path_order_with_events() {
    let mut h = H::with_session();
    h.create("/b", b"", 0).unwrap();
    h.create("/z", b"", 1).unwrap();
    h.create("/b/e", b"", 1).unwrap();
    h.create("/a", b"", 1).unwrap();
    let a = h.apply(Txn::CloseSession);
    assert_eq!(a.reply, Ok(Response::Empty));
    let o = open();
    assert_eq!(
        a.changes,
        vec![
            Change::Deleted {
                path: "/a".into(),
                acl: o.clone().into()
            },
            Change::ChildrenChanged {
                path: "/".into(),
                acl: o.clone().into()
            },
            Change::Deleted {
                path: "/b/e".into(),
                acl: o.clone().into()
            },
            Change::ChildrenChanged {
                path: "/b".into(),
                acl: o.clone().into()
            },
            Change::Deleted {
                path: "/z".into(),
                acl: o.clone().into()
            },
            Change::ChildrenChanged {
                path: "/".into(),
                acl: o.into()
            },
        ]
    );
    assert!(h.tree.session(SESSION).is_none());
    assert_eq!(h.tree.ephemerals_count(), 0);
    assert_eq!(h.children("/").unwrap(), vec!["b", "zookeeper"]);
    assert_eq!(h.stat("/b").unwrap().pzxid, 6);
    // A second close finds no session.
    assert_eq!(
        h.apply(Txn::CloseSession).reply,
        Err(ErrorCode::SessionExpired)
    );
}

#[test]
fn create_session_stores_timeout_and_password() {
    let mut h = H::new();
    assert_eq!(h.open_session(42).reply, Ok(Response::Empty));
    let s = h.tree.session(42).unwrap();
    assert_eq!((s.id, s.timeout_ms, s.password), (42, 30_000, [7; 16]));
    assert_eq!(h.tree.sessions().count(), 1);
    assert_eq!(h.tree.last_zxid(), 1);
}

#[test]
fn delete_checks_in_zookeepers_order() {
    let mut h = H::new();
    for p in [
        "/",
        "/zookeeper",
        "/zookeeper/quota",
        "/zookeeper/config",
        "nope",
        "/a\0",
    ] {
        assert_eq!(h.delete(p, -1), Err(ErrorCode::BadArguments), "{p:?}");
    }
    assert_eq!(h.delete("/x/y", -1), Err(ErrorCode::NoNode));
    assert_eq!(h.delete("/x", -1), Err(ErrorCode::NoNode));
    h.create("/p", b"", 0).unwrap();
    h.create("/p/c", b"", 0).unwrap();
    // A path that is not canonical names no node, even where its last name is a child.
    assert_eq!(h.delete("//p", -1), Err(ErrorCode::NoNode));
    assert_eq!(h.delete("/p//c", -1), Err(ErrorCode::NoNode));
    assert_eq!(h.delete("/p/c/", -1), Err(ErrorCode::NoNode));
    // Version is checked before children.
    assert_eq!(h.delete("/p", 5), Err(ErrorCode::BadVersion));
    assert_eq!(h.delete("/p", 0), Err(ErrorCode::NotEmpty));
    h.set("/p/c", b"1", -1).unwrap();
    assert_eq!(h.delete("/p/c", 0), Err(ErrorCode::BadVersion));
    let a = h.apply(Txn::Write(Request::Delete(
        wire::ops::delete::DeleteRequest {
            path: "/p/c".into(),
            version: 1,
        },
    )));
    assert_eq!(a.reply, Ok(Response::Empty));
    assert_eq!(
        a.changes,
        vec![
            Change::Deleted {
                path: "/p/c".into(),
                acl: open().into()
            },
            Change::ChildrenChanged {
                path: "/p".into(),
                acl: open().into()
            }
        ]
    );
    assert_eq!(h.delete("/p", -1), Ok(()));
    assert_eq!(h.tree.node_count(), 5);
    assert_eq!(h.tree.approximate_data_size(), 44);
}

#[test]
fn set_data_bumps_version_mzxid_mtime_only() {
    let mut h = H::new();
    h.create("/a", b"one", 0).unwrap(); // zxid 1, time 1010
    let st = h.set("/a", b"three", 0).unwrap(); // zxid 2, time 1020
    assert_eq!(st, stat(1, 2, 1010, 1020, 1, 0, 0, 0, 5, 0, 1));
    assert_eq!(h.set("/a", b"x", 0), Err(ErrorCode::BadVersion));
    assert_eq!(h.set("/a", b"x", 2), Err(ErrorCode::BadVersion));
    assert_eq!(h.set("/b", b"x", -1), Err(ErrorCode::NoNode));
    assert_eq!(h.set("/a/", b"x", -1), Err(ErrorCode::BadArguments));
    let a = h.apply(Txn::Write(Request::SetData(
        wire::ops::data::SetDataRequest {
            path: "/a".into(),
            data: None,
            version: 1,
        },
    )));
    assert_eq!(
        a.changes,
        vec![Change::DataChanged {
            path: "/a".into(),
            acl: open().into()
        }]
    );
    let (data, st) = h.get("/a").unwrap();
    assert_eq!(data, None);
    assert_eq!(st, stat(1, 7, 1010, 1070, 2, 0, 0, 0, 0, 0, 1));
}

#[test]
fn version_increments_wrap_like_java_ints() {
    let mut h = H::new();
    h.create("/a", b"", 0).unwrap();
    // Drive version to i32::MAX quickly is impractical; instead check -1 matches any and
    // that a mismatch is BadVersion regardless of sign.
    assert_eq!(h.set("/a", b"", -2), Err(ErrorCode::BadVersion));
    assert_eq!(h.set("/a", b"", -1).unwrap().version, 1);
}

#[test]
fn set_acl_checks_fixup_before_existence_and_bumps_aversion_only() {
    let mut h = H::new();
    h.create("/a", b"d", 0).unwrap();
    let set = |acl: Vec<Acl>, version| {
        Request::SetAcl(SetAclRequest {
            path: "/a".into(),
            acl,
            version,
        })
    };
    assert_eq!(
        h.write(Request::SetAcl(SetAclRequest {
            path: "/b".into(),
            acl: vec![],
            version: -1
        })),
        Err(ErrorCode::InvalidAcl)
    );
    assert_eq!(
        h.write(Request::SetAcl(SetAclRequest {
            path: "/b".into(),
            acl: open(),
            version: -1
        })),
        Err(ErrorCode::NoNode)
    );
    assert_eq!(h.write(set(open(), 3)), Err(ErrorCode::BadVersion));
    let a = h.apply(Txn::Write(set(Acl::read_unsafe(), 0)));
    match a.reply.unwrap() {
        Response::SetAcl(r) => assert_eq!(r.stat, stat(1, 1, 1010, 1010, 0, 0, 1, 0, 1, 0, 1)),
        other => panic!("{other:?}"),
    }
    assert!(a.changes.is_empty());
    // Now only READ: ADMIN is gone.
    assert_eq!(h.write(set(open(), -1)), Err(ErrorCode::NoAuth));
    assert_eq!(h.set("/a", b"x", -1), Err(ErrorCode::NoAuth));
}

#[test]
fn special_config_node_is_read_only_except_for_super() {
    let mut h = H::new();
    assert_eq!(h.set("/zookeeper/config", b"x", -1), Err(ErrorCode::NoAuth));
    assert_eq!(
        h.create("/zookeeper/config/x", b"", 0),
        Err(ErrorCode::NoAuth)
    );
    h.auth = vec![Id::new("super", "")];
    assert_eq!(h.set("/zookeeper/config", b"x", -1).unwrap().version, 1);
    // Plain /zookeeper has no special rule.
    assert_eq!(
        h.create("/zookeeper/mine", b"", 0),
        Ok("/zookeeper/mine".into())
    );
}

#[test]
fn failed_writes_still_advance_last_zxid() {
    let mut h = H::new();
    assert_eq!(h.delete("/missing", -1), Err(ErrorCode::NoNode));
    assert_eq!(h.tree.last_zxid(), 1);
    h.create("/a", b"", 0).unwrap();
    assert_eq!(h.stat("/a").unwrap().czxid, 2);
}

#[test]
fn exists_needs_read_only_when_the_node_exists_and_rejects_nul() {
    let mut h = H::new();
    h.create_acl("/secret", vec![Acl::new(perms::WRITE, "world", "anyone")])
        .unwrap();
    assert_eq!(h.stat("/secret"), Err(ErrorCode::NoAuth));
    assert_eq!(h.stat("/missing"), Err(ErrorCode::NoNode));
    assert_eq!(h.stat("/a\0b"), Err(ErrorCode::BadArguments));
    assert_eq!(h.get("/secret"), Err(ErrorCode::NoAuth));
    assert_eq!(h.children("/secret"), Err(ErrorCode::NoAuth));
    assert_eq!(h.get("/a/"), Err(ErrorCode::NoNode));
}

#[test]
fn get_acl_masks_digest_hashes_without_admin() {
    let mut h = H::new();
    let acl = vec![
        Acl::new(perms::READ, "world", "anyone"),
        Acl::new(perms::ALL, "digest", "bob:abc="),
    ];
    h.create_acl("/d", acl.clone()).unwrap();
    let get = |h: &H| match h.read(Request::GetAcl(GetAclRequest { path: "/d".into() })) {
        Ok(Response::GetAcl(r)) => Ok(r.acl),
        Ok(other) => panic!("{other:?}"),
        Err(e) => Err(e),
    };
    assert_eq!(
        get(&h),
        Ok(vec![
            acl[0].clone(),
            Acl::new(perms::ALL, "digest", "bob:x")
        ])
    );
    h.auth = vec![Id::new("digest", "bob:abc=")];
    assert_eq!(get(&h), Ok(acl));
    h.auth = vec![];
    h.create_acl("/w", vec![Acl::new(perms::WRITE, "world", "anyone")])
        .unwrap();
    let r = h.read(Request::GetAcl(GetAclRequest { path: "/w".into() }));
    assert_eq!(r, Err(ErrorCode::NoAuth));
    let r = h.read(Request::GetAcl(GetAclRequest {
        path: "/nope".into(),
    }));
    assert_eq!(r, Err(ErrorCode::NoNode));
}

#[test]
fn get_all_children_number_counts_every_descendant() {
    let mut h = H::new();
    h.create("/a", b"", 0).unwrap();
    h.create("/a/b", b"", 0).unwrap();
    h.create("/a/b/c", b"", 0).unwrap();
    h.create("/ab", b"", 0).unwrap();
    assert_eq!(all_children(&h, "/a"), 2);
    assert_eq!(all_children(&h, "/a/b/c"), 0);
    assert_eq!(all_children(&h, "/"), 7);
    assert_eq!(
        h.read(Request::GetAllChildrenNumber(GetAllChildrenNumberRequest {
            path: "/x".into()
        })),
        Err(ErrorCode::NoNode)
    );
}

#[test]
fn get_ephemerals_filters_the_callers_session_by_string_prefix() {
    let mut h = H::with_session();
    h.create("/app", b"", 0).unwrap();
    h.create("/app/e1", b"", 1).unwrap();
    h.create("/apple", b"", 1).unwrap();
    h.create("/b", b"", 1).unwrap();
    h.open_session(99);
    h.session = 99;
    h.create("/other", b"", 1).unwrap();
    h.session = SESSION;
    let eph = |h: &H, p: &str| match h
        .read(Request::GetEphemerals(GetEphemeralsRequest {
            prefix_path: p.into(),
        }))
        .unwrap()
    {
        Response::GetEphemerals(r) => r.ephemerals,
        other => panic!("{other:?}"),
    };
    assert_eq!(eph(&h, "/"), vec!["/app/e1", "/apple", "/b"]);
    assert_eq!(eph(&h, ""), vec!["/app/e1", "/apple", "/b"]);
    assert_eq!(eph(&h, "/app"), vec!["/app/e1", "/apple"]);
    assert_eq!(eph(&h, "/app/"), vec!["/app/e1"]);
    assert_eq!(h.tree.ephemerals_of(99), vec!["/other"]);
}

#[test]
fn sync_echoes_path_and_non_reads_are_unimplemented() {
    let h = H::new();
    assert_eq!(
        h.read(Request::Sync(SyncRequest {
            path: "/nowhere".into()
        })),
        Ok(Response::Sync(wire::ops::sync::SyncResponse {
            path: "/nowhere".into()
        }))
    );
    assert_eq!(h.read(Request::Ping), Err(ErrorCode::Unimplemented));
    assert_eq!(
        h.read(Request::Create(H::create_req("/a", b"", 0))),
        Err(ErrorCode::Unimplemented)
    );
}

#[test]
fn top_level_check_is_unimplemented() {
    let mut h = H::new();
    let r = h.write(Request::Check(wire::ops::check::CheckVersionRequest {
        path: "/".into(),
        version: -1,
    }));
    assert_eq!(r, Err(ErrorCode::Unimplemented));
}

#[test]
fn children_are_sorted() {
    let mut h = H::new();
    for p in ["/z", "/b", "/a", "/m"] {
        h.create(p, b"", 0).unwrap();
    }
    assert_eq!(
        h.children("/").unwrap(),
        vec!["a", "b", "m", "z", "zookeeper"]
    );
    match h
        .read(Request::GetChildren2(
            wire::ops::children::GetChildrenRequest {
                path: "/".into(),
                watch: false,
            },
        ))
        .unwrap()
    {
        Response::GetChildren2(r) => {
            assert_eq!(r.children.len(), 5);
            assert_eq!(r.stat, stat(0, 0, 0, 0, 0, 3, 0, 0, 0, 5, 4));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn exists_with_watch_answers_the_same_stat_as_without() {
    // The watch flag changes nothing in the reply: czxid/mzxid/pzxid are the create's zxid,
    // ctime/mtime its entry time, and an empty node has dataLength 0.
    let mut h = H::new();
    h.create("/a", b"", 0).unwrap();
    let expected = stat(1, 1, 1010, 1010, 0, 0, 0, 0, 0, 0, 1);
    match h.read(Request::Exists(ExistsRequest {
        path: "/a".into(),
        watch: true,
    })) {
        Ok(Response::Exists(r)) => assert_eq!(r.stat, expected),
        other => panic!("{other:?}"),
    }
    assert_eq!(h.stat("/a"), Ok(expected));
}

#[test]
fn child_lists_skip_grandchildren_whatever_their_names_sort_like() {
    let mut h = H::new();
    // '-' and '.' sort before '/', '0' right after it: subtrees interleave with siblings.
    for p in [
        "/a", "/a/x", "/a/x/y", "/a-b", "/a-b/c", "/a.b", "/a0", "/a/z", "/b", "/b/a", "/b/a/a",
    ] {
        h.create(p, b"", 0).unwrap();
    }
    assert_eq!(
        h.children("/").unwrap(),
        vec!["a", "a-b", "a.b", "a0", "b", "zookeeper"]
    );
    assert_eq!(h.children("/a").unwrap(), vec!["x", "z"]);
    assert_eq!(h.children("/a/x").unwrap(), vec!["y"]);
    assert_eq!(h.children("/a/x/y").unwrap(), Vec::<String>::new());
    assert_eq!(h.children("/b").unwrap(), vec!["a"]);
    assert_eq!(h.stat("/").unwrap().num_children, 6);
    assert_eq!(h.stat("/a").unwrap().num_children, 2);
}

#[test]
fn create_checks_in_zookeepers_order() {
    let cfg = TreeConfig {
        enforce_quota: true,
        ..TreeConfig::default()
    };
    let mut h = H::with(cfg);
    let bad_acl = vec![Acl::new(perms::ALL, "nope", "x")];
    let req = |path: &str, flags: i32, acl: Vec<Acl>| {
        Request::Create(wire::ops::create::CreateRequest {
            path: path.into(),
            data: Some(vec![]),
            acl,
            flags,
        })
    };
    // flags before everything
    assert_eq!(
        h.write(req("nope", 9, bad_acl.clone())),
        Err(ErrorCode::BadArguments)
    );
    // TTL mode with extended types off before the session and the path
    assert_eq!(
        h.write(req("nope", 5, bad_acl.clone())),
        Err(ErrorCode::Unimplemented)
    );
    // ephemeral session check before the path
    assert_eq!(
        h.write(req("nope", 1, bad_acl.clone())),
        Err(ErrorCode::SessionExpired)
    );
    // path shape before ACL fix-up
    assert_eq!(
        h.write(req("nope", 0, bad_acl.clone())),
        Err(ErrorCode::BadArguments)
    );
    // ACL fix-up before the parent lookup
    assert_eq!(h.write(req("/x/y", 0, bad_acl)), Err(ErrorCode::InvalidAcl));
    // parent lookup before the parent's ACL
    assert_eq!(h.write(req("/x/y", 0, vec![])), Err(ErrorCode::InvalidAcl));
    assert_eq!(h.create("/x/y", b"", 0), Err(ErrorCode::NoNode));
    // parent ACL before existence and before full-path validation
    h.create_acl(
        "/r",
        vec![Acl::new(perms::READ | perms::ADMIN, "world", "anyone")],
    )
    .unwrap();
    h.auth = vec![Id::new("super", "")];
    h.create("/r/c", b"", 0).unwrap();
    h.auth = vec![];
    assert_eq!(h.create("/r/c", b"", 0), Err(ErrorCode::NoAuth));
    assert_eq!(h.create("/r/", b"", 0), Err(ErrorCode::NoAuth));
    // existence before quota
    h.create("/zookeeper/quota/r", b"", 0).unwrap();
    h.create(
        "/zookeeper/quota/r/zookeeper_limits",
        b"count=-1,bytes=-1=;countHardLimit=1",
        0,
    )
    .unwrap();
    h.create("/zookeeper/quota/r/zookeeper_stats", b"", 0)
        .unwrap();
    h.auth = vec![Id::new("super", "")];
    assert_eq!(h.create("/r/c", b"", 0), Err(ErrorCode::NodeExists));
    assert_eq!(h.create("/r/d", b"", 0), Err(ErrorCode::QuotaExceeded));
}

#[test]
fn set_data_checks_auth_then_quota_then_version() {
    let cfg = TreeConfig {
        enforce_quota: true,
        ..TreeConfig::default()
    };
    let mut h = H::with(cfg);
    h.create_acl("/q", vec![Acl::new(perms::READ, "world", "anyone")])
        .unwrap();
    assert_eq!(h.set("/q", b"x", 9), Err(ErrorCode::NoAuth));
    h.auth = vec![Id::new("super", "")];
    h.create("/zookeeper/quota/q", b"", 0).unwrap();
    h.create(
        "/zookeeper/quota/q/zookeeper_limits",
        b"count=-1,bytes=-1=;byteHardLimit=2",
        0,
    )
    .unwrap();
    h.create("/zookeeper/quota/q/zookeeper_stats", b"", 0)
        .unwrap();
    assert_eq!(h.set("/q", b"toolong", 9), Err(ErrorCode::QuotaExceeded));
    assert_eq!(h.set("/q", b"ok", 9), Err(ErrorCode::BadVersion));
    assert_eq!(h.set("/q", b"ok", 0).unwrap().version, 1);
    // The stats node changed in place: no version bump.
    let (data, st) = h.get("/zookeeper/quota/q/zookeeper_stats").unwrap();
    assert_eq!(data, Some(b"count=1,bytes=2".to_vec()));
    assert_eq!(st.version, 0);
}

#[test]
fn create2_of_a_stats_node_answers_the_stat_from_before_its_recount() {
    // DataTree.createNode copies the new node's stat for the reply before updateQuotaForPath
    // writes the subtree's usage into a new stats node.
    let mut h = H::new();
    h.create("/q", b"abc", 0).unwrap();
    h.create("/zookeeper/quota/q", b"", 0).unwrap();
    let (_, st) = h
        .create2("/zookeeper/quota/q/zookeeper_stats", b"", 0)
        .unwrap();
    assert_eq!((st.data_length, st.version), (0, 0));
    let (data, st) = h.get("/zookeeper/quota/q/zookeeper_stats").unwrap();
    assert_eq!(data, Some(b"count=1,bytes=3".to_vec()));
    assert_eq!((st.data_length, st.version), (15, 0));
}
