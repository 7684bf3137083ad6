//! Table-driven scripts in `tests/scripts/*.txt`: one op per line and its expected result.
//!
//! ```text
//! @config extended_types enforce_quota skip_acl   (first lines only; any subset)
//! create [-e|-s|-es|-c|-t=TTL|-ts=TTL|-f=FLAGS] PATH [DATA] [acl=SCHEME:ID:PERMS,...] -> PATH | Error
//! delete PATH [VERSION]            -> ok | Error
//! set PATH DATA [VERSION]          -> v=VERSION | Error
//! get PATH                         -> DATA | null | Error
//! exists PATH                      -> ok | Error
//! ls PATH                          -> [a,b] | Error
//! count PATH                       -> N (getAllChildrenNumber) | Error
//! stat PATH FIELD                  -> value of one Stat field (czxid, cversion, ...)
//! setacl PATH ACL [VERSION]        -> av=AVERSION | Error
//! getacl PATH                      -> ACL | Error
//! multi OP ; OP ; ...              -> [r1,r2,...]   (check PATH VERSION allowed inside)
//! auth digest:user:pw | auth ip:ADDR | auth super | noauth   (no result)
//! session N | close                (switch the entry session / close it)
//! ```
//! DATA `-` is empty; `\xNN` and `\u{...}` escapes work in paths. Errors are ErrorCode names.

use std::fmt::Write as _;

use wire::ops::check::CheckVersionRequest;
use wire::ops::children::{GetAllChildrenNumberRequest, GetChildrenRequest};
use wire::ops::create::{CreateRequest, CreateTtlRequest};
use wire::ops::data::{GetDataRequest, SetDataRequest};
use wire::ops::delete::DeleteRequest;
use wire::ops::exists::ExistsRequest;
use wire::ops::get_acl::GetAclRequest;
use wire::ops::set_acl::SetAclRequest;
use wire::{perms, Acl, ErrorCode, Id, MultiResult, Request, Response};
use znode_tree::{acl, Entry, ReadCtx, Tree, TreeConfig, Txn};

struct Runner {
    tree: Tree,
    zxid: i64,
    session: i64,
    auth: Vec<Id>,
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('x') => {
                let h: String = it.by_ref().take(2).collect();
                out.push(char::from_u32(u32::from_str_radix(&h, 16).unwrap()).unwrap());
            }
            Some('u') => {
                assert_eq!(it.next(), Some('{'));
                let h: String = it.by_ref().take_while(|c| *c != '}').collect();
                out.push(char::from_u32(u32::from_str_radix(&h, 16).unwrap()).unwrap());
            }
            Some('0') => out.push('\0'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

fn perms_of(s: &str) -> i32 {
    s.chars()
        .map(|c| match c {
            'c' => perms::CREATE,
            'd' => perms::DELETE,
            'r' => perms::READ,
            'w' => perms::WRITE,
            'a' => perms::ADMIN,
            _ => panic!("bad perm {c}"),
        })
        .fold(0, |a, b| a | b)
}

fn perms_str(p: i32) -> String {
    [
        (perms::CREATE, 'c'),
        (perms::DELETE, 'd'),
        (perms::READ, 'r'),
        (perms::WRITE, 'w'),
        (perms::ADMIN, 'a'),
    ]
    .iter()
    .filter(|(b, _)| p & b != 0)
    .map(|(_, c)| *c)
    .collect()
}

/// `scheme:id:perms,...`; the id may itself contain colons. `none` is the empty list.
fn parse_acl(s: &str) -> Vec<Acl> {
    if s == "none" {
        return vec![];
    }
    s.split(',')
        .map(|e| {
            let first = e.find(':').unwrap();
            let last = e.rfind(':').unwrap();
            Acl::new(perms_of(&e[last + 1..]), &e[..first], &e[first + 1..last])
        })
        .collect()
}

fn acl_str(acl: &[Acl]) -> String {
    acl.iter()
        .map(|a| format!("{}:{}:{}", a.id.scheme, a.id.id, perms_str(a.perms)))
        .collect::<Vec<_>>()
        .join(",")
}

fn err(e: ErrorCode) -> String {
    format!("{e:?}")
}

fn data_of(s: Option<&&str>) -> Option<Vec<u8>> {
    match s {
        None | Some(&"-") => Some(vec![]),
        Some(&"null") => None,
        Some(d) => Some(d.as_bytes().to_vec()),
    }
}

impl Runner {
    fn new(cfg: TreeConfig) -> Runner {
        let mut r = Runner {
            tree: Tree::new(cfg),
            zxid: 0,
            session: 1,
            auth: vec![],
        };
        r.apply(Txn::CreateSession {
            timeout_ms: 10_000,
            password: [0; 16],
        })
        .unwrap();
        r
    }

    fn apply(&mut self, txn: Txn) -> Result<Response, ErrorCode> {
        self.zxid += 1;
        let e = Entry {
            session_id: self.session,
            xid: 0,
            time_ms: 1_000 * self.zxid,
            auth: self.auth.clone(),
            via: None,
            txn,
        };
        self.tree.apply(self.zxid, &e).reply
    }

    fn read(&self, req: Request) -> Result<Response, ErrorCode> {
        self.tree.read(
            &ReadCtx {
                session_id: self.session,
                auth: &self.auth,
            },
            &req,
        )
    }

    /// Parses one op (not multi) into a request.
    fn request(&self, toks: &[&str]) -> Request {
        // `create -s PATH` is read as `create-s PATH`.
        let joined;
        let toks = if toks[0] == "create"
            && toks
                .get(1)
                .is_some_and(|t| t.starts_with('-') && t.len() > 1)
        {
            joined = [
                vec![format!("create{}", toks[1])],
                toks[2..].iter().map(|t| t.to_string()).collect(),
            ]
            .concat();
            joined.iter().map(String::as_str).collect::<Vec<_>>()
        } else {
            toks.to_vec()
        };
        let cmd = toks[0];
        let path = unescape(toks.get(1).copied().unwrap_or(""));
        let num = |i: usize, d: i32| toks.get(i).map_or(d, |t| t.parse().unwrap());
        if let Some(opts) = cmd.strip_prefix("create") {
            let (mut flags, mut ttl) = (0, None);
            match opts {
                "" => {}
                "-e" => flags = 1,
                "-s" => flags = 2,
                "-es" => flags = 3,
                "-c" => flags = 4,
                o if o.starts_with("-t=") => {
                    flags = 5;
                    ttl = Some(o[3..].parse().unwrap());
                }
                o if o.starts_with("-ts=") => {
                    flags = 6;
                    ttl = Some(o[4..].parse().unwrap());
                }
                o if o.starts_with("-f=") => flags = o[3..].parse().unwrap(),
                o => panic!("bad create option {o}"),
            }
            let mut data = Some(vec![]);
            let mut acl = Acl::open_unsafe();
            for t in &toks[2..] {
                if let Some(a) = t.strip_prefix("acl=") {
                    acl = parse_acl(a);
                } else {
                    data = data_of(Some(t));
                }
            }
            return match ttl {
                Some(ttl) => Request::CreateTtl(CreateTtlRequest {
                    path,
                    data,
                    acl,
                    flags,
                    ttl,
                }),
                None if flags == 4 => Request::CreateContainer(CreateRequest {
                    path,
                    data,
                    acl,
                    flags,
                }),
                None => Request::Create(CreateRequest {
                    path,
                    data,
                    acl,
                    flags,
                }),
            };
        }
        match cmd {
            "delete" => Request::Delete(DeleteRequest {
                path,
                version: num(2, -1),
            }),
            "set" => Request::SetData(SetDataRequest {
                path,
                data: data_of(toks.get(2)),
                version: num(3, -1),
            }),
            "check" => Request::Check(CheckVersionRequest {
                path,
                version: num(2, -1),
            }),
            "setacl" => Request::SetAcl(SetAclRequest {
                path,
                acl: parse_acl(toks[2]),
                version: num(3, -1),
            }),
            "get" => Request::GetData(GetDataRequest { path, watch: false }),
            "ls" => Request::GetChildren(GetChildrenRequest { path, watch: false }),
            other => panic!("unknown op {other}"),
        }
    }

    fn render(resp: Response) -> String {
        match resp {
            Response::Empty => "ok".into(),
            Response::Create(r) => r.path,
            Response::Create2(r) => r.path,
            Response::SetData(r) => format!("v={}", r.stat.version),
            Response::SetAcl(r) => format!("av={}", r.stat.aversion),
            Response::GetData(r) => r.data.map_or("null".into(), |d| {
                if d.is_empty() {
                    "-".into()
                } else {
                    String::from_utf8_lossy(&d).into()
                }
            }),
            Response::GetChildren(r) => format!("[{}]", r.children.join(",")),
            Response::Exists(_) => "ok".into(),
            Response::GetAcl(r) => acl_str(&r.acl),
            Response::GetAllChildrenNumber(r) => r.total_number.to_string(),
            Response::Multi(rs) => {
                let parts: Vec<String> = rs
                    .into_iter()
                    .map(|m| match m {
                        MultiResult::Create { path } | MultiResult::Create2 { path, .. } => path,
                        MultiResult::Delete | MultiResult::Check => "ok".into(),
                        MultiResult::SetData { stat } => format!("v={}", stat.version),
                        MultiResult::GetChildren { children } => {
                            format!("[{}]", children.join(","))
                        }
                        MultiResult::GetData { data, .. } => {
                            data.map_or("null".into(), |d| String::from_utf8_lossy(&d).into())
                        }
                        MultiResult::Error(c) => err(ErrorCode::from_code(c).unwrap()),
                    })
                    .collect();
                format!("[{}]", parts.join(","))
            }
            other => format!("{other:?}"),
        }
    }

    /// Runs one line; `None` for lines without a result.
    fn run(&mut self, line: &str) -> Option<String> {
        let toks: Vec<&str> = line.split_whitespace().collect();
        let res = match toks[0] {
            "auth" => {
                match toks[1] {
                    "super" => self.auth.push(Id::new("super", "")),
                    t if t.starts_with("ip:") => self.auth.push(Id::new("ip", &t[3..])),
                    t => {
                        let (scheme, rest) = t.split_once(':').unwrap();
                        self.auth
                            .extend(acl::authenticate(scheme, rest.as_bytes(), None).unwrap());
                    }
                }
                return None;
            }
            "noauth" => {
                self.auth.clear();
                return None;
            }
            "session" => {
                self.session = toks[1].parse().unwrap();
                if self.tree.session(self.session).is_none() {
                    self.apply(Txn::CreateSession {
                        timeout_ms: 10_000,
                        password: [0; 16],
                    })
                    .unwrap();
                }
                return None;
            }
            "close" => self.apply(Txn::CloseSession),
            "exists" => self.read(Request::Exists(ExistsRequest {
                path: unescape(toks[1]),
                watch: false,
            })),
            "get" | "ls" => self.read(self.request(&toks)),
            "getacl" => self.read(Request::GetAcl(GetAclRequest {
                path: unescape(toks[1]),
            })),
            "count" => self.read(Request::GetAllChildrenNumber(GetAllChildrenNumberRequest {
                path: unescape(toks[1]),
            })),
            "stat" => {
                let st = match self.read(Request::Exists(ExistsRequest {
                    path: unescape(toks[1]),
                    watch: false,
                })) {
                    Ok(Response::Exists(r)) => r.stat,
                    Ok(o) => panic!("{o:?}"),
                    Err(e) => return Some(err(e)),
                };
                let v = match toks[2] {
                    "czxid" => st.czxid,
                    "mzxid" => st.mzxid,
                    "pzxid" => st.pzxid,
                    "ctime" => st.ctime,
                    "mtime" => st.mtime,
                    "version" => st.version as i64,
                    "cversion" => st.cversion as i64,
                    "aversion" => st.aversion as i64,
                    "owner" => st.ephemeral_owner,
                    "len" => st.data_length as i64,
                    "children" => st.num_children as i64,
                    f => panic!("bad field {f}"),
                };
                return Some(v.to_string());
            }
            "multi" => {
                let rest = line.trim_start()[5..].to_string();
                let ops = rest
                    .split(';')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| self.request(&s.split_whitespace().collect::<Vec<_>>()))
                    .collect();
                self.apply(Txn::Write(Request::Multi(ops)))
            }
            _ => {
                let req = self.request(&toks);
                self.apply(Txn::Write(req))
            }
        };
        Some(match res {
            Ok(r) => Runner::render(r),
            Err(e) => err(e),
        })
    }
}

#[test]
fn scripts() {
    let dir = manifest_dir().join("tests/scripts");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 4, "scripts missing");
    let mut failures = String::new();
    let mut checked = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let mut cfg = TreeConfig::default();
        for line in text.lines().filter(|l| l.starts_with("@config")) {
            for opt in line.split_whitespace().skip(1) {
                match opt {
                    "extended_types" => cfg.extended_types = true,
                    "enforce_quota" => cfg.enforce_quota = true,
                    "skip_acl" => cfg.skip_acl = true,
                    o => panic!("bad config {o}"),
                }
            }
        }
        let mut r = Runner::new(cfg);
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split(" #").next().unwrap().trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('@') {
                continue;
            }
            let (op, want) = match line.rsplit_once(" -> ") {
                Some((op, want)) => (op.trim(), Some(want.trim())),
                None => (line, None),
            };
            let got = r.run(op);
            if let Some(want) = want {
                checked += 1;
                let got = got.unwrap_or_else(|| "<no result>".into());
                let want = unescape(want);
                if got != want {
                    let _ = writeln!(
                        failures,
                        "{}:{}: `{op}` gave `{got}`, expected `{want}`",
                        f.display(),
                        n + 1
                    );
                }
            }
        }
    }
    assert!(failures.is_empty(), "script failures:\n{failures}");
    assert!(checked > 100, "only {checked} checks ran");
}

/// The package directory of the `cargo test` run, read at run time: a test binary that cargo reuses
/// from a build in another checkout (same target dir, same sources) still reads this checkout's files.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}
