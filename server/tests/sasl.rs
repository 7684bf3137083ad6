//! SASL DIGEST-MD5 (opcode 102) against the real binary, configured as kazoo's harness and
//! ZooKeeper deployments do it: a JAAS file named by `-D java.security.auth.login.config` with a
//! `Server { DigestLoginModule required user_<name>="<password>"; }` section.
//!
//! The client side of the exchange is written here from RFC 2831 §2.1.2.1, so the server's
//! challenge, its check of the response and its rspauth are each checked against an independent
//! computation.

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;

use md5::{Digest, Md5};

use common::process::{free_port, paddock_command, wait_ready, ChildGuard};
use common::RawClient;
use wire::ops::auth::{AuthPacket, GetSaslRequest, SetSaslResponse};
use wire::ops::create::{CreateRequest, CreateResponse};
use wire::ops::data::{GetDataRequest, GetDataResponse};
use wire::ops::who_am_i::WhoAmIResponse;
use wire::{Acl, ErrorCode, Id, Record, Request};

const JAAS: &str = r#"
// as kazoo's harness writes it
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_super="super_secret"
    user_admin="admin_secret"
    user_jaasuser="jaas_password";
};
"#;

struct Paddock {
    _child: ChildGuard,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

/// Writes `jaas` (if any) into a fresh directory and starts paddock with it plus `props`.
async fn start(jaas: Option<&str>, props: &[&str]) -> Paddock {
    let dir = tempfile::tempdir().unwrap();
    let mut all: Vec<String> = props.iter().map(|p| p.to_string()).collect();
    // The SASL provider, as kazoo's harness registers it: without it a `sasl:` ACL id is
    // InvalidACL (tests/acl_schemes.rs); logins work either way.
    all.push(
        "zookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
            .into(),
    );
    if let Some(text) = jaas {
        let path = dir.path().join("jaas.conf");
        std::fs::write(&path, text).unwrap();
        all.push(format!(
            "java.security.auth.login.config={}",
            path.display()
        ));
    }
    let port = free_port();
    let child = ChildGuard::spawn(
        paddock_command(&dir.path().join("data"), port, &all).stderr(Stdio::inherit()),
    );
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    // Owned from here, so a failed start is killed and reaped too.
    let server = Paddock {
        _child: child,
        addr,
        _dir: dir,
    };
    wait_ready(addr).await;
    server
}

/// Runs paddock with a JAAS file that must stop it; returns (exit code, stderr).
fn start_refused(jaas: Option<&str>, props: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut all: Vec<String> = props.iter().map(|p| p.to_string()).collect();
    let path: PathBuf = dir.path().join("jaas.conf");
    if let Some(text) = jaas {
        std::fs::write(&path, text).unwrap();
    }
    all.push(format!(
        "java.security.auth.login.config={}",
        path.display()
    ));
    let out = paddock_command(&dir.path().join("data"), free_port(), &all)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

// ----- the client side of RFC 2831 ---------------------------------------------------------

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The response-value of RFC 2831 §2.1.2.1 for qop=auth, nc=00000001; `method` is
/// "AUTHENTICATE" for the client's response and "" for the server's rspauth.
fn response_value(
    method: &str,
    user: &str,
    realm: &str,
    password: &str,
    nonce: &str,
    cnonce: &str,
    uri: &str,
) -> String {
    let secret = Md5::digest(format!("{user}:{realm}:{password}"));
    let mut a1 = secret.to_vec();
    a1.extend_from_slice(format!(":{nonce}:{cnonce}").as_bytes());
    let ha1 = hex(&Md5::digest(&a1));
    let ha2 = hex(&Md5::digest(format!("{method}:{uri}")));
    hex(&Md5::digest(format!(
        "{ha1}:{nonce}:00000001:{cnonce}:auth:{ha2}"
    )))
}

/// Picks `key="value"` out of a challenge (values here have no escapes).
fn directive<'a>(challenge: &'a str, key: &str) -> &'a str {
    let start = challenge
        .find(&format!("{key}=\""))
        .unwrap_or_else(|| panic!("no {key} in {challenge}"))
        + key.len()
        + 2;
    let len = challenge[start..].find('"').unwrap();
    &challenge[start..start + len]
}

async fn sasl(
    raw: &mut RawClient,
    xid: i32,
    token: &[u8],
) -> Option<(wire::ReplyHeader, SetSaslResponse)> {
    raw.send(
        xid,
        &Request::Sasl(GetSaslRequest {
            token: Some(token.to_vec()),
        }),
    )
    .await;
    let (h, body) = raw.recv().await?;
    Some((h, SetSaslResponse::from_bytes(&body).unwrap()))
}

/// Creates a persistent node whose only ACL entry is `sasl:jaasuser` with every permission.
async fn create_for_jaasuser_only(
    raw: &mut RawClient,
    xid: i32,
    path: &str,
    data: &[u8],
) -> (wire::ReplyHeader, Vec<u8>) {
    let acl = vec![Acl {
        perms: 31,
        id: Id::new("sasl", "jaasuser"),
    }];
    let create = CreateRequest {
        path: path.into(),
        data: Some(data.to_vec()),
        acl,
        flags: 0,
    };
    raw.send(xid, &Request::Create(create)).await;
    raw.recv().await.expect("a reply to create")
}

/// Sends the empty first token and returns the challenge's nonce, checking the challenge is
/// exactly what the JDK's DigestMD5Server sends for ZooKeeper.
async fn challenge(raw: &mut RawClient) -> String {
    let (h, resp) = sasl(raw, 1, b"").await.expect("a challenge");
    assert_eq!((h.xid, h.zxid, h.err), (1, 0, 0));
    let challenge = String::from_utf8(resp.token.expect("a challenge token")).unwrap();
    let nonce = directive(&challenge, "nonce").to_string();
    assert_eq!(nonce.len(), 40, "30 random bytes in base64: {challenge}");
    assert_eq!(
        challenge,
        format!("realm=\"zk-sasl-md5\",nonce=\"{nonce}\",charset=utf-8,algorithm=md5-sess")
    );
    nonce
}

fn client_response(user: &str, password: &str, nonce: &str, cnonce: &str) -> String {
    let uri = "zookeeper/zk-sasl-md5";
    let r = response_value(
        "AUTHENTICATE",
        user,
        "zk-sasl-md5",
        password,
        nonce,
        cnonce,
        uri,
    );
    // The order and quoting puresasl (kazoo) uses.
    format!(
        "qop=auth,realm=\"zk-sasl-md5\",username=\"{user}\",nonce=\"{nonce}\",cnonce=\"{cnonce}\",nc=00000001,\
         digest-uri=\"{uri}\",response={r}"
    )
}

/// Connects and answers the challenge as `user` with `password`, right or wrong; returns the
/// connection and the server's reply to that response.
async fn answer_challenge(
    addr: SocketAddr,
    user: &str,
    password: &str,
) -> (RawClient, wire::ReplyHeader, SetSaslResponse) {
    let mut raw = RawClient::connect(addr, 10_000).await;
    let nonce = challenge(&mut raw).await;
    let (h, resp) = sasl(
        &mut raw,
        2,
        client_response(user, password, &nonce, "c").as_bytes(),
    )
    .await
    .expect("an answer");
    (raw, h, resp)
}

/// A full successful login; asserts the server's rspauth proves it knows the password.
async fn login(addr: SocketAddr, user: &str, password: &str) -> RawClient {
    let mut raw = RawClient::connect(addr, 10_000).await;
    let nonce = challenge(&mut raw).await;
    let cnonce = "OA6MHXh6VqTrRk";
    let (h, resp) = sasl(
        &mut raw,
        2,
        client_response(user, password, &nonce, cnonce).as_bytes(),
    )
    .await
    .expect("an answer");
    assert_eq!((h.xid, h.zxid, h.err), (2, 0, 0));
    let rspauth = response_value(
        "",
        user,
        "zk-sasl-md5",
        password,
        &nonce,
        cnonce,
        "zookeeper/zk-sasl-md5",
    );
    assert_eq!(
        String::from_utf8(resp.token.unwrap()).unwrap(),
        format!("rspauth={rspauth}")
    );
    raw
}

async fn who_am_i(raw: &mut RawClient, xid: i32) -> Vec<(String, String)> {
    raw.send(xid, &Request::WhoAmI).await;
    let (h, body) = raw.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (xid, 0));
    WhoAmIResponse::from_bytes(&body)
        .unwrap()
        .client_info
        .into_iter()
        .map(|c| (c.auth_scheme, c.user))
        .collect()
}

async fn get_data(raw: &mut RawClient, xid: i32, path: &str) -> Result<Vec<u8>, i32> {
    raw.send(
        xid,
        &Request::GetData(GetDataRequest {
            path: path.into(),
            watch: false,
        }),
    )
    .await;
    let (h, body) = raw.recv().await.unwrap();
    assert_eq!(h.xid, xid);
    if h.err != 0 {
        return Err(h.err);
    }
    Ok(GetDataResponse::from_bytes(&body)
        .unwrap()
        .data
        .unwrap_or_default())
}

fn ip_and(rest: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v = vec![("ip".to_string(), "127.0.0.1".to_string())];
    v.extend(rest.iter().map(|(a, b)| (a.to_string(), b.to_string())));
    v
}

// ----- tests -------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_md5_login_gains_the_sasl_id_that_sasl_acls_name() {
    let server = start(Some(JAAS), &[]).await;
    let mut alice = login(server.addr, "jaasuser", "jaas_password").await;
    assert_eq!(
        who_am_i(&mut alice, 3).await,
        ip_and(&[("sasl", "jaasuser")])
    );

    // kazoo's test_connect_sasl_auth: a node only the SASL user may touch.
    let (h, body) = create_for_jaasuser_only(&mut alice, 4, "/1", b"x").await;
    assert_eq!((h.xid, h.err), (4, 0));
    assert_eq!(CreateResponse::from_bytes(&body).unwrap().path, "/1");
    assert_eq!(get_data(&mut alice, 5, "/1").await, Ok(b"x".to_vec()));

    let mut stranger = RawClient::connect(server.addr, 10_000).await;
    assert_eq!(
        get_data(&mut stranger, 1, "/1").await,
        Err(ErrorCode::NoAuth.code())
    );
    // Another SASL user is a different id.
    let mut admin = login(server.addr, "admin", "admin_secret").await;
    assert_eq!(
        get_data(&mut admin, 3, "/1").await,
        Err(ErrorCode::NoAuth.code())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_password_is_auth_failed_then_the_connection_closes() {
    let server = start(Some(JAAS), &[]).await;
    for (user, password) in [("jaasuser", "wrong"), ("baduser", "badpassword")] {
        let (mut raw, h, resp) = answer_challenge(server.addr, user, password).await;
        // ZooKeeper sends ReplyHeader(xid, 0, AUTHFAILED) with SetSASLResponse(null).
        assert_eq!(
            (h.xid, h.zxid, h.err),
            (2, 0, ErrorCode::AuthFailed.code()),
            "{user}"
        );
        assert_eq!(resp.token, None);
        assert!(
            raw.closed_by_server().await,
            "{user}: the server closes the connection"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_to_another_nonce_or_an_initial_response_fails() {
    let server = start(Some(JAAS), &[]).await;
    let mut raw = RawClient::connect(server.addr, 10_000).await;
    let nonce = challenge(&mut raw).await;
    // The last character changed to one it is not: a fixed 'x' would be the nonce itself
    // whenever the random nonce already ended in 'x' (1 run in 64).
    let last = if nonce.ends_with('x') { 'y' } else { 'x' };
    let stale = format!("{}{last}", &nonce[..39]);
    assert_ne!(stale, nonce);
    let (h, _) = sasl(
        &mut raw,
        2,
        client_response("jaasuser", "jaas_password", &stale, "c").as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(h.err, ErrorCode::AuthFailed.code());
    assert!(raw.closed_by_server().await);

    // DIGEST-MD5 starts with the server's challenge: a first token that is not empty fails.
    let mut raw = RawClient::connect(server.addr, 10_000).await;
    let (h, _) = sasl(&mut raw, 1, b"username=\"jaasuser\"").await.unwrap();
    assert_eq!((h.xid, h.zxid, h.err), (1, 0, ErrorCode::AuthFailed.code()));
    assert!(raw.closed_by_server().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn super_user_named_by_zookeeper_super_user_bypasses_acls() {
    let server = start(Some(JAAS), &["zookeeper.superUser=admin"]).await;
    let mut alice = login(server.addr, "jaasuser", "jaas_password").await;
    assert_eq!(
        create_for_jaasuser_only(&mut alice, 3, "/private", b"p")
            .await
            .0
            .err,
        0
    );

    let mut admin = login(server.addr, "admin", "admin_secret").await;
    assert_eq!(
        who_am_i(&mut admin, 3).await,
        ip_and(&[("sasl", "admin"), ("super", "")])
    );
    assert_eq!(get_data(&mut admin, 4, "/private").await, Ok(b"p".to_vec()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn super_password_property_replaces_the_jaas_password_of_super() {
    let server = start(
        Some(JAAS),
        &["zookeeper.SASLAuthenticationProvider.superPassword=from_property"],
    )
    .await;
    let mut s = login(server.addr, "super", "from_property").await;
    assert_eq!(who_am_i(&mut s, 3).await, ip_and(&[("sasl", "super")]));

    let (_raw, h, _) = answer_challenge(server.addr, "super", "super_secret").await;
    assert_eq!(h.err, ErrorCode::AuthFailed.code());
}

/// zookeeper.allowSaslFailedClients: ZooKeeper logs the failure and answers OK with a null
/// token; the connection stays, without the sasl id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_sasl_failed_clients_keeps_the_connection_unauthenticated() {
    let server = start(Some(JAAS), &["zookeeper.allowSaslFailedClients=true"]).await;
    let (mut raw, h, resp) = answer_challenge(server.addr, "jaasuser", "wrong").await;
    assert_eq!((h.xid, h.zxid, h.err), (2, 0, 0));
    assert_eq!(resp.token, None);
    assert_eq!(who_am_i(&mut raw, 3).await, ip_and(&[]));
    assert_eq!(get_data(&mut raw, 4, "/").await, Ok(Vec::new()));
}

/// Without a JAAS Server section ZooKeeper has no SASL server for the connection: processSasl
/// catches the NullPointerException and answers OK with a null token, and the connection stays,
/// unauthenticated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_server_section_sasl_tokens_get_an_empty_ok() {
    // kazoo's harness always passes a JAAS file, empty unless the test wants SASL.
    for jaas in [
        None,
        Some(""),
        Some("Client { org.apache.zookeeper.server.auth.DigestLoginModule required; };"),
    ] {
        let server = start(jaas, &[]).await;
        let mut raw = RawClient::connect(server.addr, 10_000).await;
        let (h, resp) = sasl(&mut raw, 1, b"").await.unwrap();
        assert_eq!((h.xid, h.zxid, h.err), (1, 0, 0), "{jaas:?}");
        assert_eq!(resp.token, None, "{jaas:?}");
        assert_eq!(who_am_i(&mut raw, 2).await, ip_and(&[]), "{jaas:?}");
        assert_eq!(get_data(&mut raw, 3, "/").await, Ok(Vec::new()), "{jaas:?}");
    }
}

#[test]
fn a_bad_jaas_file_stops_the_server_with_the_line_at_fault() {
    let (code, stderr) = start_refused(Some("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_a=\"x\"\n};"), &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "jaas.conf: line 4: expected an option name or ';' ending the module, found '}'"
        ),
        "{stderr}"
    );

    // A password where a syntax error finds it is not repeated.
    let (code, stderr) = start_refused(Some("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_a=\"hunter2\" \"hunter2\";\n};"), &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "jaas.conf: line 3: expected an option name or ';' ending the module, found a quoted string"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");

    let (code, stderr) = start_refused(None, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot read the JAAS file") && stderr.contains("jaas.conf"),
        "{stderr}"
    );

    // Kerberos: a section without a key table, and a key table without the principal's key.
    let krb = "Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };";
    let (code, stderr) = start_refused(Some(krb), &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("Krb5LoginModule needs keyTab"), "{stderr}");
    let krb = "Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true \
               keyTab=\"/nonexistent/zk.keytab\" principal=\"zookeeper/h@EXAMPLE.COM\"; };";
    let (code, stderr) = start_refused(Some(krb), &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("Kerberos: no Kerberos credentials for zookeeper/h@EXAMPLE.COM"),
        "{stderr}"
    );
    let other = "Server { com.example.LdapLoginModule required; };";
    let (code, stderr) = start_refused(Some(other), &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("uses login module com.example.LdapLoginModule"),
        "{stderr}"
    );
}

#[test]
fn sasl_serverconfig_picks_the_section_and_needs_a_jaas_file() {
    let (code, stderr) = start_refused(
        Some("Other { m required; };"),
        &["zookeeper.sasl.serverconfig=Other"],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("section \"Other\" uses login module m"),
        "{stderr}"
    );

    let dir = tempfile::tempdir().unwrap();
    let out = paddock_command(
        dir.path(),
        free_port(),
        &["zookeeper.sasl.serverconfig=Server".into()],
    )
    .stderr(Stdio::piped())
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no JAAS file is set"));
}

/// The first request that is neither auth nor SASL, from a connection without an id of a
/// required scheme: ReplyHeader(xid, 0, -124), then the server closes the connection.
async fn refused_for_want_of_auth(raw: &mut RawClient, xid: i32, req: &Request) {
    raw.send(xid, req).await;
    let (h, body) = raw.recv().await.expect("a reply");
    assert_eq!(
        (h.xid, h.zxid, h.err),
        (xid, 0, ErrorCode::SessionClosedRequireSaslAuth.code())
    );
    assert!(body.is_empty());
    assert!(raw.closed_by_server().await, "the connection closes");
}

fn get_root() -> Request {
    Request::GetData(GetDataRequest {
        path: "/".into(),
        watch: false,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_require_client_sasl_auth_refuses_other_requests_until_a_sasl_login() {
    let server = start(
        Some(JAAS),
        &[
            "zookeeper.sessionRequireClientSASLAuth=true",
            // Ignored once SASL is required, as in ZooKeeper.
            "zookeeper.allowSaslFailedClients=true",
        ],
    )
    .await;
    // Pings are requests too.
    let mut raw = RawClient::connect(server.addr, 10_000).await;
    refused_for_want_of_auth(&mut raw, wire::xid::PING, &Request::Ping).await;
    let mut raw = RawClient::connect(server.addr, 10_000).await;
    refused_for_want_of_auth(&mut raw, 1, &get_root()).await;

    // A failed login is answered -124 rather than AuthFailed, and closes.
    let (mut raw, h, resp) = answer_challenge(server.addr, "jaasuser", "wrong").await;
    assert_eq!(
        (h.xid, h.zxid, h.err),
        (2, 0, ErrorCode::SessionClosedRequireSaslAuth.code())
    );
    assert_eq!(resp.token, None);
    assert!(raw.closed_by_server().await);

    let mut alice = login(server.addr, "jaasuser", "jaas_password").await;
    assert_eq!(get_data(&mut alice, 3, "/").await, Ok(Vec::new()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enforce_auth_schemes_admits_a_connection_once_it_authenticates_with_one_of_them() {
    let server = start(
        None,
        &[
            "zookeeper.enforce.auth.enabled=true",
            "zookeeper.enforce.auth.schemes= sasl , digest",
        ],
    )
    .await;
    let mut raw = RawClient::connect(server.addr, 10_000).await;
    // The ip id every connection has is not one of the schemes.
    refused_for_want_of_auth(&mut raw, 1, &Request::WhoAmI).await;

    let mut raw = RawClient::connect(server.addr, 10_000).await;
    raw.send(
        wire::xid::AUTH,
        &Request::Auth(AuthPacket {
            auth_type: 0,
            scheme: "digest".into(),
            auth: Some(b"bob:secret".to_vec()),
        }),
    )
    .await;
    let (h, _) = raw.recv().await.unwrap();
    assert_eq!((h.xid, h.err), (wire::xid::AUTH, 0));
    assert_eq!(who_am_i(&mut raw, 1).await, ip_and(&[("digest", "bob")]));
    assert_eq!(get_data(&mut raw, 2, "/").await, Ok(Vec::new()));
}

#[test]
fn enforce_auth_without_schemes_or_with_an_unknown_one_stops_the_server() {
    for (props, says) in [
        (
            &["zookeeper.enforce.auth.enabled=true"][..],
            "enforce.auth.schemes must be configured",
        ),
        (
            &[
                "zookeeper.enforce.auth.enabled=true",
                "zookeeper.enforce.auth.schemes=digest,kerberos",
            ][..],
            "authentication scheme kerberos is not available",
        ),
    ] {
        let (code, stderr) = start_refused(Some(""), props);
        assert_ne!(code, Some(0), "{props:?}");
        assert!(stderr.contains(says), "{props:?}: {stderr}");
    }
}

/// SASLAuthenticationProvider.matches: a SASL user named super passes every sasl ACL entry, and
/// with zookeeper.letAnySaslUserDoX=<name> any SASL user passes the entry sasl:<name>.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sasl_user_super_and_let_any_sasl_user_do_x_pass_sasl_entries() {
    for let_do_x in [false, true] {
        let props: &[&str] = if let_do_x {
            &["zookeeper.letAnySaslUserDoX=jaasuser"]
        } else {
            &[]
        };
        let server = start(Some(JAAS), props).await;
        let mut alice = login(server.addr, "jaasuser", "jaas_password").await;
        let (h, _) = create_for_jaasuser_only(&mut alice, 3, "/private", b"p").await;
        assert_eq!(h.err, 0);

        let mut admin = login(server.addr, "admin", "admin_secret").await;
        let expected = if let_do_x {
            Ok(b"p".to_vec())
        } else {
            Err(ErrorCode::NoAuth.code())
        };
        assert_eq!(
            get_data(&mut admin, 3, "/private").await,
            expected,
            "letAnySaslUserDoX set: {let_do_x}"
        );
        // Not zookeeper.superUser, so no super id: only sasl entries open to it.
        let mut s = login(server.addr, "super", "super_secret").await;
        assert_eq!(who_am_i(&mut s, 3).await, ip_and(&[("sasl", "super")]));
        assert_eq!(get_data(&mut s, 4, "/private").await, Ok(b"p".to_vec()));
    }
}
