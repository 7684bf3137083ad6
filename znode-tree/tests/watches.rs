//! Watch registry, against ZooKeeper's `DataTree` and `WatchManager`: registration rules
//! (`statNode`, `getData`, `getChildren`, `addWatch`), triggers (`createNode`, `deleteNode`,
//! `setData`), one-shot vs persistent (`WatcherMode`), the delivery filter (READ on the
//! node, as `NIOServerCnxn.process` checks it), setWatches (`DataTree.setWatches`), check/remove
//! (`containsWatcher`, `removeWatch`).

mod common;

use common::H;
use wire::ops::children::GetChildrenRequest;
use wire::ops::data::GetDataRequest;
use wire::ops::exists::ExistsRequest;
use wire::ops::watches::{watcher_type, AddWatchRequest, ErrorResponse, SetWatches2};
use wire::{
    event_type as et, perms, Acl, ErrorCode, Id, Request, Response, WatcherEvent,
    STATE_SYNC_CONNECTED,
};
use znode_tree::{
    read_with_watch, Applied, ReadCtx, Txn, WatchCounts, WatchKind, WatchRegistry, WatcherId,
};

fn ev(t: i32, p: &str) -> WatcherEvent {
    WatcherEvent {
        event_type: t,
        state: STATE_SYNC_CONNECTED,
        path: p.into(),
    }
}

struct W {
    h: H,
    reg: WatchRegistry,
}

impl W {
    fn new() -> W {
        W {
            h: H::with_session(),
            reg: WatchRegistry::new(),
        }
    }

    fn read(&mut self, w: WatcherId, req: Request) -> Result<Response, ErrorCode> {
        let auth: Vec<Id> = vec![];
        let ctx = ReadCtx {
            session_id: self.h.session,
            auth: &auth,
        };
        read_with_watch(&self.h.tree, &mut self.reg, &ctx, w, &req)
    }

    fn exists(&mut self, w: WatcherId, p: &str) -> Result<Response, ErrorCode> {
        self.read(
            w,
            Request::Exists(ExistsRequest {
                path: p.into(),
                watch: true,
            }),
        )
    }

    fn get(&mut self, w: WatcherId, p: &str) -> Result<Response, ErrorCode> {
        self.read(
            w,
            Request::GetData(GetDataRequest {
                path: p.into(),
                watch: true,
            }),
        )
    }

    fn children(&mut self, w: WatcherId, p: &str) -> Result<Response, ErrorCode> {
        self.read(
            w,
            Request::GetChildren(GetChildrenRequest {
                path: p.into(),
                watch: true,
            }),
        )
    }

    fn add_watch(&mut self, w: WatcherId, p: &str, mode: i32) -> Result<Response, ErrorCode> {
        self.read(
            w,
            Request::AddWatch(AddWatchRequest {
                path: p.into(),
                mode,
            }),
        )
    }

    fn fire(&mut self, a: Applied) -> Vec<(WatcherId, WatcherEvent)> {
        self.reg.trigger(&a.changes, |_, _| true)
    }

    fn create(&mut self, p: &str) -> Vec<(WatcherId, WatcherEvent)> {
        let a = self
            .h
            .apply(Txn::Write(Request::Create(H::create_req(p, b"", 0))));
        assert!(a.reply.is_ok(), "{p}: {:?}", a.reply);
        self.fire(a)
    }

    fn delete(&mut self, p: &str) -> Vec<(WatcherId, WatcherEvent)> {
        let a = self.h.apply(Txn::Write(Request::Delete(
            wire::ops::delete::DeleteRequest {
                path: p.into(),
                version: -1,
            },
        )));
        assert!(a.reply.is_ok(), "{p}: {:?}", a.reply);
        self.fire(a)
    }

    fn set(&mut self, p: &str) -> Vec<(WatcherId, WatcherEvent)> {
        let a = self.h.apply(Txn::Write(Request::SetData(
            wire::ops::data::SetDataRequest {
                path: p.into(),
                data: Some(b"v".to_vec()),
                version: -1,
            },
        )));
        assert!(a.reply.is_ok(), "{p}: {:?}", a.reply);
        self.fire(a)
    }
}

#[test]
fn exists_on_missing_node_registers_and_fires_node_created_once() {
    let mut w = W::new();
    assert_eq!(w.exists(1, "/a"), Err(ErrorCode::NoNode));
    assert_eq!(w.create("/a"), vec![(1, ev(et::NODE_CREATED, "/a"))]);
    // One-shot: gone after firing.
    assert_eq!(w.set("/a"), vec![]);
}

#[test]
fn get_data_on_missing_node_registers_nothing() {
    let mut w = W::new();
    assert_eq!(w.get(1, "/a"), Err(ErrorCode::NoNode));
    assert_eq!(w.children(1, "/a"), Err(ErrorCode::NoNode));
    assert_eq!(w.create("/a"), vec![]);
    assert_eq!(w.reg.stats().total(), 0);
}

#[test]
fn reads_without_permission_register_nothing() {
    let mut w = W::new();
    w.h.create_acl("/s", vec![Acl::new(perms::WRITE, "world", "anyone")])
        .unwrap();
    assert_eq!(w.exists(1, "/s"), Err(ErrorCode::NoAuth));
    assert_eq!(w.get(1, "/s"), Err(ErrorCode::NoAuth));
    assert_eq!(w.reg.stats().total(), 0);
}

#[test]
fn create_fires_created_then_parent_children_changed() {
    let mut w = W::new();
    w.create("/p");
    w.exists(1, "/p/c").unwrap_err();
    w.children(2, "/p").unwrap();
    w.children(1, "/p").unwrap();
    assert_eq!(
        w.create("/p/c"),
        vec![
            (1, ev(et::NODE_CREATED, "/p/c")),
            (1, ev(et::NODE_CHILDREN_CHANGED, "/p")),
            (2, ev(et::NODE_CHILDREN_CHANGED, "/p"))
        ]
    );
}

#[test]
fn delete_sends_one_node_deleted_per_watcher_even_with_data_and_child_watches() {
    let mut w = W::new();
    w.create("/p");
    w.create("/p/c");
    w.get(1, "/p/c").unwrap();
    w.children(1, "/p/c").unwrap();
    w.exists(2, "/p/c").unwrap();
    w.children(3, "/p/c").unwrap();
    w.children(3, "/p").unwrap();
    assert_eq!(
        w.delete("/p/c"),
        vec![
            (1, ev(et::NODE_DELETED, "/p/c")),
            (2, ev(et::NODE_DELETED, "/p/c")),
            (3, ev(et::NODE_DELETED, "/p/c")),
            (3, ev(et::NODE_CHILDREN_CHANGED, "/p")),
        ]
    );
    // The suppressed child watch of watcher 1 was consumed too.
    assert_eq!(w.reg.stats().total(), 0);
}

#[test]
fn set_data_fires_data_watchers_only() {
    let mut w = W::new();
    w.create("/a");
    w.get(1, "/a").unwrap();
    w.children(2, "/a").unwrap();
    assert_eq!(w.set("/a"), vec![(1, ev(et::NODE_DATA_CHANGED, "/a"))]);
    assert_eq!(w.set("/a"), vec![]);
}

#[test]
fn persistent_watch_survives_firing_and_deletion_and_sees_child_changes_only_on_itself() {
    let mut w = W::new();
    assert_eq!(
        w.add_watch(1, "/a", 0),
        Ok(Response::AddWatch(ErrorResponse { err: 0 }))
    );
    assert_eq!(w.create("/a"), vec![(1, ev(et::NODE_CREATED, "/a"))]);
    assert_eq!(w.set("/a"), vec![(1, ev(et::NODE_DATA_CHANGED, "/a"))]);
    assert_eq!(
        w.create("/a/b"),
        vec![(1, ev(et::NODE_CHILDREN_CHANGED, "/a"))]
    );
    assert_eq!(w.set("/a/b"), vec![]);
    assert_eq!(
        w.delete("/a/b"),
        vec![(1, ev(et::NODE_CHILDREN_CHANGED, "/a"))]
    );
    assert_eq!(w.delete("/a"), vec![(1, ev(et::NODE_DELETED, "/a"))]);
    assert_eq!(w.create("/a"), vec![(1, ev(et::NODE_CREATED, "/a"))]);
}

#[test]
fn recursive_watch_sees_descendants_but_never_children_changed() {
    let mut w = W::new();
    w.add_watch(1, "/r", 1).unwrap();
    assert_eq!(w.create("/r"), vec![(1, ev(et::NODE_CREATED, "/r"))]);
    assert_eq!(w.create("/r/a"), vec![(1, ev(et::NODE_CREATED, "/r/a"))]);
    assert_eq!(
        w.create("/r/a/b"),
        vec![(1, ev(et::NODE_CREATED, "/r/a/b"))]
    );
    assert_eq!(
        w.set("/r/a/b"),
        vec![(1, ev(et::NODE_DATA_CHANGED, "/r/a/b"))]
    );
    assert_eq!(
        w.delete("/r/a/b"),
        vec![(1, ev(et::NODE_DELETED, "/r/a/b"))]
    );
    assert_eq!(w.create("/rx"), vec![]);
}

#[test]
fn standard_and_persistent_on_same_path_give_one_event_and_keep_persistent() {
    let mut w = W::new();
    w.create("/a");
    w.add_watch(1, "/a", 0).unwrap();
    w.get(1, "/a").unwrap();
    w.add_watch(1, "/", 1).unwrap();
    assert_eq!(w.set("/a"), vec![(1, ev(et::NODE_DATA_CHANGED, "/a"))]);
    assert_eq!(w.set("/a"), vec![(1, ev(et::NODE_DATA_CHANGED, "/a"))]);
    assert_eq!(
        w.reg.check(1, "/a", watcher_type::DATA),
        Err(ErrorCode::NoWatcher)
    );
    assert_eq!(w.reg.check(1, "/a", watcher_type::PERSISTENT), Ok(()));
}

#[test]
fn acl_filter_drops_events_but_still_consumes_one_shot_watches() {
    let mut w = W::new();
    w.create("/a");
    w.get(1, "/a").unwrap();
    w.get(2, "/a").unwrap();
    let a = w.h.apply(Txn::Write(Request::SetData(
        wire::ops::data::SetDataRequest {
            path: "/a".into(),
            data: None,
            version: -1,
        },
    )));
    let evs = w.reg.trigger(&a.changes, |wid, acl| {
        assert_eq!(acl, Acl::open_unsafe().as_slice());
        wid == 2
    });
    assert_eq!(evs, vec![(2, ev(et::NODE_DATA_CHANGED, "/a"))]);
    assert_eq!(w.set("/a"), vec![]);
}

#[test]
fn children_changed_is_filtered_with_the_parents_acl() {
    let mut w = W::new();
    w.h.create_acl("/p", vec![Acl::new(perms::ALL, "digest", "u:h")])
        .unwrap();
    w.reg.add(1, "/p", WatchKind::Child);
    w.h.auth = vec![Id::new("digest", "u:h")];
    let a =
        w.h.apply(Txn::Write(Request::Create(H::create_req("/p/c", b"", 0))));
    let seen = std::cell::RefCell::new(vec![]);
    let evs = w.reg.trigger(&a.changes, |_, acl| {
        seen.borrow_mut().push(acl.to_vec());
        false
    });
    assert!(evs.is_empty());
    assert_eq!(
        seen.into_inner(),
        vec![vec![Acl::new(perms::ALL, "digest", "u:h")]]
    );
}

#[test]
fn session_close_fires_deletes_in_path_order() {
    let mut w = W::new();
    w.h.create("/e2", b"", 1).unwrap();
    w.h.create("/e1", b"", 1).unwrap();
    w.exists(1, "/e2").unwrap();
    w.exists(1, "/e1").unwrap();
    w.children(2, "/").unwrap();
    let a = w.h.apply(Txn::CloseSession);
    assert_eq!(
        w.fire(a),
        vec![
            (1, ev(et::NODE_DELETED, "/e1")),
            (2, ev(et::NODE_CHILDREN_CHANGED, "/")),
            (1, ev(et::NODE_DELETED, "/e2"))
        ]
    );
}

#[test]
fn set_watches_reports_missed_changes_and_registers_the_rest() {
    let mut w = W::new(); // zxid 1: session
    w.create("/same"); // 2
    w.create("/changed"); // 3
    w.create("/kids"); // 4
    w.create("/quiet"); // 5
    let rel = w.h.zxid;
    w.set("/changed"); // 6
    w.create("/kids/c"); // 7
    let req = SetWatches2 {
        relative_zxid: rel,
        data_watches: vec!["/gone".into(), "/changed".into(), "/same".into()],
        exist_watches: vec!["/same".into(), "/absent".into()],
        child_watches: vec!["/gone".into(), "/kids".into(), "/quiet".into()],
        persistent_watches: vec!["/p".into()],
        persistent_recursive_watches: vec!["/r".into()],
    };
    let evs = w.reg.set_watches(&w.h.tree, 9, &req);
    assert_eq!(
        evs,
        vec![
            ev(et::NODE_DELETED, "/gone"),
            ev(et::NODE_DATA_CHANGED, "/changed"),
            ev(et::NODE_CREATED, "/same"),
            ev(et::NODE_DELETED, "/gone"),
            ev(et::NODE_CHILDREN_CHANGED, "/kids"),
        ]
    );
    assert_eq!(w.reg.check(9, "/same", watcher_type::DATA), Ok(()));
    assert_eq!(w.reg.check(9, "/absent", watcher_type::DATA), Ok(()));
    assert_eq!(w.reg.check(9, "/quiet", watcher_type::CHILDREN), Ok(()));
    assert_eq!(
        w.reg.check(9, "/changed", watcher_type::DATA),
        Err(ErrorCode::NoWatcher)
    );
    assert_eq!(
        w.reg.check(9, "/kids", watcher_type::CHILDREN),
        Err(ErrorCode::NoWatcher)
    );
    assert_eq!(w.reg.check(9, "/p", watcher_type::PERSISTENT), Ok(()));
    assert_eq!(
        w.reg.check(9, "/r", watcher_type::PERSISTENT_RECURSIVE),
        Ok(())
    );
    assert_eq!(w.create("/r"), vec![(9, ev(et::NODE_CREATED, "/r"))]);
    assert_eq!(w.create("/r/x"), vec![(9, ev(et::NODE_CREATED, "/r/x"))]);
}

#[test]
fn check_and_remove_match_by_type() {
    let mut reg = WatchRegistry::new();
    reg.add(1, "/a", WatchKind::Data);
    reg.add(1, "/a", WatchKind::Child);
    reg.add(2, "/a", WatchKind::Persistent);
    reg.add(3, "/a", WatchKind::PersistentRecursive);
    assert_eq!(reg.check(1, "/a", watcher_type::DATA), Ok(()));
    assert_eq!(
        reg.check(1, "/a", watcher_type::PERSISTENT),
        Err(ErrorCode::NoWatcher)
    );
    assert_eq!(
        reg.check(2, "/a", watcher_type::DATA),
        Err(ErrorCode::NoWatcher)
    );
    assert_eq!(reg.check(2, "/a", watcher_type::ANY), Ok(()));
    assert_eq!(
        reg.check(3, "/a", watcher_type::PERSISTENT_RECURSIVE),
        Ok(())
    );
    assert_eq!(
        reg.check(3, "/a", watcher_type::PERSISTENT),
        Err(ErrorCode::NoWatcher)
    );
    assert_eq!(
        reg.check(1, "/b", watcher_type::ANY),
        Err(ErrorCode::NoWatcher)
    );
    assert_eq!(reg.check(1, "/a", 9), Err(ErrorCode::MarshallingError));

    assert_eq!(reg.remove(1, "/a", watcher_type::CHILDREN), Ok(()));
    assert_eq!(
        reg.remove(1, "/a", watcher_type::CHILDREN),
        Err(ErrorCode::NoWatcher)
    );
    assert_eq!(reg.check(1, "/a", watcher_type::DATA), Ok(()));
    assert_eq!(reg.remove(2, "/a", watcher_type::PERSISTENT), Ok(()));
    assert_eq!(
        reg.check(2, "/a", watcher_type::ANY),
        Err(ErrorCode::NoWatcher)
    );
    assert_eq!(reg.remove(3, "/a", watcher_type::ANY), Ok(()));
    assert_eq!(
        reg.remove(3, "/a", watcher_type::ANY),
        Err(ErrorCode::NoWatcher)
    );
    let s = reg.stats();
    assert_eq!((s.data_watches, s.child_watches), (1, 0));
}

#[test]
fn removed_connection_gets_no_events_and_leaves_no_counts() {
    let mut w = W::new();
    w.exists(1, "/a").unwrap_err();
    w.add_watch(1, "/", 1).unwrap();
    w.children(1, "/").unwrap();
    w.exists(2, "/a").unwrap_err();
    w.reg.remove_watcher(1);
    assert_eq!(w.create("/a"), vec![(2, ev(et::NODE_CREATED, "/a"))]);
    assert_eq!(w.reg.stats().total(), 0);
}

#[test]
fn stats_count_the_data_table_by_watcher_and_by_path() {
    let mut reg = WatchRegistry::new();
    reg.add(1, "/a", WatchKind::Data);
    reg.add(1, "/b", WatchKind::Exist);
    reg.add(2, "/a", WatchKind::Data);
    reg.add(2, "/c", WatchKind::Child);
    reg.add(3, "/p", WatchKind::Persistent);
    let s = reg.stats();
    assert_eq!(s.data_watches, 4);
    assert_eq!(s.child_watches, 2);
    assert_eq!(s.total(), 6);
    assert_eq!(
        s.data_by_watcher.get(&1),
        Some(&vec!["/a".to_string(), "/b".to_string()])
    );
    assert_eq!(s.data_by_watcher.get(&2), Some(&vec!["/a".to_string()]));
    assert_eq!(s.data_by_path.get("/a"), Some(&vec![1, 2]));
    assert_eq!(s.data_by_path.len(), 3);
    // The counts agree with the listings, without them: 3 watchers (1, 2 and 3's persistent
    // watch) on /a, /b and /p in the data table.
    assert_eq!(
        reg.counts(),
        WatchCounts {
            data_watchers: 3,
            data_paths: 3,
            data_watches: 4,
            child_watches: 2,
        }
    );
    assert_eq!(reg.counts().data_watchers, s.data_by_watcher.len());
    assert_eq!(reg.counts().total(), s.total());
}

#[test]
fn add_watch_rejects_unknown_modes() {
    let mut w = W::new();
    assert_eq!(w.add_watch(1, "/a", 2), Err(ErrorCode::MarshallingError));
    assert_eq!(w.reg.stats().total(), 0);
}

#[test]
fn multi_events_fire_per_op_in_order() {
    let mut w = W::new();
    w.create("/a");
    w.get(1, "/a").unwrap();
    w.children(1, "/").unwrap();
    w.exists(2, "/b").unwrap_err();
    let a = w.h.apply(Txn::Write(Request::Multi(vec![
        Request::Create(H::create_req("/b", b"", 0)),
        Request::SetData(wire::ops::data::SetDataRequest {
            path: "/a".into(),
            data: None,
            version: -1,
        }),
    ])));
    assert_eq!(
        w.fire(a),
        vec![
            (2, ev(et::NODE_CREATED, "/b")),
            (1, ev(et::NODE_CHILDREN_CHANGED, "/")),
            (1, ev(et::NODE_DATA_CHANGED, "/a"))
        ]
    );
}

#[test]
fn set_config_writes_the_membership_with_its_version_and_fires_data_watches() {
    let mut w = W::new();
    w.get(1, "/zookeeper/config").unwrap();
    let members = "server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n\
                   server.2=127.0.0.1:2889:3889:participant;0.0.0.0:2182\n";
    let a = w.h.apply(Txn::SetConfig {
        members: members.into(),
    });
    assert_eq!(a.reply, Ok(Response::Empty));
    assert_eq!(
        w.fire(a),
        vec![(1, ev(et::NODE_DATA_CHANGED, "/zookeeper/config"))]
    );
    let (data, stat) = w.h.get("/zookeeper/config").unwrap();
    assert_eq!(
        String::from_utf8(data.unwrap()).unwrap(),
        format!("{members}version=2")
    );
    assert_eq!((stat.mzxid, stat.version, stat.aversion), (2, 1, -1));
    // Clients still cannot write it.
    assert_eq!(
        w.h.set("/zookeeper/config", b"x", -1),
        Err(ErrorCode::NoAuth)
    );
}
