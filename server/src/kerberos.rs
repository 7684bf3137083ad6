//! Kerberos principal names and the settings around them, as ZooKeeper 3.9 reads them:
//!
//! - `KerberosName` (ZooKeeper's `server.auth.KerberosName`): `service[/host]@REALM`, and the
//!   `zookeeper.security.auth_to_local` rules (Hadoop's syntax: `RULE:[n:fmt](match)s/from/to/g`
//!   and `DEFAULT`) that turn a principal into a short name;
//! - `NameRules`: what `SaslServerCallbackHandler` makes of an authenticated principal, the id a
//!   connection gains as `sasl:<id>`: the short name, then `/host` unless
//!   `zookeeper.kerberos.removeHostFromPrincipal=true`, then `@REALM` unless
//!   `zookeeper.kerberos.removeRealmFromPrincipal=true`;
//! - `Krb5Login`: the options of a JAAS section's `com.sun.security.auth.module.Krb5LoginModule`
//!   (keyTab, principal, ...), and `ProcessKerberos`, which hands the key tables to MIT Kerberos.
//!
//! Patterns in the rules are Java regular expressions; the `regex` crate reads the ones rules are
//! written with (classes, `.*`, anchors, groups). Look-around and back-references, which it
//! lacks, refuse the start.

use std::path::PathBuf;

use regex::Regex;

/// The JAAS login module ZooKeeper's Kerberos sections use.
pub const KRB5_LOGIN_MODULE: &str = "com.sun.security.auth.module.Krb5LoginModule";

/// A principal split as `KerberosName` splits it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KerberosName {
    pub service: String,
    pub host: Option<String>,
    pub realm: Option<String>,
}

impl KerberosName {
    /// `([^/@]*)(/([^/@]*))?@([^/@]*)`; a name without `@` is a simple name; a name with `@`
    /// that does not match (two `/`, two `@`) is malformed.
    pub fn parse(name: &str) -> Result<KerberosName, String> {
        let malformed = || format!("Malformed Kerberos name: {name}");
        let Some((left, realm)) = name.rsplit_once('@') else {
            return Ok(KerberosName {
                service: name.to_string(),
                host: None,
                realm: None,
            });
        };
        if realm.contains('/') || left.contains('@') {
            return Err(malformed());
        }
        let (service, host) = match left.split_once('/') {
            Some((_, h)) if h.contains('/') => return Err(malformed()),
            Some((s, h)) => (s, Some(h.to_string())),
            None => (left, None),
        };
        Ok(KerberosName {
            service: service.to_string(),
            host,
            realm: Some(realm.to_string()),
        })
    }
}

impl std::fmt::Display for KerberosName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.service)?;
        if let Some(h) = &self.host {
            write!(f, "/{h}")?;
        }
        if let Some(r) = &self.realm {
            write!(f, "@{r}")?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
enum Rule {
    Default,
    Rule {
        components: usize,
        format: String,
        matches: Option<Regex>,
        /// The `s/from/to/` substitution, `to` already in the `regex` crate's replacement syntax.
        subst: Option<(Regex, String)>,
        global: bool,
        text: String,
    },
}

/// `zookeeper.security.auth_to_local`: the rules in order, and the default realm `DEFAULT` maps.
#[derive(Debug, Clone)]
pub struct AuthToLocal {
    rules: Vec<Rule>,
    /// `None`: krb5.conf's, read when first needed (`gssapi::default_realm`).
    default_realm: Option<String>,
}

impl PartialEq for AuthToLocal {
    fn eq(&self, other: &AuthToLocal) -> bool {
        self.to_string() == other.to_string() && self.default_realm == other.default_realm
    }
}
impl Eq for AuthToLocal {}

impl std::fmt::Display for AuthToLocal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let texts: Vec<&str> = self
            .rules
            .iter()
            .map(|r| match r {
                Rule::Default => "DEFAULT",
                Rule::Rule { text, .. } => text.as_str(),
            })
            .collect();
        f.write_str(&texts.join(" "))
    }
}

impl AuthToLocal {
    /// `KerberosName.parseRules`: rules separated by white space (or nothing), each `DEFAULT` or
    /// `RULE:[n:format](match)s/from/to/g` with the parts after `]` optional.
    pub fn parse(rules: &str, default_realm: Option<&str>) -> Result<AuthToLocal, String> {
        let parser = Regex::new(
            r"^\s*((DEFAULT)|(RULE:\[(\d*):([^\]]*)](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?))",
        )
        .expect("the rule grammar compiles");
        let mut out = Vec::new();
        let mut rest = rules.trim();
        while !rest.is_empty() {
            let Some(c) = parser.captures(rest) else {
                return Err(format!("Invalid rule: {rest}"));
            };
            if c.get(2).is_some() {
                out.push(Rule::Default);
            } else {
                let n = &c[4];
                let components = n
                    .parse::<usize>()
                    .map_err(|_| format!("Invalid rule: component count {n:?} in {}", &c[1]))?;
                let java = |p: &str| {
                    Regex::new(p)
                        .map_err(|e| format!("auth_to_local rule {}: pattern {p:?}: {e}", &c[1]))
                };
                let matches = match c.get(7) {
                    // Matcher.matches(): the whole string.
                    Some(m) => Some(java(&format!("^(?:{})$", m.as_str()))?),
                    None => None,
                };
                let subst = match (c.get(9), c.get(10)) {
                    (Some(from), Some(to)) => {
                        Some((java(from.as_str())?, java_replacement(to.as_str())?))
                    }
                    _ => None,
                };
                out.push(Rule::Rule {
                    components,
                    format: c[5].to_string(),
                    matches,
                    subst,
                    global: c.get(11).is_some(),
                    text: c[1].to_string(),
                });
            }
            rest = &rest[c.get(0).unwrap().end()..];
        }
        Ok(AuthToLocal {
            rules: out,
            default_realm: default_realm.map(str::to_string),
        })
    }

    /// `KerberosName.getShortName`: the first rule that applies, or an error when none does.
    pub fn short_name(&self, name: &KerberosName) -> Result<String, String> {
        let Some(realm) = &name.realm else {
            if name.host.is_none() {
                return Ok(name.service.clone());
            }
            return Err(format!("No rules applied to {name}"));
        };
        let mut params = vec![realm.as_str(), name.service.as_str()];
        if let Some(h) = &name.host {
            params.push(h);
        }
        for rule in &self.rules {
            if let Some(short) = self.apply(rule, &params)? {
                if short.contains(['/', '@']) {
                    return Err(format!(
                        "Non-simple name {short} after auth_to_local rule {}",
                        match rule {
                            Rule::Default => "DEFAULT",
                            Rule::Rule { text, .. } => text,
                        }
                    ));
                }
                return Ok(short);
            }
        }
        Err(format!("No rules applied to {name}"))
    }

    fn apply(&self, rule: &Rule, params: &[&str]) -> Result<Option<String>, String> {
        match rule {
            Rule::Default => {
                let default = match &self.default_realm {
                    Some(r) => r.clone(),
                    None => crate::gssapi::default_realm(),
                };
                Ok((params[0] == default).then(|| params[1].to_string()))
            }
            Rule::Rule {
                components,
                format,
                matches,
                subst,
                global,
                ..
            } => {
                if params.len() - 1 != *components {
                    return Ok(None);
                }
                let base = replace_parameters(format, params)?;
                if matches.as_ref().is_some_and(|m| !m.is_match(&base)) {
                    return Ok(None);
                }
                Ok(Some(match subst {
                    None => base,
                    Some((from, to)) if *global => from.replace_all(&base, to.as_str()).into(),
                    Some((from, to)) => from.replace(&base, to.as_str()).into(),
                }))
            }
        }
    }
}

/// `Rule.replaceParameters`: `$n` is the n-th parameter (`$0` the realm, `$1` the first
/// component); anything else is copied. A `$` without digits, or an index past the end, is an
/// error.
fn replace_parameters(format: &str, params: &[&str]) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = format;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let n: usize = after[..digits]
            .parse()
            .map_err(|_| format!("bad format in username mapping in {format:?}"))?;
        let p = params.get(n).ok_or_else(|| {
            format!(
                "index {n} from {format} is outside of the valid range 0 to {}",
                params.len() - 1
            )
        })?;
        out.push_str(p);
        rest = &after[digits..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Java's replacement syntax (`$1` a group, `\x` a literal x) in the `regex` crate's (`${1}`,
/// `$$`).
fn java_replacement(to: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = to.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('$') => out.push_str("$$"),
                Some(x) => out.push(x),
                None => return Err(format!("character to be escaped is missing in {to:?}")),
            },
            '$' => {
                let mut n = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    n.push(*d);
                    chars.next();
                }
                if n.is_empty() {
                    return Err(format!("illegal group reference in {to:?}"));
                }
                out.push_str(&format!("${{{n}}}"));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// How an authenticated principal becomes the id of `sasl:<id>`
/// (`SaslServerCallbackHandler.handleAuthorizeCallback`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameRules {
    pub auth_to_local: AuthToLocal,
    /// `zookeeper.kerberos.removeHostFromPrincipal`.
    pub remove_host: bool,
    /// `zookeeper.kerberos.removeRealmFromPrincipal`.
    pub remove_realm: bool,
}

impl NameRules {
    /// The short name, then `/host` and `@REALM` unless removed. When no rule applies ZooKeeper
    /// logs the error and keeps the authorization id the client asked for, which a client could
    /// set to anyone's name; paddock keeps the authenticated principal instead, which is what
    /// ZooKeeper's own client asks for (and pure-sasl, which asks for nothing), so honest clients
    /// get the same id from both.
    pub fn authorized_id(&self, principal: &str) -> Result<String, String> {
        let name = KerberosName::parse(principal)?;
        let mut id = self.auth_to_local.short_name(&name)?;
        if let (false, Some(h)) = (self.remove_host, &name.host) {
            id.push('/');
            id.push_str(h);
        }
        if let (false, Some(r)) = (self.remove_realm, &name.realm) {
            id.push('@');
            id.push_str(r);
        }
        Ok(id)
    }
}

/// The options of a `Krb5LoginModule` entry that paddock uses. `useKeyTab`, `storeKey`,
/// `isInitiator`, `doNotPrompt` and `debug` change nothing here: the key always comes from the
/// key table (there is no prompt), and a server entry only ever accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Krb5Login {
    pub keytab: Option<PathBuf>,
    /// `principal`; `*` (accept for any key in the table) is kept as written.
    pub principal: Option<String>,
    pub use_ticket_cache: bool,
    pub ticket_cache: Option<PathBuf>,
}

impl Krb5Login {
    pub fn from_options(
        options: &std::collections::BTreeMap<String, String>,
    ) -> Result<Krb5Login, String> {
        let flag = |k: &str| {
            options
                .get(k)
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        };
        let login = Krb5Login {
            keytab: options
                .get("keyTab")
                .map(|k| PathBuf::from(k.strip_prefix("file:").unwrap_or(k))),
            principal: options.get("principal").cloned(),
            use_ticket_cache: flag("useTicketCache"),
            ticket_cache: options.get("ticketCache").map(PathBuf::from),
        };
        if login.keytab.is_none() && !login.use_ticket_cache {
            return Err(
                "Krb5LoginModule needs keyTab=\"...\" (paddock never prompts for a password), \
                 or useTicketCache=true"
                    .into(),
            );
        }
        if options.get("useKeyTab").is_some_and(|v| v != "true") && login.keytab.is_some() {
            return Err("Krb5LoginModule has keyTab but useKeyTab is not true".into());
        }
        Ok(login)
    }
}

/// What MIT Kerberos must be told through the environment, from the JAAS sections: the
/// acceptor's key table (`KRB5_KTNAME`, the `Server` and `QuorumServer` sections' keyTab), the
/// key table a member gets its tickets with (`KRB5_CLIENT_KTNAME`, the `QuorumLearner`
/// section's), a ticket cache of the process's own (`KRB5CCNAME=MEMORY:`, unless the learner
/// section names one), and `java.security.krb5.conf` (`KRB5_CONFIG`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ProcessKerberos {
    pub vars: Vec<(&'static str, String)>,
    /// Principals this server accepts for, checked against the key table once set.
    pub acceptors: Vec<Option<String>>,
}

impl ProcessKerberos {
    /// Reads the configuration; errors name what disagrees. Empty when nothing uses Kerberos.
    pub fn from_config(cfg: &crate::config::Config) -> Result<ProcessKerberos, String> {
        let quorum = crate::quorum_auth::QuorumSasl::load(
            &cfg.quorum_security.sasl,
            cfg.jaas_file.as_deref(),
        )?;
        let client_port = cfg.sasl.as_ref().and_then(|s| s.kerberos.as_ref());
        let (learner, quorum_server) = match quorum.as_ref().and_then(|q| q.kerberos_logins()) {
            Some((l, s)) => (Some(l), Some(s)),
            None => (None, None),
        };
        let mut out = ProcessKerberos::default();
        if client_port.is_none() && learner.is_none() {
            return Ok(out);
        }
        if let Some(conf) = &cfg.krb5_conf {
            out.vars.push(("KRB5_CONFIG", conf.display().to_string()));
        }
        let acceptor_tables: Vec<&PathBuf> = [client_port.map(|k| &k.login), quorum_server]
            .into_iter()
            .flatten()
            .filter_map(|l| l.keytab.as_ref())
            .collect();
        if let Some(first) = acceptor_tables.first() {
            if let Some(other) = acceptor_tables.iter().find(|t| *t != first) {
                return Err(format!(
                    "the JAAS Server and QuorumServer sections name different key tables ({} and {}); \
                     MIT Kerberos gives a process one acceptor key table: put both principals' keys in one \
                     (ktutil) and name it in both sections",
                    first.display(),
                    other.display()
                ));
            }
            out.vars
                .push(("KRB5_KTNAME", format!("FILE:{}", first.display())));
        }
        if let Some(l) = learner {
            if let Some(t) = &l.keytab {
                out.vars
                    .push(("KRB5_CLIENT_KTNAME", format!("FILE:{}", t.display())));
            }
            match (&l.ticket_cache, l.use_ticket_cache) {
                (Some(c), true) => out
                    .vars
                    .push(("KRB5CCNAME", format!("FILE:{}", c.display()))),
                (None, true) => {}
                _ => out.vars.push(("KRB5CCNAME", "MEMORY:paddock".into())),
            }
        }
        out.acceptors
            .extend(client_port.map(|k| k.login.principal.clone()));
        out.acceptors
            .extend(quorum_server.map(|l| l.principal.clone()));
        Ok(out)
    }

    /// Sets the variables. Call it before any thread starts (`main` does, before the runtime),
    /// as the environment is not safe to change while other threads may read it.
    pub fn apply(&self) {
        for (k, v) in &self.vars {
            tracing::info!(variable = k, value = %v, "Kerberos");
            std::env::set_var(k, v);
        }
    }

    /// Whether the key table holds every acceptor principal's key.
    pub fn check(&self) -> Result<(), String> {
        for p in &self.acceptors {
            crate::gssapi::check_acceptor(p.as_deref())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(r: &str) -> AuthToLocal {
        AuthToLocal::parse(r, Some("EXAMPLE.COM")).unwrap()
    }
    fn short(r: &AuthToLocal, name: &str) -> Result<String, String> {
        r.short_name(&KerberosName::parse(name).unwrap())
    }

    #[test]
    fn names_split_as_kerberos_name_does() {
        let n = KerberosName::parse("zookeeper/host.example.com@EXAMPLE.COM").unwrap();
        assert_eq!(
            (n.service.as_str(), n.host.as_deref(), n.realm.as_deref()),
            ("zookeeper", Some("host.example.com"), Some("EXAMPLE.COM"))
        );
        assert_eq!(n.to_string(), "zookeeper/host.example.com@EXAMPLE.COM");
        let simple = KerberosName::parse("bob").unwrap();
        assert_eq!((simple.host, simple.realm), (None, None));
        assert!(KerberosName::parse("a/b/c@R").is_err());
        assert!(KerberosName::parse("a@b@R").is_err());
        assert_eq!(KerberosName::parse("@R").unwrap().service, "");
    }

    #[test]
    fn default_maps_the_default_realm_only() {
        let r = rules("DEFAULT");
        assert_eq!(short(&r, "alice@EXAMPLE.COM").unwrap(), "alice");
        assert_eq!(short(&r, "zookeeper/h@EXAMPLE.COM").unwrap(), "zookeeper");
        assert_eq!(short(&r, "bob").unwrap(), "bob");
        assert_eq!(
            short(&r, "alice@OTHER.ORG").unwrap_err(),
            "No rules applied to alice@OTHER.ORG"
        );
    }

    /// Hadoop's documented examples, as ZooKeeper's KerberosNameTest has them.
    #[test]
    fn rules_with_format_match_and_substitution() {
        let r = rules(
            "RULE:[1:$1@$0](.*@FOO.COM)s/@.*//\n\
             RULE:[2:$1](johndoe)s/^.*$/guest/\n\
             RULE:[2:$1;$2](^.*;admin$)s/;admin$//\n\
             RULE:[2:$2](root)\n\
             DEFAULT",
        );
        assert_eq!(short(&r, "john@FOO.COM").unwrap(), "john");
        assert_eq!(short(&r, "johndoe/zoo@FOO.COM").unwrap(), "guest");
        assert_eq!(short(&r, "joe/admin@FOO.COM").unwrap(), "joe");
        assert_eq!(short(&r, "joe/root@FOO.COM").unwrap(), "root");
        assert_eq!(short(&r, "joe@EXAMPLE.COM").unwrap(), "joe");
        assert!(short(&r, "joe/other@FOO.COM").is_err());
        let g = rules("RULE:[1:$1](a.*)s/a/b/g");
        assert_eq!(short(&g, "aaa@X").unwrap(), "bbb");
        let first = rules("RULE:[1:$1](a.*)s/a/b/");
        assert_eq!(short(&first, "aaa@X").unwrap(), "baa");
        let groups = rules("RULE:[2:$1-$2](.*)s/(.*)-(.*)/$2_$1/");
        assert_eq!(short(&groups, "svc/h1@X").unwrap(), "h1_svc");
    }

    #[test]
    fn bad_rules_and_non_simple_results_are_errors() {
        assert!(AuthToLocal::parse("RULE:[x:$1]", None).is_err());
        assert!(AuthToLocal::parse("NOPE", None).is_err());
        let r = rules("RULE:[1:$1@$0]");
        assert_eq!(
            short(&r, "a@X").unwrap_err(),
            "Non-simple name a@X after auth_to_local rule RULE:[1:$1@$0]"
        );
        let out_of_range = rules("RULE:[1:$2]");
        assert!(short(&out_of_range, "a@X").unwrap_err().contains("outside"));
        assert_eq!(
            rules(" DEFAULT RULE:[1:$1] ").to_string(),
            "DEFAULT RULE:[1:$1]"
        );
    }

    #[test]
    fn the_authorized_id_keeps_host_and_realm_unless_removed() {
        let mut n = NameRules {
            auth_to_local: rules("DEFAULT"),
            remove_host: false,
            remove_realm: false,
        };
        assert_eq!(
            n.authorized_id("client@EXAMPLE.COM").unwrap(),
            "client@EXAMPLE.COM"
        );
        assert_eq!(
            n.authorized_id("zkcli/localhost@EXAMPLE.COM").unwrap(),
            "zkcli/localhost@EXAMPLE.COM"
        );
        n.remove_host = true;
        assert_eq!(
            n.authorized_id("zkcli/localhost@EXAMPLE.COM").unwrap(),
            "zkcli@EXAMPLE.COM"
        );
        n.remove_realm = true;
        assert_eq!(
            n.authorized_id("zkcli/localhost@EXAMPLE.COM").unwrap(),
            "zkcli"
        );
        assert!(n.authorized_id("eve@ELSEWHERE").is_err());
        n.auth_to_local = rules("RULE:[1:$1@$0](.*@ELSEWHERE)s/@.*// DEFAULT");
        assert_eq!(n.authorized_id("eve@ELSEWHERE").unwrap(), "eve");
    }

    #[test]
    fn krb5_login_options() {
        let opts = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let l = Krb5Login::from_options(&opts(&[
            ("useKeyTab", "true"),
            ("keyTab", "/etc/zk.keytab"),
            ("principal", "zookeeper/localhost@R"),
            ("storeKey", "true"),
        ]))
        .unwrap();
        assert_eq!(l.keytab, Some(PathBuf::from("/etc/zk.keytab")));
        assert_eq!(l.principal.as_deref(), Some("zookeeper/localhost@R"));
        assert!(Krb5Login::from_options(&opts(&[("principal", "p")])).is_err());
        assert!(
            Krb5Login::from_options(&opts(&[("useKeyTab", "false"), ("keyTab", "/k")])).is_err()
        );
    }
}
