//! The connection security of `paddock lock` and `paddock elect`: TLS files, credentials, and the
//! ACL their nodes get.
//!
//! With any identity (`--tls-cert`, `--auth`, `--sasl`) the nodes are made with ZooKeeper's
//! `CREATOR_ALL_ACL` (`auth::cdrwa`, which the server expands to every id the session has
//! authenticated as) plus what `--acl` adds, and the lock's path and its parents, when the tool
//! makes them, get the same ACL. Deleting a node needs the `d` permission on its parent, so no
//! other identity can then delete the holder's node and take the lock (or leadership). Without
//! one the nodes stay open (`world:anyone:cdrwa`), as Curator's default: the tool cannot give a
//! session with no identity an ACL that only it passes.

use std::path::{Path, PathBuf};

use clap::Args;
use zookeeper_client::{Acl, AuthId, Client, Connector, Permission, SaslOptions, TlsOptions};

/// The TLS files of every client command (`lock`, `elect`, and the server's `status`).
#[derive(Debug, Clone, Default, Args)]
pub struct TlsArgs {
    /// Speak TLS to every server, verifying its certificate against these CA certificates (PEM)
    /// and its name against the host in --servers (an IP address must be in the certificate's
    /// subject alternative names). The port is the server's secureClientPort, or a
    /// client.portUnification port.
    #[arg(long, value_name = "FILE", env = "PADDOCK_TLS_CA")]
    pub tls_ca: Option<PathBuf>,

    /// This client's certificate (PEM; the chain may follow it), for a server with
    /// ssl.clientAuth=need or want: the session then has the id x509:<subject>.
    #[arg(
        long,
        value_name = "FILE",
        env = "PADDOCK_TLS_CERT",
        requires = "tls_ca",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,

    /// The key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(
        long,
        value_name = "FILE",
        env = "PADDOCK_TLS_KEY",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
}

/// The TLS and credential options both commands take.
#[derive(Debug, Clone, Default, Args)]
pub struct SecurityArgs {
    #[command(flatten)]
    pub tls: TlsArgs,

    /// Authenticate with addAuth: SCHEME:CREDENTIALS, e.g. digest:USER:PASSWORD (the session
    /// then has the id digest:USER:<hash>). Prefer the environment variable to the flag: a
    /// command line is visible to other users in /proc.
    #[arg(long, value_name = "SCHEME:CREDENTIALS", env = "PADDOCK_AUTH")]
    pub auth: Option<String>,

    /// Log in with SASL: digest-md5:USER:PASSWORD (a user of the server's JAAS Server section),
    /// or gssapi[:SERVICE] (Kerberos, with the ticket cache of kinit or KRB5CCNAME; SERVICE is
    /// the servers' principal's first part, default zookeeper, its host the one in --servers).
    /// The session then has the id sasl:<user or principal>.
    #[arg(long, value_name = "MECHANISM:...", env = "PADDOCK_SASL")]
    pub sasl: Option<String>,
}

/// What the security options ask for, checked and loaded.
#[derive(Debug, Clone)]
pub struct Security {
    tls: Option<TlsOptions>,
    has_cert: bool,
    auth: Option<(String, Vec<u8>)>,
    sasl: Option<SaslOptions>,
}

fn read(path: &Path, what: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read {what} {}: {e}", path.display()))
}

impl SecurityArgs {
    /// Reads the files and checks the values; every mistake is an error naming the option.
    pub fn load(&self) -> anyhow::Result<Security> {
        let tls = match &self.tls.tls_ca {
            None => None,
            Some(ca) => {
                let pem = read(ca, "--tls-ca")?;
                let mut tls = TlsOptions::new()
                    .with_pem_ca(&pem)
                    .map_err(|e| anyhow::anyhow!("--tls-ca {}: {e}", ca.display()))?;
                if let (Some(cert), Some(key)) = (&self.tls.tls_cert, &self.tls.tls_key) {
                    let c = read(cert, "--tls-cert")?;
                    let k = read(key, "--tls-key")?;
                    tls = tls.with_pem_identity(&c, &k).map_err(|e| {
                        anyhow::anyhow!(
                            "--tls-cert {} / --tls-key {}: {e}",
                            cert.display(),
                            key.display()
                        )
                    })?;
                }
                Some(tls)
            }
        };
        let auth = match &self.auth {
            None => None,
            Some(a) => Some(parse_auth(a)?),
        };
        let sasl = match &self.sasl {
            None => None,
            Some(s) => Some(parse_sasl(s)?),
        };
        Ok(Security {
            tls,
            has_cert: self.tls.tls_cert.is_some(),
            auth,
            sasl,
        })
    }
}

/// `SCHEME:CREDENTIALS` of --auth.
pub fn parse_auth(a: &str) -> anyhow::Result<(String, Vec<u8>)> {
    match a.split_once(':') {
        Some((scheme, creds)) if !scheme.is_empty() && !creds.is_empty() => {
            if scheme == "digest" && !creds.contains(':') {
                anyhow::bail!("--auth digest wants digest:USER:PASSWORD");
            }
            Ok((scheme.to_string(), creds.as_bytes().to_vec()))
        }
        _ => anyhow::bail!("--auth wants SCHEME:CREDENTIALS, e.g. digest:USER:PASSWORD"),
    }
}

/// `digest-md5:USER:PASSWORD` or `gssapi[:SERVICE]` of --sasl.
pub fn parse_sasl(s: &str) -> anyhow::Result<SaslOptions> {
    let (mech, rest) = s.split_once(':').unwrap_or((s, ""));
    match mech.to_ascii_lowercase().as_str() {
        "digest-md5" => match rest.split_once(':') {
            Some((user, password)) if !user.is_empty() => {
                Ok(SaslOptions::digest_md5(user.to_string(), password.to_string()).into())
            }
            _ => anyhow::bail!("--sasl digest-md5 wants digest-md5:USER:PASSWORD"),
        },
        "gssapi" | "kerberos" => {
            let options = SaslOptions::gssapi();
            Ok(if rest.is_empty() {
                options.into()
            } else {
                options.with_username(rest.to_string()).into()
            })
        }
        _ => {
            anyhow::bail!("--sasl wants digest-md5:USER:PASSWORD or gssapi[:SERVICE], not {mech:?}")
        }
    }
}

impl Security {
    /// Whether the session will have an identity of its own (x509, digest or sasl).
    pub fn authenticated(&self) -> bool {
        self.auth.is_some() || self.sasl.is_some() || self.has_cert
    }

    /// The ACL for the tool's nodes: `auth::cdrwa` plus `extra` once authenticated; empty (open)
    /// otherwise.
    pub fn node_acl(&self, extra: &[Acl]) -> Vec<Acl> {
        if !self.authenticated() {
            return Vec::new();
        }
        let mut acl = vec![Acl::new(Permission::ALL, AuthId::authed())];
        acl.extend_from_slice(extra);
        acl
    }

    /// Connects with these options (TLS to every server in `servers` when --tls-ca is given).
    pub async fn connect(
        &self,
        connector: Connector,
        servers: &str,
    ) -> Result<Client, zookeeper_client::Error> {
        let mut connector = connector;
        if let Some((scheme, creds)) = &self.auth {
            connector = connector.with_auth(scheme, creds);
        }
        if let Some(sasl) = &self.sasl {
            connector = connector.with_sasl(sasl.clone());
        }
        match &self.tls {
            Some(tls) => {
                connector
                    .with_tls(tls.clone())
                    .secure_connect(servers)
                    .await
            }
            None => connector.connect(servers).await,
        }
    }
}

/// One `--acl SCHEME:ID:PERMS` (PERMS from `crwda`, or `all`), as zkCli's setAcl writes an entry;
/// the id may hold colons (`digest:USER:HASH`) and commas (`x509:CN=a,O=b`).
pub fn parse_acl(s: &str) -> Result<Acl, String> {
    let bad = |why: &str| {
        Err(format!("invalid ACL {s:?}: {why} (SCHEME:ID:PERMS, e.g. world:anyone:r or digest:bob:HASH:cdrwa)"))
    };
    let Some((scheme, rest)) = s.split_once(':') else {
        return bad("no scheme");
    };
    let Some((id, perms)) = rest.rsplit_once(':') else {
        return bad("no permissions");
    };
    if scheme.is_empty() || id.is_empty() {
        return bad("empty scheme or id");
    }
    let mut p = Permission::NONE;
    if perms.eq_ignore_ascii_case("all") {
        p = Permission::ALL;
    } else {
        for c in perms.chars() {
            p = p | match c {
                'c' => Permission::CREATE,
                'r' => Permission::READ,
                'w' => Permission::WRITE,
                'd' => Permission::DELETE,
                'a' => Permission::ADMIN,
                _ => return bad("permissions are letters of crwda"),
            };
        }
    }
    if p == Permission::NONE {
        return bad("no permissions");
    }
    Ok(Acl::new(p, AuthId::new(scheme, id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acls_parse_as_zkcli_writes_them() {
        let a = parse_acl("world:anyone:r").unwrap();
        assert_eq!(
            (a.scheme(), a.id(), a.permission()),
            ("world", "anyone", Permission::READ)
        );
        let a = parse_acl("digest:bob:Hx7o/abc=:cdrwa").unwrap();
        assert_eq!(
            (a.scheme(), a.id(), a.permission()),
            ("digest", "bob:Hx7o/abc=", Permission::ALL)
        );
        let a = parse_acl("x509:CN=alice,O=Example\\, Inc.:cd").unwrap();
        assert_eq!(a.id(), "CN=alice,O=Example\\, Inc.");
        assert_eq!(a.permission(), Permission::CREATE | Permission::DELETE);
        assert_eq!(
            parse_acl("sasl:carol:all").unwrap().permission(),
            Permission::ALL
        );
        for bad in [
            "world",
            "world:anyone",
            "world:anyone:",
            ":anyone:r",
            "world::r",
            "world:anyone:rx",
        ] {
            assert!(parse_acl(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn credentials_are_checked() {
        assert_eq!(
            parse_auth("digest:alice:pw:with:colons").unwrap(),
            ("digest".to_string(), b"alice:pw:with:colons".to_vec())
        );
        for bad in ["digest", "digest:", "digest:alice", ":x"] {
            assert!(parse_auth(bad).is_err(), "{bad:?} accepted");
        }
        assert!(parse_sasl("digest-md5:carol:pw").is_ok());
        assert!(parse_sasl("gssapi").is_ok());
        assert!(parse_sasl("gssapi:zk").is_ok());
        for bad in ["digest-md5", "digest-md5:carol", "plain:a:b", ""] {
            assert!(parse_sasl(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn nodes_are_open_only_without_an_identity() {
        let anonymous = SecurityArgs::default().load().unwrap();
        assert!(!anonymous.authenticated());
        assert!(anonymous.node_acl(&[]).is_empty());
        let args = SecurityArgs {
            auth: Some("digest:alice:pw".into()),
            ..SecurityArgs::default()
        };
        let alice = args.load().unwrap();
        assert!(alice.authenticated());
        let extra = parse_acl("world:anyone:r").unwrap();
        let acl = alice.node_acl(std::slice::from_ref(&extra));
        assert_eq!(acl.len(), 2);
        assert_eq!(
            (acl[0].scheme(), acl[0].id(), acl[0].permission()),
            ("auth", "", Permission::ALL)
        );
        assert_eq!(acl[1], extra);
        let missing = SecurityArgs {
            tls: TlsArgs {
                tls_ca: Some("/nonexistent/ca.pem".into()),
                ..TlsArgs::default()
            },
            ..SecurityArgs::default()
        };
        let err = missing.load().unwrap_err().to_string();
        assert!(
            err.contains("cannot read --tls-ca /nonexistent/ca.pem"),
            "{err}"
        );
    }
}
