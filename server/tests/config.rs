//! Config parsing against the zoo.cfg files real client harnesses generate
//! (`docs/compat.md` §1 and §5), ZooKeeper's defaults, bad values, myid and the CLI.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Parser;
use paddock::cli::Cli;
use paddock::config::{Config, ConfigError, FourLetterWhitelist, PeerRole, ServerSpec};
use wire::FourLetterWord;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse_zoo_cfg(text, Path::new("zoo.cfg"))
}

fn write_cfg(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("zoo.cfg");
    std::fs::write(&path, text).unwrap();
    path
}

/// kazoo's `ManagedZooKeeper.run()` config for a 3-server cluster (server 1's view), with the
/// harness's extra entries; it starts with an empty line.
fn kazoo_cfg(data_dir: &Path) -> String {
    format!(
        "
tickTime=2000
dataDir={}
clientPort=20000
secureClientPort=20004
maxClientCnxns=0
admin.serverPort=20003
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
ssl.keyStore.location=/tmp/k/keystore.jks
ssl.keyStore.password=apassword
ssl.trustStore.location=/tmp/k/truststore.jks
ssl.trustStore.password=apassword
4lw.commands.whitelist=*
reconfigEnabled=true
localSessionsEnabled=false

initLimit=4
syncLimit=2
server.1=localhost:20002:20001:participant
server.2=localhost:20012:20011:participant
server.3=localhost:20022:20021:participant
peerType=participant
",
        data_dir.display()
    )
}

/// kazoo's harness asks for a TLS client port with JKS stores: the start is refused with the
/// keytool command that converts them (compat-tests/kazoo-suite/shim/java runs it, and serves
/// the file with the PKCS12 stores).
#[test]
fn kazoo_cluster_config_asks_for_its_jks_stores_to_be_converted() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("myid"), "2").unwrap();
    let path = write_cfg(dir.path(), &kazoo_cfg(&data));
    let err = Config::from_zoo_cfg(&path).unwrap_err().to_string();
    assert_eq!(
        err,
        "ssl.keyStore.location=/tmp/k/keystore.jks: paddock cannot read JKS stores; convert it \
         to PKCS12 with `keytool -importkeystore -srckeystore /tmp/k/keystore.jks -srcstoretype \
         JKS -destkeystore /tmp/k/keystore.p12 -deststoretype PKCS12` and set \
         ssl.keyStore.location=/tmp/k/keystore.p12"
    );
    // Converted, the same file starts a secure port on 20004 beside the plaintext one.
    let text = kazoo_cfg(&data).replace(".jks", ".p12");
    let c = Config::from_zoo_cfg(&write_cfg(dir.path(), &text)).unwrap();
    assert_eq!(c.client_tls.secure_port, Some(20004));
    assert_eq!(c.client_tls.secure_address, None);
    assert!(c.client_tls.netty && !c.client_tls.port_unification);
    assert!(c.client_tls.x509_available());
    assert_eq!(
        c.client_tls
            .ssl_keys
            .get("keyStore.location")
            .map(String::as_str),
        Some("/tmp/k/keystore.p12")
    );
    assert!(
        c.as_conf_lines()
            .contains(&("secureClientPort".to_string(), "20004".to_string())),
        "{:?}",
        c.as_conf_lines()
    );
    let debug = format!("{c:?}");
    assert!(!debug.contains("apassword"), "{debug}");
}

#[test]
fn kazoo_cluster_config_without_its_tls_port_parses_with_myid_and_ignores_client_tls_keys() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("myid"), "2").unwrap();
    let text = kazoo_cfg(&data).replace("secureClientPort=20004\n", "");
    let path = write_cfg(dir.path(), &text);

    let c = Config::from_zoo_cfg(&path).unwrap();
    assert_eq!(c.tick_time_ms, 2000);
    assert_eq!(c.data_dir, data);
    assert_eq!(c.data_log_dir, None);
    assert_eq!(c.client_port, 20000);
    // No clientPortAddress: ZooKeeper binds every interface.
    assert_eq!(c.client_port_address, IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    assert_eq!(c.max_client_cnxns, 0);
    assert_eq!(c.min_session_timeout_ms, 4000);
    assert_eq!(c.max_session_timeout_ms, 40000);
    assert_eq!(c.four_letter_words, FourLetterWhitelist::All);
    assert!(c.reconfig_enabled);
    assert!(c.standalone_enabled);
    assert_eq!(c.my_id, Some(2));
    assert!(c.is_distributed());
    assert_eq!(
        c.servers,
        vec![
            ServerSpec {
                id: 1,
                host: "localhost".into(),
                peer_port: 20002,
                election_port: 20001,
                role: Some(PeerRole::Participant),
                client_host: None,
                client_port: None,
            },
            ServerSpec {
                id: 2,
                host: "localhost".into(),
                peer_port: 20012,
                election_port: 20011,
                role: Some(PeerRole::Participant),
                client_host: None,
                client_port: None,
            },
            ServerSpec {
                id: 3,
                host: "localhost".into(),
                peer_port: 20022,
                election_port: 20021,
                role: Some(PeerRole::Participant),
                client_host: None,
                client_port: None,
            },
        ]
    );
    assert_eq!(c.my_server().map(|s| s.peer_port), Some(20012));
    assert_eq!(c.source.as_deref(), Some(path.as_path()));
}

#[test]
fn go_zookeeper_single_server_config_parses() {
    let text =
        "admin.enableServer=false\ndataDir=/tmp/gozk123\ntickTime=500\ninitLimit=10\nsyncLimit=5\n\
                clientPort=12345\n4lw.commands.whitelist=*\nreconfigEnabled=true\n";
    let c = parse(text).unwrap();
    assert_eq!(c.tick_time_ms, 500);
    assert_eq!(c.min_session_timeout_ms, 1000);
    assert_eq!(c.max_session_timeout_ms, 10000);
    assert_eq!(c.client_port, 12345);
    assert_eq!(c.data_dir, PathBuf::from("/tmp/gozk123"));
    assert!(c.servers.is_empty());
    assert!(!c.is_distributed());
    assert_eq!(c.my_id, None);
}

#[test]
fn go_zookeeper_three_server_config_needs_and_reads_myid() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "admin.enableServer=false\ndataDir={}\ntickTime=500\ninitLimit=10\nsyncLimit=5\nclientPort=10003\n\
         4lw.commands.whitelist=*\nreconfigEnabled=true\nstandaloneEnabled=false\n\
         server.1=127.0.0.1:10001:10002\nserver.2=127.0.0.1:10004:10005\nserver.3=127.0.0.1:10007:10008\n",
        dir.path().display()
    );
    let path = write_cfg(dir.path(), &text);
    let err = Config::from_zoo_cfg(&path).unwrap_err();
    assert!(matches!(err, ConfigError::MyId { .. }), "{err}");
    assert!(err.to_string().contains("myid file is missing"), "{err}");

    std::fs::write(dir.path().join("myid"), "3\n").unwrap();
    let c = Config::from_zoo_cfg(&path).unwrap();
    assert_eq!(c.my_id, Some(3));
    assert!(!c.standalone_enabled);
    assert_eq!(c.servers.len(), 3);
    assert_eq!(c.servers[2].role, None);
    assert_eq!(
        c.servers[2].to_string(),
        "127.0.0.1:10007:10008:participant"
    );
}

#[test]
fn client_port_comes_from_my_server_line_when_client_port_is_absent() {
    // The quorum-of-one used for kazoo's 479-pass run (docs/compat.md §1).
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("myid"), "1").unwrap();
    let text = format!(
        "tickTime=2000\ndataDir={}\nstandaloneEnabled=false\nreconfigEnabled=true\n\
         server.1=127.0.0.1:22888:23888:participant;127.0.0.1:2182\n4lw.commands.whitelist=*\n",
        dir.path().display()
    );
    let c = Config::from_zoo_cfg(&write_cfg(dir.path(), &text)).unwrap();
    assert_eq!(c.client_port, 2182);
    assert_eq!(c.client_port_address, IpAddr::V4(Ipv4Addr::LOCALHOST));
    assert!(c.is_distributed());
    assert_eq!(
        c.servers[0].to_string(),
        "127.0.0.1:22888:23888:participant;127.0.0.1:2182"
    );
}

#[test]
fn missing_client_port_without_server_line_is_an_error() {
    let err = parse("dataDir=/tmp/x\n").unwrap_err();
    assert_eq!(err.to_string(), "zoo.cfg: clientPort is not set");
}

#[test]
fn missing_data_dir_in_a_file_is_an_error() {
    let err = parse("clientPort=2181\n").unwrap_err();
    assert_eq!(err.to_string(), "zoo.cfg: dataDir is not set");
}

#[test]
fn zoo_cfg_without_tick_time_uses_zookeepers_code_default() {
    let c = parse("dataDir=/d\nclientPort=2181\n").unwrap();
    assert_eq!(c.tick_time_ms, 3000);
    assert_eq!(c.min_session_timeout_ms, 6000);
    assert_eq!(c.max_session_timeout_ms, 60000);
    // ZooKeeper's default whitelist is srvr alone.
    assert!(c.four_letter_words.allows(FourLetterWord::Srvr));
    assert!(!c.four_letter_words.allows(FourLetterWord::Ruok));
    assert!(!c.four_letter_words.allows(FourLetterWord::Isro));
    assert!(!c.extended_types_enabled);
    assert_eq!(c.jute_max_buffer, 0xfffff);
    assert_eq!(c.max_client_cnxns, 60);
    assert_eq!(c.container_check_interval_ms, 60000);
    assert_eq!(c.snapshot_every_entries, 100000);
}

#[test]
fn session_timeouts_are_derived_after_all_lines_whatever_their_order() {
    let c = parse("minSessionTimeout=1500\ndataDir=/d\nclientPort=1\ntickTime=100\n").unwrap();
    assert_eq!(c.min_session_timeout_ms, 1500);
    assert_eq!(c.max_session_timeout_ms, 2000);
}

#[test]
fn properties_syntax_spaces_colons_comments_and_continuations() {
    let text =
        "# comment\n! also a comment\n   tickTime = 1000  \nclientPort: 2189\ndataDir /var/zk\n\
                4lw.commands.whitelist = ruok, \\\n    stat ,mntr\n";
    let c = parse(text).unwrap();
    assert_eq!(c.tick_time_ms, 1000);
    assert_eq!(c.client_port, 2189);
    assert_eq!(c.data_dir, PathBuf::from("/var/zk"));
    for w in [
        FourLetterWord::Ruok,
        FourLetterWord::Stat,
        FourLetterWord::Mntr,
        FourLetterWord::Srvr,
    ] {
        assert!(c.four_letter_words.allows(w), "{w:?}");
    }
    assert!(!c.four_letter_words.allows(FourLetterWord::Dump));
    assert_eq!(c.four_letter_words.to_string(), "mntr,ruok,srvr,stat");
}

#[test]
fn system_property_forms_set_the_same_settings() {
    let text = "dataDir=/d\nclientPort=1\n\
                zookeeper.extendedTypesEnabled=true\n\
                zookeeper.DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=\n\
                enforceQuota=true\nskipACL=yes\njute.maxbuffer=0x400000\n\
                znode.container.checkIntervalMs=1000\nsnapCount=500\nreadonlymode.enabled=true\n";
    let c = parse(text).unwrap();
    assert!(c.extended_types_enabled);
    assert_eq!(
        c.super_digest.as_deref(),
        Some("super:D/InIHSb7yEEbrWz8b9l71RjZJU=")
    );
    assert!(c.enforce_quota);
    assert!(c.skip_acl);
    assert_eq!(c.jute_max_buffer, 0x400000);
    assert_eq!(c.container_check_interval_ms, 1000);
    assert_eq!(c.snapshot_every_entries, 500);
    // readonlymode.enabled adds isro to ZooKeeper's whitelist.
    assert!(c.four_letter_words.allows(FourLetterWord::Isro));
    assert!(!c.four_letter_words.allows(FourLetterWord::Ruok));
}

#[test]
fn unknown_keys_are_not_fatal() {
    let c = parse(
        "dataDir=/d\nclientPort=7\nsomeFutureKey=whatever\nfoo\nmetricsProvider.httpPort=7000\n",
    )
    .unwrap();
    assert_eq!(c.client_port, 7);
}

#[test]
fn non_number_port_names_key_and_line() {
    let err = parse("dataDir=/d\n\nclientPort=abc\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "zoo.cfg:3: clientPort: \"abc\" is not a valid port number"
    );
}

#[test]
fn out_of_range_port_is_rejected() {
    let err = parse("dataDir=/d\nclientPort=70000\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "zoo.cfg:2: clientPort: \"70000\" is not a valid port number"
    );
}

#[test]
fn min_session_timeout_above_max_is_rejected() {
    let err = parse("dataDir=/d\nclientPort=1\nminSessionTimeout=50000\nmaxSessionTimeout=40000\n")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "minSessionTimeout (50000) must not be larger than maxSessionTimeout (40000)"
    );
}

#[test]
fn zero_tick_time_is_rejected() {
    let err = parse("dataDir=/d\nclientPort=1\ntickTime=0\n").unwrap_err();
    assert_eq!(err.to_string(), "tickTime must be greater than 0");
}

#[test]
fn negative_and_non_boolean_values_are_rejected_with_their_line() {
    let err = parse("dataDir=/d\nclientPort=1\nmaxClientCnxns=-1\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "zoo.cfg:3: maxClientCnxns: \"-1\" is not a valid non-negative number"
    );
    let err = parse("dataDir=/d\nclientPort=1\nreconfigEnabled=yes please\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "zoo.cfg:3: reconfigEnabled: \"yes please\" is not a boolean (true/false)"
    );
}

#[test]
fn bad_server_lines_are_rejected() {
    let err = parse("dataDir=/d\nclientPort=1\nserver.x=h:1:2\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "zoo.cfg:3: server.x: \"x\" is not a server id"
    );
    let err = parse("dataDir=/d\nclientPort=1\nserver.1=h:1\n").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("zoo.cfg:3: server.1: expected host:peerPort"),
        "{err}"
    );
    let err = parse("dataDir=/d\nclientPort=1\nserver.1=h:1:2:leader\n").unwrap_err();
    assert!(err.to_string().contains("unknown server role"), "{err}");
}

/// The digest is a password hash, guessable offline: the error names the line, the key and what
/// is wrong, never the value.
#[test]
fn a_malformed_super_digest_is_rejected_without_repeating_it() {
    let tail = "it must be user:base64-sha1, as DigestAuthenticationProvider prints it \
                (the value is not shown: it is a secret)";
    for (value, wrong) in [
        ("D/InIHSb7yEEbrWz8b9l71RjZJU=", "has no ':'"),
        (
            ":D/InIHSb7yEEbrWz8b9l71RjZJU=",
            "has an empty user name before ':'",
        ),
        ("superuser7:", "has an empty hash after ':'"),
    ] {
        let err = parse(&format!(
            "dataDir=/d\nclientPort=1\nDigestAuthenticationProvider.superDigest={value}\n"
        ))
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            format!(
                "zoo.cfg:3: DigestAuthenticationProvider.superDigest: the value {wrong}: {tail}"
            )
        );
        assert!(!err.contains(value.trim_matches(':')), "{err}");
    }
    let cli = Cli::try_parse_from([
        "paddock",
        "serve",
        "--super-digest",
        "D/InIHSb7yEEbrWz8b9l71RjZJU=",
    ])
    .unwrap();
    let err = cli.into_config().unwrap_err().to_string();
    assert_eq!(
        err,
        format!("command-line --super-digest: DigestAuthenticationProvider.superDigest: the value has no ':': {tail}")
    );
}

#[test]
fn server_spec_parses_ipv6_observer_and_client_forms() {
    let s = ServerSpec::parse(4, "[::1]:2888:3888:observer;[::1]:2181").unwrap();
    assert_eq!(s.host, "::1");
    assert_eq!(s.role, Some(PeerRole::Observer));
    assert_eq!(s.client_host.as_deref(), Some("::1"));
    assert_eq!(s.client_port, Some(2181));
    assert_eq!(s.to_string(), "[::1]:2888:3888:observer;[::1]:2181");

    let s = ServerSpec::parse(1, "zk1:2888:3888;2181").unwrap();
    assert_eq!(s.client_host, None);
    assert_eq!(s.client_port, Some(2181));
    assert_eq!(s.to_string(), "zk1:2888:3888:participant;0.0.0.0:2181");
}

#[test]
fn invalid_myid_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("myid"), "one\n").unwrap();
    let path = write_cfg(
        dir.path(),
        &format!("dataDir={}\nclientPort=1\n", dir.path().display()),
    );
    let err = Config::from_zoo_cfg(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: \"one\" is not a server id (a non-negative integer)",
            dir.path().join("myid").display()
        )
    );
}

#[test]
fn myid_not_in_server_list_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("myid"), "9").unwrap();
    let text = format!(
        "dataDir={}\nclientPort=1\nserver.1=a:1:2\nserver.2=b:1:2\n",
        dir.path().display()
    );
    let err = Config::from_zoo_cfg(&write_cfg(dir.path(), &text)).unwrap_err();
    assert_eq!(err.to_string(), "myid is 9 but there is no server.9 line");
}

#[test]
fn standalone_myid_is_read_when_present() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("myid"), "5").unwrap();
    let c = Config::from_zoo_cfg(&write_cfg(
        dir.path(),
        &format!("dataDir={}\nclientPort=1\n", dir.path().display()),
    ))
    .unwrap();
    assert_eq!(c.my_id, Some(5));
    // A standalone ZooKeeper reports serverId=0 in conf whatever myid says.
    let conf = c.as_conf_lines();
    assert_eq!(
        conf.last().unwrap(),
        &("serverId".to_string(), "0".to_string())
    );
}

#[test]
fn missing_file_is_an_io_error_naming_it() {
    let err = Config::from_zoo_cfg(Path::new("/nonexistent/zoo.cfg")).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cannot read /nonexistent/zoo.cfg: "),
        "{err}"
    );
}

#[test]
fn negotiate_timeout_clamps_to_min_and_max() {
    let c = parse("dataDir=/d\nclientPort=1\ntickTime=2000\n").unwrap();
    assert_eq!(c.negotiate_timeout(100), 4000);
    assert_eq!(c.negotiate_timeout(-5), 4000);
    assert_eq!(c.negotiate_timeout(10000), 10000);
    assert_eq!(c.negotiate_timeout(40000), 40000);
    assert_eq!(c.negotiate_timeout(i32::MAX), 40000);
}

#[test]
fn conf_lines_follow_zookeepers_dump_conf_order() {
    let c =
        parse("dataDir=/var/zk\ndataLogDir=/var/zklog\nclientPort=2181\ntickTime=2000\n").unwrap();
    let lines: Vec<String> = c
        .as_conf_lines()
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    assert_eq!(
        lines,
        vec![
            "clientPort=2181",
            "secureClientPort=-1",
            "dataDir=/var/zk",
            "dataLogDir=/var/zklog",
            "tickTime=2000",
            "maxClientCnxns=60",
            "minSessionTimeout=4000",
            "maxSessionTimeout=40000",
            "clientPortListenBacklog=-1",
            "serverId=0",
        ]
    );
}

#[test]
fn embedded_default_is_loopback_port_2181_all_words() {
    let c = Config::embedded_default();
    assert_eq!(c.tick_time_ms, 2000);
    assert_eq!(c.client_port, 2181);
    assert_eq!(c.client_port_address, IpAddr::V4(Ipv4Addr::LOCALHOST));
    assert_eq!(c.data_dir, PathBuf::from("./data"));
    assert_eq!(c.min_session_timeout_ms, 4000);
    assert_eq!(c.max_session_timeout_ms, 40000);
    assert_eq!(c.four_letter_words, FourLetterWhitelist::All);
    assert_eq!(c.source, None);
    c.validate().unwrap();
}

#[test]
fn serve_without_config_uses_embedded_default_with_flags_applied() {
    let cli = Cli::try_parse_from([
        "paddock",
        "serve",
        "--port",
        "0",
        "--bind",
        "0.0.0.0",
        "--data-dir",
        "/tmp/pd",
        "--tick-time",
        "100",
        "--four-letter-words",
        "ruok,mntr",
        "--extended-types",
        "--super-digest",
        "super:abc=",
        "--max-client-cnxns",
        "7",
    ])
    .unwrap();
    let c = cli.into_config().unwrap();
    assert_eq!(c.client_port, 0);
    assert_eq!(c.client_port_address, IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    assert_eq!(c.data_dir, PathBuf::from("/tmp/pd"));
    assert_eq!(c.tick_time_ms, 100);
    assert_eq!(c.min_session_timeout_ms, 200);
    assert_eq!(c.max_session_timeout_ms, 2000);
    assert_eq!(c.four_letter_words.to_string(), "mntr,ruok,srvr");
    assert!(c.extended_types_enabled);
    assert_eq!(c.super_digest.as_deref(), Some("super:abc="));
    assert_eq!(c.max_client_cnxns, 7);
}

/// Without --config every word is answered, on loopback. Bound beyond it with no whitelist
/// given, only srvr is, as ZooKeeper's default (plus isro in read-only mode); a whitelist given
/// by flag or -D is taken as given.
#[test]
fn serve_beyond_loopback_without_config_answers_only_srvr_unless_told() {
    let words = |args: &[&str]| {
        let mut all = vec!["paddock", "serve"];
        all.extend_from_slice(args);
        Cli::try_parse_from(all)
            .unwrap()
            .into_config()
            .unwrap()
            .four_letter_words
    };
    assert_eq!(words(&[]), FourLetterWhitelist::All);
    assert_eq!(words(&["--bind", "127.0.0.1"]), FourLetterWhitelist::All);
    assert_eq!(words(&["--bind", "::1"]), FourLetterWhitelist::All);
    assert_eq!(words(&["--bind", "127.0.0.2"]), FourLetterWhitelist::All);
    for addr in ["0.0.0.0", "10.1.2.3", "::"] {
        assert_eq!(
            words(&["--bind", addr]),
            FourLetterWhitelist::zookeeper_default(),
            "{addr}"
        );
    }
    assert_eq!(
        words(&["-D", "clientPortAddress=0.0.0.0"]),
        FourLetterWhitelist::zookeeper_default()
    );
    assert_eq!(
        words(&["--bind", "0.0.0.0", "-D", "readonlymode.enabled=true"]).to_string(),
        "isro,srvr"
    );
    assert_eq!(
        words(&["--bind", "0.0.0.0", "--four-letter-words", "*"]),
        FourLetterWhitelist::All
    );
    assert_eq!(
        words(&[
            "--bind",
            "0.0.0.0",
            "-D",
            "zookeeper.4lw.commands.whitelist=mntr"
        ])
        .to_string(),
        "mntr,srvr"
    );
}

#[test]
fn flags_override_the_file_and_dash_d_sets_properties() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cfg(
        dir.path(),
        &format!(
            "dataDir={}\nclientPort=2181\ntickTime=2000\n",
            dir.path().display()
        ),
    );
    let cli = Cli::try_parse_from([
        "paddock".as_ref(),
        "serve".as_ref(),
        "--config".as_ref(),
        path.as_os_str(),
        "--port".as_ref(),
        "2999".as_ref(),
        "-D".as_ref(),
        "zookeeper.extendedTypesEnabled=true".as_ref(),
        "-D".as_ref(),
        "tickTime=500".as_ref(),
    ])
    .unwrap();
    let c = cli.into_config().unwrap();
    assert_eq!(c.client_port, 2999);
    assert!(c.extended_types_enabled);
    assert_eq!(c.tick_time_ms, 500);
    // Still the zoo.cfg defaults, not the embedded ones.
    assert!(!c.four_letter_words.allows(FourLetterWord::Ruok));
    assert_eq!(c.source.as_deref(), Some(path.as_path()));
}

#[test]
fn bad_flag_value_names_the_flag() {
    let cli = Cli::try_parse_from(["paddock", "serve", "--bind", "example.org"]).unwrap();
    let err = cli.into_config().unwrap_err();
    assert_eq!(
        err.to_string(),
        "command-line --bind: clientPortAddress: \"example.org\" is not an IP address (host names other than \
         localhost are not resolved)"
    );
    // Without '=' the argument may be a password (`superPassword:hunter2`): not repeated.
    let cli = Cli::try_parse_from([
        "paddock",
        "serve",
        "-D",
        "tickTime=2000",
        "-D",
        "zookeeper.SASLAuthenticationProvider.superPassword:hunter2",
    ])
    .unwrap();
    assert_eq!(
        cli.into_config().unwrap_err().to_string(),
        "command-line -D: the -D number 2: expected KEY=VALUE, found no '=' (the argument is not \
         shown, as it may hold a secret)"
    );
}

#[test]
fn help_explains_every_flag_with_default_and_zoo_cfg_key() {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let serve = cmd.find_subcommand_mut("serve").unwrap();
    let help = serve.render_long_help().to_string();
    for key in [
        "clientPort",
        "clientPortAddress",
        "dataDir",
        "tickTime",
        "4lw.commands.whitelist",
        "extendedTypesEnabled",
        "DigestAuthenticationProvider.superDigest",
        "maxClientCnxns",
    ] {
        assert!(
            help.contains(&format!("zoo.cfg key: {key}")),
            "missing {key} in\n{help}"
        );
    }
    for flag in [
        "--config",
        "--port",
        "--bind",
        "--data-dir",
        "--tick-time",
        "--four-letter-words",
        "--extended-types",
        "--super-digest",
        "--max-client-cnxns",
        "--set",
    ] {
        assert!(help.contains(flag), "missing {flag}");
    }
    assert!(help.contains("every four-letter word enabled"), "{help}");
}

#[test]
fn data_dir_flag_supplies_a_file_without_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cfg(dir.path(), "clientPort=2181\n");
    let data = dir.path().join("d");
    let cli = Cli::try_parse_from([
        "paddock".as_ref(),
        "serve".as_ref(),
        "--config".as_ref(),
        path.as_os_str(),
        "--data-dir".as_ref(),
        data.as_os_str(),
    ])
    .unwrap();
    assert_eq!(cli.into_config().unwrap().data_dir, data);
}

#[test]
fn named_flags_win_over_dash_d() {
    let cli = Cli::try_parse_from([
        "paddock",
        "serve",
        "-D",
        "clientPort=1111",
        "--port",
        "2222",
    ])
    .unwrap();
    assert_eq!(cli.into_config().unwrap().client_port, 2222);
}

#[test]
fn validate_rejects_duplicate_server_ids_and_empty_data_dir() {
    let mut c = Config::embedded_default();
    let s = ServerSpec::parse(1, "a:1:2").unwrap();
    c.servers = vec![s.clone(), s];
    assert_eq!(
        c.validate().unwrap_err().to_string(),
        "server.1 is listed twice"
    );
    let mut c = Config::embedded_default();
    c.data_dir = PathBuf::new();
    assert_eq!(c.validate().unwrap_err().to_string(), "dataDir is empty");
}

#[test]
fn whitelist_star_anywhere_in_the_list_means_all() {
    let (list, unknown) = FourLetterWhitelist::parse("ruok, *, bogus");
    assert_eq!(list, FourLetterWhitelist::All);
    assert!(unknown.is_empty());
    let (list, unknown) = FourLetterWhitelist::parse("ruok,bogus");
    assert_eq!(list.to_string(), "ruok,srvr");
    assert_eq!(unknown, vec!["bogus".to_string()]);
}

#[test]
fn global_outstanding_limit_defaults_to_1000_and_reads_either_spelling() {
    assert_eq!(
        parse("dataDir=/d\nclientPort=1\n")
            .unwrap()
            .global_outstanding_limit,
        1000
    );
    for key in ["globalOutstandingLimit", "zookeeper.globalOutstandingLimit"] {
        let c = parse(&format!("dataDir=/d\nclientPort=1\n{key}=7\n")).unwrap();
        assert_eq!(c.global_outstanding_limit, 7);
    }
    // ZooKeeper takes a negative limit (every connection with a request out waits) as 0 does.
    let c = parse("dataDir=/d\nclientPort=1\nglobalOutstandingLimit=-1\n").unwrap();
    assert_eq!(c.global_outstanding_limit, 0);
    let err = parse("dataDir=/d\nclientPort=1\nglobalOutstandingLimit=lots\n").unwrap_err();
    assert!(err.to_string().contains("globalOutstandingLimit"), "{err}");
}

fn ensemble_text(extra: &str) -> String {
    format!(
        "tickTime=2000\ndataDir=/tmp/pd\nclientPort=2181\ninitLimit=5\nsyncLimit=2\n\
         server.1=10.0.0.1:2888:3888\nserver.2=10.0.0.2:2888:3888:participant\n\
         server.3=10.0.0.3:2888:3888\nserver.4=10.0.0.4:2888:3888:observer\n{extra}"
    )
}

#[test]
fn server_lines_become_voters_and_observers_with_peer_addresses() {
    let mut c = parse(&ensemble_text("")).unwrap();
    c.my_id = Some(2);
    assert_eq!(c.voters(), vec![1, 2, 3]);
    assert_eq!(c.observers(), vec![4]);
    assert_eq!(c.my_role(), PeerRole::Participant);
    assert_eq!(c.peer_listen_host(), Some(("10.0.0.2".to_string(), 2888)));
    assert_eq!(
        c.peer_addresses(),
        vec![
            (1, "10.0.0.1:2888".to_string()),
            (3, "10.0.0.3:2888".to_string()),
            (4, "10.0.0.4:2888".to_string())
        ]
    );
    c.my_id = Some(4);
    assert_eq!(c.my_role(), PeerRole::Observer);
    let mut all = parse(&ensemble_text("quorumListenOnAllIPs=true\n")).unwrap();
    all.my_id = Some(1);
    assert_eq!(all.peer_listen_host(), Some(("0.0.0.0".to_string(), 2888)));
}

#[test]
fn raft_timing_derives_from_tick_time_unless_overridden() {
    // syncLimit x tickTime = 2 x 2000 ms: 40 ticks of 100 ms, spread by a quarter.
    let c = parse(&ensemble_text("")).unwrap();
    assert_eq!(c.raft_timing(), (Duration::from_millis(100), 40, 3));
    assert_eq!(c.raft_max_election_ticks(), 50);
    // go-zookeeper's test servers: 5 x 500 ms = 2.5 s, 50 ticks of 50 ms.
    let gozk = parse(&ensemble_text("tickTime=500\nsyncLimit=5\n")).unwrap();
    assert_eq!(gozk.raft_timing(), (Duration::from_millis(50), 50, 3));
    assert_eq!(gozk.raft_max_election_ticks(), 62);
    // 2 x 100 ms is 4 ticks of the 50 ms floor: raised to 10.
    let fast = parse(&ensemble_text("tickTime=100\n")).unwrap();
    assert_eq!(fast.raft_timing(), (Duration::from_millis(50), 10, 3));
    assert_eq!(fast.raft_max_election_ticks(), 13);
    let set = parse(&ensemble_text(
        "paddock.raft.tickMs=25\npaddock.raft.electionTicks=8\npaddock.raft.heartbeatTicks=2\n",
    ))
    .unwrap();
    assert_eq!(set.raft_timing(), (Duration::from_millis(25), 8, 2));
    assert_eq!(set.raft_max_election_ticks(), 16);
    let err = parse(&ensemble_text("paddock.raft.heartbeatTicks=40\n")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "paddock.raft.heartbeatTicks (40) must be smaller than paddock.raft.electionTicks (40)"
    );
    assert!(parse(&ensemble_text("paddock.raft.tickMs=0\n")).is_err());
}

#[test]
fn ensemble_ids_must_fit_a_session_id_byte_and_need_a_participant() {
    let err = parse("dataDir=/tmp/x\nclientPort=1\nserver.0=a:1:2\nserver.1=b:1:2\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "server.0: ids of ensemble members go from 1 to 255"
    );
    let err =
        parse("dataDir=/tmp/x\nclientPort=1\nserver.256=a:1:2\nserver.1=b:1:2\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "server.256: ids of ensemble members go from 1 to 255"
    );
    let err =
        parse("dataDir=/tmp/x\nclientPort=1\nserver.1=a:1:2:observer\nserver.2=b:1:2:observer\n")
            .unwrap_err();
    assert_eq!(
        err.to_string(),
        "every listed server is an observer: an ensemble needs at least one participant"
    );
}

#[test]
fn conf_in_quorum_mode_prints_the_quorum_keys_before_the_membership() {
    let mut c = parse(&ensemble_text("peerType=observer\n")).unwrap();
    c.my_id = Some(4);
    let lines = c.as_conf_lines();
    let keys: Vec<&str> = lines.iter().map(|(k, _)| k.as_str()).collect();
    let at = keys.iter().position(|k| *k == "serverId").unwrap();
    assert_eq!(
        &lines[at..],
        &[
            ("serverId".to_string(), "4".to_string()),
            ("initLimit".to_string(), "5".to_string()),
            ("syncLimit".to_string(), "2".to_string()),
            ("electionAlg".to_string(), "3".to_string()),
            ("electionPort".to_string(), "3888".to_string()),
            ("quorumPort".to_string(), "2888".to_string()),
            ("peerType".to_string(), "1".to_string()),
            ("membership: ".to_string(), String::new()),
            (
                "server.1".to_string(),
                "10.0.0.1:2888:3888:participant".to_string()
            ),
            (
                "server.2".to_string(),
                "10.0.0.2:2888:3888:participant".to_string()
            ),
            (
                "server.3".to_string(),
                "10.0.0.3:2888:3888:participant".to_string()
            ),
            (
                "server.4".to_string(),
                "10.0.0.4:2888:3888:observer".to_string()
            ),
        ]
    );
}

/// A key that asks for protection paddock cannot give refuses the start, naming the key and what
/// to do instead (the fail-closed rule); harmless neighbours still parse.
#[test]
fn security_keys_paddock_cannot_honour_refuse_the_start() {
    let base = "dataDir=/tmp/x\nclientPort=2181\n";
    let cases: &[(&str, &str)] = &[
        (
            "secureClientPort=2281",
            "secureClientPort needs serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
        ),
        (
            "client.portUnification=true",
            "client.portUnification=true needs serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
        ),
        (
            "secureClientPortAddress=0.0.0.0",
            "secureClientPortAddress is set but secureClientPort is not set",
        ),
        (
            "serverCnxnFactory=com.example.Factory",
            "serverCnxnFactory: \"com.example.Factory\": paddock serves clients as ZooKeeper's",
        ),
        (
            "secureClientPort=2281\nserverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
            "secureClientPort needs ssl.keyStore.location",
        ),
        (
            "secureClientPort=2281\nserverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location=/k.pem",
            "secureClientPort with ssl.clientAuth=need needs ssl.trustStore.location",
        ),
        (
            "client.portUnification=true\nserverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location=/k.pem\nssl.clientAuth=want",
            "client.portUnification=true with ssl.clientAuth=want needs ssl.trustStore.location",
        ),
        (
            "secureClientPort=2281\nserverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location=/k.pem\nssl.trustStore.location=/t.pem\nssl.crl=true",
            "ssl.crl: paddock does not check revocation",
        ),
        (
            "secureClientPort=2281\nserverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location=/k.pem\nssl.trustStore.location=/t.pem\nssl.ocsp=true",
            "ssl.ocsp: paddock does not check revocation",
        ),
        (
            "ssl.authProvider=com.example.Provider",
            "ssl.authProvider: \"com.example.Provider\": paddock authenticates TLS clients with \
             ZooKeeper's X509AuthenticationProvider (scheme x509) only",
        ),
        (
            "enforce.auth.enabled=true\nenforce.auth.schemes=sasl,x509",
            "enforce.auth.schemes: authentication scheme x509 is not available (set \
             secureClientPort, or authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider",
        ),
        // A unified port alone does not register it before the schemes are checked (ZooKeeper
        // 3.9.5 refuses this start too, measured).
        (
            "client.portUnification=true\nserverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location=/k.pem\nssl.trustStore.location=/t.pem\n\
             enforce.auth.enabled=true\nenforce.auth.schemes=x509",
            "enforce.auth.schemes: authentication scheme x509 is not available",
        ),
        (
            "authProvider.x=com.example.Unknown",
            "authProvider.x: \"com.example.Unknown\" is not an authentication provider paddock has",
        ),
        (
            "DigestAuthenticationProvider.digestAlg=SHA3-256",
            "DigestAuthenticationProvider.digestAlg: \"SHA3-256\": paddock computes digest ids with SHA1 only",
        ),
        (
            "zookeeper.DigestAuthenticationProvider.enabled=false",
            "zookeeper.DigestAuthenticationProvider.enabled: paddock cannot turn the digest scheme off",
        ),
        (
            "admin.forceHttps=true",
            "admin.forceHttps=true needs ssl.quorum.keyStore.location",
        ),
        (
            "admin.portUnification=true",
            "admin.portUnification=true needs ssl.quorum.keyStore.location",
        ),
        (
            "admin.needClientAuth=true",
            "admin.needClientAuth=true asks for client certificates, which plain HTTP cannot carry",
        ),
        (
            "admin.forceHttps=true\nadmin.needClientAuth=true\nssl.quorum.keyStore.location=/k.pem",
            "admin.needClientAuth=true needs ssl.quorum.trustStore.location",
        ),
        ("admin.forceHttps=maybe", "admin.forceHttps"),
        ("quorum.auth.enableSasI=true", "quorum.auth.enableSasI: not a quorum.auth key paddock knows"),
        (
            "quorum.auth.learnerRequireSasl=true",
            "quorum.auth.learnerRequireSasl and quorum.auth.serverRequireSasl need quorum.auth.enableSasl=true",
        ),
        ("sslQuorum=true", "sslQuorum=true needs ssl.quorum.keyStore.location"),
        ("ssl.quorum.crl=true", "ssl.quorum.crl"),
        ("ssl.quorum.ocsp=true", "ssl.quorum.ocsp"),
        ("ssl.quorum.context.supplier.class=x.Y", "ssl.quorum.context.supplier.class"),
        (
            "sslQuorum=true\nssl.quorum.keyStore.location=/k.pem\nssl.quorum.trustStore.location=/t.pem\nssl.quorum.clientAuth=want",
            "ssl.quorum.clientAuth=want: paddock requires every member to present its certificate",
        ),
        (
            "quorum.auth.enableSasl=true",
            "quorum.auth.enableSasl=true needs a JAAS file",
        ),
    ];
    for (line, want) in cases {
        let err = parse(&format!("{base}{line}\n"))
            .expect_err(line)
            .to_string();
        assert!(err.contains(want), "{line}: {err:?} lacks {want:?}");
    }
    for ok in [
        "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
        "authProvider.sasl=org.apache.zookeeper.server.auth.DigestAuthenticationProvider",
        "DigestAuthenticationProvider.digestAlg=SHA1",
        "DigestAuthenticationProvider.enabled=true",
        "admin.forceHttps=false",
        "admin.forceHttps=true\nssl.quorum.keyStore.location=/k.pem",
        "admin.portUnification=true\nadmin.needClientAuth=true\nssl.quorum.keyStore.location=/k.pem\nssl.quorum.trustStore.location=/t.pem",
        "admin.enableServer=false\nadmin.needClientAuth=true",
        "client.portUnification=false",
        "client.certReload=true",
        "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
        "serverCnxnFactory=org.apache.zookeeper.server.NIOServerCnxnFactory",
        "ssl.authProvider=x509",
        "X509AuthenticationProvider.superUser=CN=admin,O=Example",
        "authProvider.1=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n\
         enforce.auth.enabled=true\nenforce.auth.schemes=x509",
        // No certificate asked for, so no trust store needed.
        "secureClientPort=2281\nsecureClientPortAddress=127.0.0.1\n\
         serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
         ssl.keyStore.location=/k.pem\nssl.clientAuth=none",
        // A secure client port has the x509 scheme without the provider line (ZooKeeper adds it).
        "secureClientPort=2281\nserverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
         ssl.keyStore.location=/k.pem\nssl.trustStore.location=/t.pem\n\
         enforce.auth.enabled=true\nenforce.auth.schemes=x509",
        "ssl.quorum.handshakeDetectionTimeoutMillis=5000",
        "quorum.cnxn.threads.size=20",
        "ssl.keyStore.location=/k.jks",
    ] {
        parse(&format!("{base}{ok}\n")).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}

/// The quorum keys land in the config as written; the store files are not read at this point
/// (that happens when the peer transport starts), and passwords do not reach Debug output.
#[test]
fn quorum_tls_keys_are_read_from_zoo_cfg_and_system_properties() {
    let c = parse(
        "dataDir=/tmp/x\nclientPort=2181\nsslQuorum=true\nportUnification=true\n\
         sslQuorumReloadCertFiles=true\nssl.quorum.keyStore.location=/etc/zk/m1.pem\n\
         ssl.quorum.keyStore.password=hunter2\nzookeeper.ssl.quorum.trustStore.location=/etc/zk/ca.pem\n",
    )
    .unwrap();
    let q = &c.quorum_security;
    assert!(q.ssl_quorum && q.port_unification && q.reload_cert_files);
    assert_eq!(
        q.ssl_keys.get("keyStore.location").map(String::as_str),
        Some("/etc/zk/m1.pem")
    );
    assert_eq!(
        q.ssl_keys.get("trustStore.location").map(String::as_str),
        Some("/etc/zk/ca.pem")
    );
    let debug = format!("{c:?}");
    assert!(!debug.contains("hunter2"), "{debug}");
    assert!(debug.contains("keyStore.password=******"), "{debug}");
}

/// ZooKeeper's `dynamicConfigFile`: the membership from the named file, its version from the
/// file name's hex suffix; zoo.cfg's own `version=` line in the backward-compatible form.
#[test]
fn dynamic_config_file_gives_the_membership_and_its_version() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("myid"), "2\n").unwrap();
    let dynamic = dir.path().join("zoo.cfg.dynamic.100000008");
    std::fs::write(
        &dynamic,
        "server.2=127.0.0.1:10004:10005:participant;127.0.0.1:10006\n\
         server.1=127.0.0.1:10001:10002:participant;127.0.0.1:10003",
    )
    .unwrap();
    let text = format!(
        "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir={}\nreconfigEnabled=true\n\
         standaloneEnabled=false\ndynamicConfigFile={}\n",
        dir.path().display(),
        dynamic.display()
    );
    let c = Config::from_zoo_cfg(&write_cfg(dir.path(), &text)).unwrap();
    assert_eq!(c.servers.iter().map(|s| s.id).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(c.config_version, 0x1_0000_0008);
    assert_eq!(c.dynamic_config_file.as_deref(), Some(dynamic.as_path()));
    // The client port comes from this member's line, as the rewritten zoo.cfg has none.
    assert_eq!(c.client_port, 10006);
    assert_eq!(c.client_port_address, IpAddr::V4(Ipv4Addr::LOCALHOST));

    // Without a hex suffix the version is 0.
    let plain = dir.path().join("members");
    std::fs::copy(&dynamic, &plain).unwrap();
    let c = Config::from_zoo_cfg(&write_cfg(
        dir.path(),
        &text.replace(&dynamic.display().to_string(), &plain.display().to_string()),
    ))
    .unwrap();
    assert_eq!(c.config_version, 0);

    // The backward-compatible form: server.N and version= in zoo.cfg itself.
    let c = parse(
        "dataDir=/d\nclientPort=2181\ninitLimit=5\nsyncLimit=2\nversion=1a\n\
         server.1=127.0.0.1:10001:10002;2181\nserver.2=127.0.0.1:10004:10005;2182\n",
    )
    .unwrap();
    assert_eq!(c.config_version, 0x1a);
    assert_eq!(c.dynamic_config_file, None);
}

/// What ZooKeeper refuses in a dynamic config setup is refused here, with the file and line;
/// hierarchical quorums are refused anywhere, since paddock's quorums are majorities.
#[test]
fn dynamic_config_file_mistakes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("myid"), "1\n").unwrap();
    let dynamic = dir.path().join("zoo.cfg.dynamic.5");
    let base = format!(
        "dataDir={}\ninitLimit=5\nsyncLimit=2\nstandaloneEnabled=false\ndynamicConfigFile={}\n",
        dir.path().display(),
        dynamic.display()
    );
    let line1 = "server.1=127.0.0.1:10001:10002;10003";
    for (zoo_cfg_extra, dynamic_text, expected) in [
        (
            line1,
            line1,
            "server.N lines must be in the dynamic config file",
        ),
        (
            "",
            "server.1=127.0.0.1:10001:10002;10003\nversion=5",
            "zoo.cfg.dynamic.5:2: version: a dynamic config file holds no version line",
        ),
        (
            "",
            "server.1=127.0.0.1:10001:10002;10003\nweight.1=2",
            "zoo.cfg.dynamic.5:2: weight.1: hierarchical quorums",
        ),
        (
            "",
            "server.1=127.0.0.1:10001:10002;10003\ntickTime=2000",
            "zoo.cfg.dynamic.5:2: tickTime: unrecognised parameter",
        ),
        (
            "",
            "server.1=127.0.0.1:10001",
            "zoo.cfg.dynamic.5:1: server.1:",
        ),
    ] {
        std::fs::write(&dynamic, dynamic_text).unwrap();
        let path = write_cfg(dir.path(), &format!("{base}{zoo_cfg_extra}\n"));
        let err = Config::from_zoo_cfg(&path).unwrap_err().to_string();
        assert!(err.contains(expected), "{dynamic_text:?}: {err}");
    }
    std::fs::remove_file(&dynamic).unwrap();
    let path = write_cfg(dir.path(), &base);
    let err = Config::from_zoo_cfg(&path).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("cannot read {}", dynamic.display())),
        "{err}"
    );

    let err = parse("dataDir=/d\ngroup.1=1:2:3\nserver.1=127.0.0.1:1:2;3\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "zoo.cfg:2: group.1: hierarchical quorums (group/weight) are not supported: paddock's \
         quorums are majorities of the participants"
    );
}

/// ContainerManager's settings: ZooKeeper 3.9's defaults, the values given (with or without the
/// `zookeeper.` prefix), and maxPerMinute=0 refused (ZooKeeper divides a minute by it).
#[test]
fn container_manager_settings() {
    let c = parse("dataDir=/d\nclientPort=2181\n").unwrap();
    assert_eq!(
        (
            c.container_check_interval_ms,
            c.container_max_per_minute,
            c.container_max_never_used_interval_ms
        ),
        (60_000, 10_000, 0)
    );
    let c = parse(
        "dataDir=/d\nclientPort=2181\nznode.container.maxPerMinute=120\n\
         zookeeper.znode.container.maxNeverUsedIntervalMs=300000\n",
    )
    .unwrap();
    assert_eq!(
        (
            c.container_max_per_minute,
            c.container_max_never_used_interval_ms
        ),
        (120, 300_000)
    );
    let err = parse("dataDir=/d\nclientPort=2181\nznode.container.maxPerMinute=0\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "znode.container.maxPerMinute must be greater than 0"
    );
    let err = parse("dataDir=/d\nclientPort=2181\nznode.container.maxNeverUsedIntervalMs=-1\n")
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("zoo.cfg:3: znode.container.maxNeverUsedIntervalMs:"),
        "{err}"
    );
}
