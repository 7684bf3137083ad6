//! Model-based property test: random op sequences applied to the real tree and to a naive
//! reference written from ZooKeeper's `PrepRequestProcessor` checks and `DataTree` changes (a
//! flat map, linear scans), comparing every reply and every Stat field. Also checks
//! snapshot/restore at the end of each run.

mod common;

use std::collections::BTreeMap;

use proptest::prelude::*;

use wire::ops::create::CreateRequest;
use wire::ops::data::{GetDataRequest, SetDataRequest};
use wire::ops::delete::DeleteRequest;
use wire::ops::exists::ExistsRequest;
use wire::{Acl, ErrorCode, Request, Response, Stat};
use znode_tree::{Entry, ReadCtx, Tree, TreeConfig, Txn};

const SESSION: i64 = 5;

#[derive(Clone, Debug)]
struct RNode {
    data: Option<Vec<u8>>,
    czxid: i64,
    mzxid: i64,
    pzxid: i64,
    ctime: i64,
    mtime: i64,
    version: i32,
    cversion: i32,
    owner: i64,
}

/// The naive reference tree.
struct Model {
    nodes: BTreeMap<String, RNode>,
}

fn parent_of(p: &str) -> String {
    let i = p.rfind('/').unwrap();
    if i == 0 {
        "/".into()
    } else {
        p[..i].into()
    }
}

impl Model {
    fn new() -> Model {
        let mut nodes = BTreeMap::new();
        for p in ["/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"] {
            nodes.insert(
                p.to_string(),
                RNode {
                    data: Some(vec![]),
                    czxid: 0,
                    mzxid: 0,
                    pzxid: 0,
                    ctime: 0,
                    mtime: 0,
                    version: 0,
                    cversion: 0,
                    owner: 0,
                },
            );
        }
        Model { nodes }
    }

    fn children(&self, p: &str) -> Vec<String> {
        let prefix = if p == "/" {
            "/".to_string()
        } else {
            format!("{p}/")
        };
        self.nodes
            .keys()
            .filter(|k| {
                k.as_str() != "/" && k.starts_with(&prefix) && !k[prefix.len()..].contains('/')
            })
            .map(|k| k[prefix.len()..].to_string())
            .collect()
    }

    fn stat(&self, p: &str) -> Stat {
        let n = &self.nodes[p];
        let kids = self.children(p).len() as i32;
        Stat {
            czxid: n.czxid,
            mzxid: n.mzxid,
            ctime: n.ctime,
            mtime: n.mtime,
            version: n.version,
            cversion: n.cversion * 2 - kids,
            aversion: if p == "/zookeeper/config" { -1 } else { 0 },
            ephemeral_owner: n.owner,
            data_length: n.data.as_ref().map_or(0, |d| d.len() as i32),
            num_children: kids,
            pzxid: n.pzxid,
        }
    }

    fn create(
        &mut self,
        zxid: i64,
        time: i64,
        path: &str,
        data: &Option<Vec<u8>>,
        flags: i32,
        alive: bool,
    ) -> Result<String, ErrorCode> {
        if !(0..=3).contains(&flags) {
            return Err(ErrorCode::BadArguments);
        }
        if flags & 1 == 1 && !alive {
            return Err(ErrorCode::SessionExpired);
        }
        let parent = parent_of(path);
        let pn = self.nodes.get(&parent).ok_or(ErrorCode::NoNode)?.clone();
        let full = if flags & 2 == 2 {
            format!("{path}{:010}", pn.cversion)
        } else {
            path.to_string()
        };
        if self.nodes.contains_key(&full) {
            return Err(ErrorCode::NodeExists);
        }
        if pn.owner != 0 {
            return Err(ErrorCode::NoChildrenForEphemerals);
        }
        let pm = self.nodes.get_mut(&parent).unwrap();
        pm.cversion += 1;
        pm.pzxid = zxid;
        let owner = if flags & 1 == 1 { SESSION } else { 0 };
        self.nodes.insert(
            full.clone(),
            RNode {
                data: data.clone(),
                czxid: zxid,
                mzxid: zxid,
                pzxid: zxid,
                ctime: time,
                mtime: time,
                version: 0,
                cversion: 0,
                owner,
            },
        );
        Ok(full)
    }

    fn delete(&mut self, zxid: i64, path: &str, version: i32) -> Result<(), ErrorCode> {
        if ["/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"].contains(&path) {
            return Err(ErrorCode::BadArguments);
        }
        let parent = parent_of(path);
        if !self.nodes.contains_key(&parent) {
            return Err(ErrorCode::NoNode);
        }
        let n = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
        if version != -1 && version != n.version {
            return Err(ErrorCode::BadVersion);
        }
        if !self.children(path).is_empty() {
            return Err(ErrorCode::NotEmpty);
        }
        self.nodes.remove(path);
        self.nodes.get_mut(&parent).unwrap().pzxid = zxid;
        Ok(())
    }

    fn set(
        &mut self,
        zxid: i64,
        time: i64,
        path: &str,
        data: &Option<Vec<u8>>,
        version: i32,
    ) -> Result<Stat, ErrorCode> {
        let n = self.nodes.get_mut(path).ok_or(ErrorCode::NoNode)?;
        if version != -1 && version != n.version {
            return Err(ErrorCode::BadVersion);
        }
        n.data = data.clone();
        n.mzxid = zxid;
        n.mtime = time;
        n.version += 1;
        Ok(self.stat(path))
    }

    fn close(&mut self, zxid: i64) {
        let mine: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.owner == SESSION)
            .map(|(k, _)| k.clone())
            .collect();
        for p in mine {
            self.delete(zxid, &p, -1).unwrap();
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Create(String, Option<Vec<u8>>, i32),
    Delete(String, i32),
    Set(String, Option<Vec<u8>>, i32),
    Exists(String),
    Get(String),
    Children(String),
    Reconnect,
}

fn path() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 1..4)
        .prop_map(|v| format!("/{}", v.join("/")))
}

fn data() -> impl Strategy<Value = Option<Vec<u8>>> {
    prop_oneof![
        Just(None),
        prop::collection::vec(any::<u8>(), 0..6).prop_map(Some)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (path(), data(), prop_oneof![4 => 0..4i32, 1 => Just(9)]).prop_map(|(p, d, f)| Op::Create(p, d, f)),
        2 => (path(), -1..3i32).prop_map(|(p, v)| Op::Delete(p, v)),
        2 => (path(), data(), -1..3i32).prop_map(|(p, d, v)| Op::Set(p, d, v)),
        1 => path().prop_map(Op::Exists),
        1 => path().prop_map(Op::Get),
        1 => prop_oneof![path(), Just("/".to_string())].prop_map(Op::Children),
        1 => Just(Op::Reconnect),
    ]
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut tree = Tree::new(TreeConfig::default());
    let mut model = Model::new();
    let mut zxid = 0i64;
    let mut alive = false;
    let auth = vec![];
    let apply = |tree: &mut Tree, txn: Txn, zxid: &mut i64| {
        *zxid += 1;
        tree.apply(
            *zxid,
            &Entry {
                session_id: SESSION,
                xid: 1,
                time_ms: *zxid * 7,
                auth: vec![],
                via: None,
                txn,
            },
        )
    };
    // Known created sequential paths, so later ops can hit them.
    let mut seqs: Vec<String> = vec![];
    for op in ops {
        let ctx = ReadCtx {
            session_id: SESSION,
            auth: &auth,
        };
        match op {
            Op::Create(p, d, flags) => {
                let req = CreateRequest {
                    path: p.clone(),
                    data: d.clone(),
                    acl: Acl::open_unsafe(),
                    flags,
                };
                let got = apply(&mut tree, Txn::Write(Request::Create(req)), &mut zxid).reply;
                let want = model.create(zxid, zxid * 7, &p, &d, flags, alive);
                let got = got.map(|r| match r {
                    Response::Create(c) => c.path,
                    other => panic!("{other:?}"),
                });
                prop_assert_eq!(&got, &want, "create {} {}", p, flags);
                if let Ok(full) = want {
                    if full != p {
                        seqs.push(full);
                    }
                }
            }
            Op::Delete(p, v) => {
                let p = if p.ends_with("/c") && !seqs.is_empty() {
                    seqs[seqs.len() / 2].clone()
                } else {
                    p
                };
                let got = apply(
                    &mut tree,
                    Txn::Write(Request::Delete(DeleteRequest {
                        path: p.clone(),
                        version: v,
                    })),
                    &mut zxid,
                )
                .reply;
                let want = model.delete(zxid, &p, v).map(|_| Response::Empty);
                prop_assert_eq!(got, want, "delete {} {}", p, v);
            }
            Op::Set(p, d, v) => {
                let req = SetDataRequest {
                    path: p.clone(),
                    data: d.clone(),
                    version: v,
                };
                let got = apply(&mut tree, Txn::Write(Request::SetData(req)), &mut zxid).reply;
                let want = model.set(zxid, zxid * 7, &p, &d, v);
                let got = got.map(|r| match r {
                    Response::SetData(s) => s.stat,
                    other => panic!("{other:?}"),
                });
                prop_assert_eq!(got, want, "set {}", p);
            }
            Op::Exists(p) => {
                let got = tree.read(
                    &ctx,
                    &Request::Exists(ExistsRequest {
                        path: p.clone(),
                        watch: false,
                    }),
                );
                let want = if model.nodes.contains_key(&p) {
                    Ok(model.stat(&p))
                } else {
                    Err(ErrorCode::NoNode)
                };
                let got = got.map(|r| match r {
                    Response::Exists(e) => e.stat,
                    other => panic!("{other:?}"),
                });
                prop_assert_eq!(got, want, "exists {}", p);
            }
            Op::Get(p) => {
                let got = tree.read(
                    &ctx,
                    &Request::GetData(GetDataRequest {
                        path: p.clone(),
                        watch: false,
                    }),
                );
                let want = match model.nodes.get(&p) {
                    Some(n) => Ok((n.data.clone(), model.stat(&p))),
                    None => Err(ErrorCode::NoNode),
                };
                let got = got.map(|r| match r {
                    Response::GetData(g) => (g.data, g.stat),
                    other => panic!("{other:?}"),
                });
                prop_assert_eq!(got, want, "get {}", p);
            }
            Op::Children(p) => {
                let got = tree.read(
                    &ctx,
                    &Request::GetChildren2(GetChildren2Request {
                        path: p.clone(),
                        watch: false,
                    }),
                );
                let want = if model.nodes.contains_key(&p) {
                    Ok((model.children(&p), model.stat(&p)))
                } else {
                    Err(ErrorCode::NoNode)
                };
                let got = got.map(|r| match r {
                    Response::GetChildren2(g) => (g.children, g.stat),
                    other => panic!("{other:?}"),
                });
                prop_assert_eq!(got, want, "children {}", p);
            }
            Op::Reconnect => {
                if alive {
                    let a = apply(&mut tree, Txn::CloseSession, &mut zxid);
                    prop_assert_eq!(a.reply, Ok(Response::Empty));
                    model.close(zxid);
                    alive = false;
                } else {
                    apply(
                        &mut tree,
                        Txn::CreateSession {
                            timeout_ms: 1000,
                            password: [0; 16],
                        },
                        &mut zxid,
                    );
                    alive = true;
                }
            }
        }
        prop_assert_eq!(tree.last_zxid(), zxid);
        prop_assert_eq!(tree.node_count(), model.nodes.len() + 1);
    }
    let restored = Tree::restore(&tree.snapshot(), TreeConfig::default()).unwrap();
    prop_assert_eq!(restored.digest(), tree.digest());
    let size: u64 = model
        .nodes
        .iter()
        .map(|(k, n)| (k.len() + n.data.as_ref().map_or(0, |d| d.len())) as u64)
        .sum();
    prop_assert_eq!(tree.approximate_data_size(), size);
    prop_assert_eq!(restored.approximate_data_size(), size);
    Ok(())
}

// GetChildren2Request is the same record as GetChildrenRequest.
mod alias {
    pub use wire::ops::children::GetChildrenRequest as GetChildren2Request;
}
use alias::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
    #[test]
    fn tree_matches_naive_model(ops in prop::collection::vec(op(), 1..80)) {
        run(ops)?;
    }
}
