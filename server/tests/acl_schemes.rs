//! ACL ids of a scheme without a registered provider, against the real binary: ZooKeeper's
//! fixupACL refuses them with InvalidACL on create, setACL and the creates of a multi. ip and
//! digest always have a provider; sasl only with its `authProvider` line, x509 with its line or a
//! secure client port. The same cases run against ZooKeeper 3.9.5 in compat-tests/b2b
//! (`acl_schemes.py`).

mod common;

use std::net::SocketAddr;
use std::process::Stdio;

use common::process::{free_port, paddock_command, wait_ready, ChildGuard};
use common::RawClient;
use wire::ops::create::{CreateRequest, CreateResponse};
use wire::ops::multi::decode_results;
use wire::ops::set_acl::SetAclRequest;
use wire::response::MultiResult;
use wire::{perms, Acl, ErrorCode, Reader, Record, Request};

const SASL: &str =
    "zookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider";
const X509: &str =
    "zookeeper.authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider";

struct Paddock {
    _child: ChildGuard,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

async fn start(props: &[&str]) -> Paddock {
    let dir = tempfile::tempdir().unwrap();
    let props: Vec<String> = props.iter().map(|p| p.to_string()).collect();
    let port = free_port();
    let child = ChildGuard::spawn(
        paddock_command(&dir.path().join("data"), port, &props).stderr(Stdio::inherit()),
    );
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let server = Paddock {
        _child: child,
        addr,
        _dir: dir,
    };
    wait_ready(addr).await;
    server
}

fn create(path: &str, acl: Vec<Acl>) -> Request {
    Request::Create(CreateRequest {
        path: path.into(),
        data: Some(Vec::new()),
        acl,
        flags: 0,
    })
}

/// Sends `req` and returns the reply's error code and body.
async fn call(c: &mut RawClient, xid: i32, req: Request) -> (i32, Vec<u8>) {
    c.send(xid, &req).await;
    let (h, body) = c.recv().await.expect("a reply");
    assert_eq!(h.xid, xid);
    (h.err, body)
}

/// Runs create, create with a parent missing, setACL and a multi with an id of `scheme`, and
/// checks each reply: accepted when `registered`, InvalidACL (before NoNode) when not.
async fn check_scheme(server: &Paddock, scheme: &str, id: &str, registered: bool) {
    let mut c = RawClient::connect(server.addr, 30_000).await;
    let world = vec![Acl::new(perms::ALL, "world", "anyone")];
    let only = vec![Acl::new(perms::ALL, scheme, id)];
    let mixed = vec![world[0].clone(), only[0].clone()];
    let base = format!("/{scheme}");
    let invalid = ErrorCode::InvalidAcl.code();
    let what = format!("{scheme} registered={registered}");

    let (err, body) = call(&mut c, 1, create(&base, world.clone())).await;
    assert_eq!(err, 0, "{what}");
    assert_eq!(CreateResponse::from_bytes(&body).unwrap().path, base);

    for (xid, acl) in [(2, only.clone()), (3, mixed.clone())] {
        let path = format!("{base}/n{xid}");
        let (err, body) = call(&mut c, xid, create(&path, acl.clone())).await;
        if registered {
            assert_eq!(err, 0, "{what} create {acl:?}");
            assert_eq!(CreateResponse::from_bytes(&body).unwrap().path, path);
        } else {
            assert_eq!(err, invalid, "{what} create {acl:?}");
        }
    }
    // fixupACL comes before the parent's lookup.
    let (err, _) = call(&mut c, 4, create(&format!("{base}/none/x"), only.clone())).await;
    let no_node = ErrorCode::NoNode.code();
    assert_eq!(err, if registered { no_node } else { invalid }, "{what}");

    let set = |path: &str, acl: &Vec<Acl>| {
        Request::SetAcl(SetAclRequest {
            path: path.into(),
            acl: acl.clone(),
            version: -1,
        })
    };
    let (err, _) = call(&mut c, 5, set(&base, &mixed)).await;
    assert_eq!(err, if registered { 0 } else { invalid }, "{what} setACL");
    let (err, _) = call(&mut c, 6, set(&format!("{base}/none"), &only)).await;
    assert_eq!(
        err,
        if registered { no_node } else { invalid },
        "{what} setACL"
    );

    let (m1, m2) = (format!("{base}/m1"), format!("{base}/m2"));
    let multi = Request::Multi(vec![create(&m1, world.clone()), create(&m2, only.clone())]);
    let (err, body) = call(&mut c, 7, multi).await;
    assert_eq!(err, 0, "{what} multi");
    let results = decode_results(&mut Reader::new(&body)).unwrap();
    let want = if registered {
        vec![
            MultiResult::Create { path: m1 },
            MultiResult::Create { path: m2 },
        ]
    } else {
        vec![MultiResult::Error(0), MultiResult::Error(invalid)]
    };
    assert_eq!(results, want, "{what} multi");

    // An earlier op failing on the tree answers first, whatever the later op's ACL.
    let multi = Request::Multi(vec![
        create(&format!("{base}/none/y"), world.clone()),
        create(&format!("{base}/m3"), only.clone()),
    ]);
    let (err, body) = call(&mut c, 8, multi).await;
    assert_eq!(err, 0, "{what} multi");
    assert_eq!(
        decode_results(&mut Reader::new(&body)).unwrap(),
        vec![
            MultiResult::Error(no_node),
            MultiResult::Error(ErrorCode::RuntimeInconsistency.code())
        ],
        "{what} multi after NoNode"
    );
}

#[tokio::test]
async fn sasl_and_x509_ids_need_their_providers() {
    let none = start(&[]).await;
    check_scheme(&none, "sasl", "u1", false).await;
    check_scheme(&none, "x509", "CN=a", false).await;
    // ip and digest ids never need a line.
    let mut c = RawClient::connect(none.addr, 30_000).await;
    let acl = vec![
        Acl::new(perms::ALL, "ip", "127.0.0.1"),
        Acl::new(perms::ALL, "digest", "u:x"),
    ];
    assert_eq!(call(&mut c, 1, create("/ipdigest", acl)).await.0, 0);

    let both = start(&[SASL, X509]).await;
    check_scheme(&both, "sasl", "u1", true).await;
    check_scheme(&both, "x509", "CN=a", true).await;
}

#[tokio::test]
async fn each_provider_line_registers_its_scheme_only() {
    let sasl = start(&[SASL]).await;
    check_scheme(&sasl, "sasl", "u1", true).await;
    check_scheme(&sasl, "x509", "CN=a", false).await;
}
