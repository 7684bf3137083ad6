//! Shared test harness: a tree plus a zxid counter and a clock that tests move by hand.
#![allow(dead_code)]

use wire::ops::children::GetChildrenRequest;
use wire::ops::create::{CreateRequest, CreateTtlRequest};
use wire::ops::data::{GetDataRequest, SetDataRequest};
use wire::ops::delete::DeleteRequest;
use wire::ops::exists::ExistsRequest;
use wire::{Acl, ErrorCode, Id, Request, Response, Stat};
use znode_tree::{Applied, Entry, ReadCtx, Tree, TreeConfig, Txn};

pub const SESSION: i64 = 0x0100_0000_0000_0001;

pub struct H {
    pub tree: Tree,
    pub zxid: i64,
    pub time: i64,
    pub session: i64,
    pub auth: Vec<Id>,
}

impl H {
    pub fn new() -> H {
        H::with(TreeConfig::default())
    }

    pub fn with(cfg: TreeConfig) -> H {
        H {
            tree: Tree::new(cfg),
            zxid: 0,
            time: 1_000,
            session: SESSION,
            auth: vec![],
        }
    }

    /// A tree with one open session (zxid 1).
    pub fn with_session() -> H {
        let mut h = H::new();
        h.open_session(SESSION);
        h
    }

    pub fn entry(&self, txn: Txn) -> Entry {
        Entry {
            session_id: self.session,
            xid: 1,
            time_ms: self.time,
            auth: self.auth.clone(),
            via: None,
            txn,
        }
    }

    pub fn apply(&mut self, txn: Txn) -> Applied {
        self.zxid += 1;
        self.time += 10;
        let e = self.entry(txn);
        // Every entry must survive the log's encoding unchanged.
        let e2 = Entry::decode(&e.encode()).expect("entry round-trips");
        assert_eq!(e, e2);
        self.tree.apply(self.zxid, &e2)
    }

    pub fn open_session(&mut self, id: i64) -> Applied {
        let saved = self.session;
        self.session = id;
        let a = self.apply(Txn::CreateSession {
            timeout_ms: 30_000,
            password: [7; 16],
        });
        self.session = saved;
        a
    }

    pub fn write(&mut self, req: Request) -> Result<Response, ErrorCode> {
        self.apply(Txn::Write(req)).reply
    }

    pub fn create_req(path: &str, data: &[u8], flags: i32) -> CreateRequest {
        CreateRequest {
            path: path.into(),
            data: Some(data.to_vec()),
            acl: Acl::open_unsafe(),
            flags,
        }
    }

    pub fn create(&mut self, path: &str, data: &[u8], flags: i32) -> Result<String, ErrorCode> {
        match self.write(Request::Create(H::create_req(path, data, flags)))? {
            Response::Create(r) => Ok(r.path),
            other => panic!("unexpected {other:?}"),
        }
    }

    pub fn create2(
        &mut self,
        path: &str,
        data: &[u8],
        flags: i32,
    ) -> Result<(String, Stat), ErrorCode> {
        match self.write(Request::Create2(H::create_req(path, data, flags)))? {
            Response::Create2(r) => Ok((r.path, r.stat)),
            other => panic!("unexpected {other:?}"),
        }
    }

    pub fn create_acl(&mut self, path: &str, acl: Vec<Acl>) -> Result<String, ErrorCode> {
        let req = CreateRequest {
            path: path.into(),
            data: Some(vec![]),
            acl,
            flags: 0,
        };
        match self.write(Request::Create(req))? {
            Response::Create(r) => Ok(r.path),
            other => panic!("unexpected {other:?}"),
        }
    }

    pub fn create_ttl(
        &mut self,
        path: &str,
        flags: i32,
        ttl: i64,
    ) -> Result<(String, Stat), ErrorCode> {
        let req = CreateTtlRequest {
            path: path.into(),
            data: Some(vec![]),
            acl: Acl::open_unsafe(),
            flags,
            ttl,
        };
        match self.write(Request::CreateTtl(req))? {
            Response::Create2(r) => Ok((r.path, r.stat)),
            other => panic!("unexpected {other:?}"),
        }
    }

    pub fn create_container(&mut self, path: &str) -> Result<(String, Stat), ErrorCode> {
        match self.write(Request::CreateContainer(H::create_req(path, b"", 4)))? {
            Response::Create2(r) => Ok((r.path, r.stat)),
            other => panic!("unexpected {other:?}"),
        }
    }

    pub fn delete(&mut self, path: &str, version: i32) -> Result<(), ErrorCode> {
        self.write(Request::Delete(DeleteRequest {
            path: path.into(),
            version,
        }))
        .map(|_| ())
    }

    pub fn set(&mut self, path: &str, data: &[u8], version: i32) -> Result<Stat, ErrorCode> {
        match self.write(Request::SetData(SetDataRequest {
            path: path.into(),
            data: Some(data.to_vec()),
            version,
        }))? {
            Response::SetData(r) => Ok(r.stat),
            other => panic!("unexpected {other:?}"),
        }
    }

    pub fn ctx(&self) -> ReadCtx<'_> {
        ReadCtx {
            session_id: self.session,
            auth: &self.auth,
        }
    }

    pub fn read(&self, req: Request) -> Result<Response, ErrorCode> {
        self.tree.read(&self.ctx(), &req)
    }

    pub fn stat(&self, path: &str) -> Result<Stat, ErrorCode> {
        match self.read(Request::Exists(ExistsRequest {
            path: path.into(),
            watch: false,
        }))? {
            Response::Exists(r) => Ok(r.stat),
            other => panic!("unexpected {other:?}"),
        }
    }

    pub fn get(&self, path: &str) -> Result<(Option<Vec<u8>>, Stat), ErrorCode> {
        match self.read(Request::GetData(GetDataRequest {
            path: path.into(),
            watch: false,
        }))? {
            Response::GetData(r) => Ok((r.data, r.stat)),
            other => panic!("unexpected {other:?}"),
        }
    }

    pub fn children(&self, path: &str) -> Result<Vec<String>, ErrorCode> {
        match self.read(Request::GetChildren(GetChildrenRequest {
            path: path.into(),
            watch: false,
        }))? {
            Response::GetChildren(r) => Ok(r.children),
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// Builds a Stat in wire field order.
#[allow(clippy::too_many_arguments)]
pub fn stat(
    czxid: i64,
    mzxid: i64,
    ctime: i64,
    mtime: i64,
    version: i32,
    cversion: i32,
    aversion: i32,
    ephemeral_owner: i64,
    data_length: i32,
    num_children: i32,
    pzxid: i64,
) -> Stat {
    Stat {
        czxid,
        mzxid,
        ctime,
        mtime,
        version,
        cversion,
        aversion,
        ephemeral_owner,
        data_length,
        num_children,
        pzxid,
    }
}
