//! ACL checks (ZooKeeper's `ZooKeeperServer.checkACL`), authentication ids (its
//! `DigestAuthenticationProvider`, `IPAuthenticationProvider` and `SASLAuthenticationProvider`)
//! and ACL fix-up (`PrepRequestProcessor.fixupACL`), plus the interned ACL table nodes point
//! into (ZooKeeper's `ReferenceCountedACLCache`): half a million znodes usually share a handful
//! of ACL lists, so each node stores a `u32`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::net::Ipv6Addr;
use std::sync::Arc;

use base64::Engine;
use sha1::{Digest, Sha1};
use wire::jute::{Record, Writer};
use wire::ops::who_am_i::ClientInfo;
use wire::{perms, Acl, ErrorCode, Id};

use crate::config::TreeConfig;

/// May a holder of `auth` do `needed` to a node carrying `acl`? (`ZooKeeperServer.checkACL`: an
/// empty list or a `super` id passes; otherwise an entry granting `needed` must match an id.)
///
/// `sasl` ids match as ZooKeeper's `SASLAuthenticationProvider.matches`: the same name, or the
/// authenticated name `super` (which matches every sasl entry), or any name at all for the entry
/// naming `any_sasl_user_is` (`zookeeper.letAnySaslUserDoX`).
pub fn check_acl(acl: &[Acl], needed: i32, auth: &[Id], any_sasl_user_is: Option<&str>) -> bool {
    if acl.is_empty() || auth.iter().any(|id| id.scheme == "super") {
        return true;
    }
    acl.iter().filter(|a| a.perms & needed != 0).any(|a| {
        if a.id.scheme == "world" && a.id.id == "anyone" {
            return true;
        }
        auth.iter()
            .filter(|id| id.scheme == a.id.scheme)
            .any(|id| match a.id.scheme.as_str() {
                "ip" => ip_matches(&id.id, &a.id.id),
                "sasl" => {
                    id.id == a.id.id || id.id == "super" || any_sasl_user_is == Some(&a.id.id)
                }
                _ => id.id == a.id.id,
            })
    })
}

/// Handles an auth packet. digest: the connection gains `digest:user:base64(sha1(user:pw))`,
/// preceded by `super:` when that id equals the configured super digest (ZooKeeper adds the
/// super id first). ip: nothing here, the server adds the remote address itself.
pub fn authenticate(
    scheme: &str,
    auth: &[u8],
    super_digest: Option<&str>,
) -> Result<Vec<Id>, ErrorCode> {
    match scheme {
        "digest" => {
            // Java decodes the bytes with replacement, so invalid UTF-8 still authenticates.
            let id = digest_id(&String::from_utf8_lossy(auth));
            let mut ids = Vec::with_capacity(2);
            if super_digest == Some(id.as_str()) {
                ids.push(Id::new("super", ""));
            }
            ids.push(Id::new("digest", &id));
            Ok(ids)
        }
        "ip" => Ok(Vec::new()),
        _ => Err(ErrorCode::AuthFailed),
    }
}

/// `DigestAuthenticationProvider.generateDigest`: `user:base64(sha1("user:password"))`.
pub fn digest_id(user_password: &str) -> String {
    let user = user_password.split(':').next().unwrap_or("");
    let hash = Sha1::digest(user_password.as_bytes());
    format!(
        "{user}:{}",
        base64::engine::general_purpose::STANDARD.encode(hash)
    )
}

/// whoAmI's view of the connection's ids: digest shows the user name, ip the address, and a
/// scheme without a provider (super) the empty string.
pub fn who_am_i(auth: &[Id]) -> Vec<ClientInfo> {
    auth.iter()
        .map(|id| ClientInfo {
            auth_scheme: id.scheme.clone(),
            user: match id.scheme.as_str() {
                "digest" => id.id.split(':').next().unwrap_or("").to_owned(),
                "super" => String::new(),
                _ => id.id.clone(),
            },
        })
        .collect()
}

/// Schemes whose ids count as "authenticated" for `auth` expansion (not ip).
fn is_authenticated_scheme(scheme: &str) -> bool {
    matches!(scheme, "digest" | "sasl" | "x509")
}

/// `PrepRequestProcessor.fixupACL`, on create and setACL: dedupe (first occurrence wins),
/// reject empty lists, expand `auth`, validate every other id against its scheme. A list that
/// needs none of that (the usual one: `world:anyone`, or valid ids without `auth` or repeats)
/// is returned as given, so that a create copies no id strings for it.
pub fn fixup_acl<'a>(acl: &'a [Acl], auth: &[Id]) -> Result<Cow<'a, [Acl]>, ErrorCode> {
    let as_given = !acl.is_empty()
        && acl
            .iter()
            .enumerate()
            .all(|(i, a)| a.id.scheme != "auth" && !acl[..i].contains(a));
    if as_given {
        return if acl.iter().all(|a| stands_as_given(&a.id)) {
            Ok(Cow::Borrowed(acl))
        } else {
            Err(ErrorCode::InvalidAcl)
        };
    }
    let mut uniq: Vec<&Acl> = Vec::with_capacity(acl.len());
    for a in acl {
        if !uniq.contains(&a) {
            uniq.push(a);
        }
    }
    if uniq.is_empty() {
        return Err(ErrorCode::InvalidAcl);
    }
    let mut out = Vec::with_capacity(uniq.len());
    for a in uniq {
        if a.id.scheme == "auth" {
            let before = out.len();
            for cid in auth
                .iter()
                .filter(|cid| is_authenticated_scheme(&cid.scheme))
            {
                out.push(Acl {
                    perms: a.perms,
                    id: cid.clone(),
                });
            }
            if out.len() == before {
                return Err(ErrorCode::InvalidAcl);
            }
        } else if stands_as_given(&a.id) {
            out.push(a.clone());
        } else {
            return Err(ErrorCode::InvalidAcl);
        }
    }
    Ok(Cow::Owned(out))
}

/// An id a create or setACL keeps unchanged: `world:anyone`, or a valid id of its scheme (never
/// `auth`, which is expanded instead).
fn stands_as_given(id: &Id) -> bool {
    (id.scheme == "world" && id.id == "anyone") || id_is_valid(&id.scheme, &id.id)
}

fn id_is_valid(scheme: &str, id: &str) -> bool {
    match scheme {
        // Java's `id.split(":").length == 2`: trailing empty parts are dropped first.
        "digest" => {
            let mut parts: Vec<&str> = id.split(':').collect();
            while parts.last() == Some(&"") {
                parts.pop();
            }
            parts.len() == 2
        }
        "ip" => parse_ip_acl(id).is_some(),
        "sasl" => kerberos_name_is_valid(id),
        "x509" => true,
        _ => false,
    }
}

/// `SASLAuthenticationProvider.isValid`: the id must parse as a Kerberos principal
/// (`KerberosName`): a name without `@` is a plain service name; one with `@` must be
/// `name[/host]@realm`, so exactly one `@`, at most one `/` before it and none after.
fn kerberos_name_is_valid(id: &str) -> bool {
    match id.split_once('@') {
        None => true,
        Some((principal, realm)) => {
            !realm.contains(['@', '/']) && principal.matches('/').count() <= 1
        }
    }
}

/// getACL without ADMIN: each digest id's hash becomes `x`.
pub fn mask_digests(acl: &[Acl]) -> Vec<Acl> {
    acl.iter()
        .map(|a| {
            let mut a = a.clone();
            if a.id.scheme == "digest" {
                if let Some(i) = a.id.id.find(':') {
                    a.id.id.truncate(i);
                    a.id.id.push_str(":x");
                }
            }
            a
        })
        .collect()
}

/// An address as bytes, IPv4 (4) or IPv6 (16). IPv4 octets are parsed like Java's
/// `Integer.parseInt`, which accepts leading zeros.
fn parse_addr(s: &str) -> Option<Vec<u8>> {
    if s.contains(':') {
        return s.parse::<Ipv6Addr>().ok().map(|a| a.octets().to_vec());
    }
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    parts
        .iter()
        .map(|p| match p.parse::<i32>() {
            Ok(v) if (0..=255).contains(&v) => Some(v as u8),
            _ => None,
        })
        .collect()
}

/// `addr[/bits]` with bits within the address length.
fn parse_ip_acl(s: &str) -> Option<(Vec<u8>, usize)> {
    let (addr, bits) = match s.split_once('/') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let addr = parse_addr(addr)?;
    let bits = match bits {
        None => addr.len() * 8,
        Some(b) => {
            let b: i32 = b.parse().ok()?;
            if b < 0 || b as usize > addr.len() * 8 {
                return None;
            }
            b as usize
        }
    };
    Some((addr, bits))
}

/// `IPAuthenticationProvider.matches`: both addresses masked to the ACL's prefix length.
fn ip_matches(remote: &str, acl_expr: &str) -> bool {
    let Some((acl_addr, bits)) = parse_ip_acl(acl_expr) else {
        return false;
    };
    let Some(remote) = parse_addr(remote) else {
        return false;
    };
    if remote.len() != acl_addr.len() {
        return false;
    }
    (0..acl_addr.len()).all(|i| {
        let take = bits.saturating_sub(i * 8).min(8);
        let mask: u8 = if take == 0 { 0 } else { 0xffu8 << (8 - take) };
        acl_addr[i] & mask == remote[i] & mask
    })
}

/// Interned, reference-counted ACL lists. Indices are internal: nothing observable (replies,
/// digest, snapshot bytes) depends on them, so replicas may number lists differently.
#[derive(Debug, Clone, Default)]
pub struct AclTable {
    /// Each list is shared (`Arc`): a change record or a snapshot view holds it without a copy.
    lists: Vec<Option<(Arc<[Acl]>, u32)>>,
    /// Each slot's `list_hash`, computed once when the list is interned: every node's digest
    /// hash covers its ACL, and nearly all nodes share one list.
    hashes: Vec<u64>,
    index: BTreeMap<Vec<u8>, u32>,
    free: Vec<u32>,
    /// The list interned last: nearly every node of a tree has the same ACL, and comparing with
    /// it first spares encoding a key for the index on every create.
    last: u32,
}

/// An ACL list's content hash for the digest (never its internal index): each entry's scheme,
/// then its id, chained through XXH3's seed with the permissions and the scheme's length.
pub(crate) fn list_hash(acl: &[Acl]) -> u64 {
    use xxhash_rust::xxh3::xxh3_64_with_seed as xxh3;
    let mut h = acl.len() as u64;
    for a in acl {
        h = xxh3(a.id.scheme.as_bytes(), h ^ u64::from(a.perms as u32));
        h = xxh3(a.id.id.as_bytes(), h ^ a.id.scheme.len() as u64);
    }
    h
}

fn key_of(acl: &[Acl]) -> Vec<u8> {
    let mut w = Writer::new();
    w.write_vec(acl, |w, a| a.encode(w));
    w.into_inner()
}

impl AclTable {
    /// Takes a reference to `acl`, interning it if new.
    pub fn intern(&mut self, acl: &[Acl]) -> u32 {
        if let Some(Some((list, rc))) = self.lists.get_mut(self.last as usize) {
            if **list == *acl {
                *rc += 1;
                return self.last;
            }
        }
        let key = key_of(acl);
        if let Some(&i) = self.index.get(&key) {
            if let Some((_, rc)) = self.lists[i as usize].as_mut() {
                *rc += 1;
            }
            self.last = i;
            return i;
        }
        let entry = Some((Arc::from(acl), 1));
        let hash = list_hash(acl);
        let i = match self.free.pop() {
            Some(i) => {
                self.lists[i as usize] = entry;
                self.hashes[i as usize] = hash;
                i
            }
            None => {
                self.lists.push(entry);
                self.hashes.push(hash);
                (self.lists.len() - 1) as u32
            }
        };
        self.index.insert(key, i);
        self.last = i;
        i
    }

    pub fn add_ref(&mut self, i: u32) {
        if let Some(Some((_, rc))) = self.lists.get_mut(i as usize) {
            *rc += 1;
        }
    }

    /// Drops one reference; the list is forgotten when none remain.
    pub fn release(&mut self, i: u32) {
        let gone = match self.lists.get_mut(i as usize) {
            Some(Some((_, rc))) => {
                *rc -= 1;
                *rc == 0
            }
            _ => false,
        };
        if gone {
            if let Some((acl, _)) = self.lists[i as usize].take() {
                self.index.remove(&key_of(&acl));
            }
            self.free.push(i);
        }
    }

    pub fn get(&self, i: u32) -> &[Acl] {
        self.shared(i)
    }

    /// The list at `i`, shared rather than copied.
    pub fn shared(&self, i: u32) -> &Arc<[Acl]> {
        match self.lists.get(i as usize) {
            Some(Some((acl, _))) => acl,
            _ => panic!("ACL index {i} is not interned: the tree is corrupt"),
        }
    }

    /// The list at `i`'s `list_hash`, its share of each node's digest hash.
    pub(crate) fn hash(&self, i: u32) -> u64 {
        match self.lists.get(i as usize) {
            Some(Some(_)) => self.hashes[i as usize],
            _ => panic!("ACL index {i} is not interned: the tree is corrupt"),
        }
    }

    /// Slots in the table, used or free: every interned index is below this.
    pub fn slots(&self) -> usize {
        self.lists.len()
    }

    pub fn live(&self) -> usize {
        self.lists.iter().filter(|l| l.is_some()).count()
    }
}

/// True if `needed` is granted under the tree's settings (`skip_acl`, `let_any_sasl_user_do_x`):
/// the one check for the tree's own ops and for the server's watch delivery.
pub fn allowed(cfg: &TreeConfig, acl: &[Acl], needed: i32, auth: &[Id]) -> bool {
    cfg.skip_acl || check_acl(acl, needed, auth, cfg.let_any_sasl_user_do_x.as_deref())
}

pub(crate) const READ_OR_ADMIN: i32 = perms::READ | perms::ADMIN;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_slot_carries_its_new_lists_hash() {
        let a = [Acl::new(31, "world", "anyone")];
        let b = [
            Acl::new(1, "digest", "u:h"),
            Acl::new(31, "world", "anyone"),
        ];
        let mut t = AclTable::default();
        let i = t.intern(&a);
        assert_eq!(t.hash(i), list_hash(&a));
        t.release(i);
        let j = t.intern(&b);
        assert_eq!(j, i, "the freed slot is reused");
        assert_eq!(t.hash(j), list_hash(&b));
        assert_ne!(list_hash(&a), list_hash(&b));
        // Order is content: the same entries the other way round hash differently.
        assert_ne!(list_hash(&b), list_hash(&[b[1].clone(), b[0].clone()]));
    }

    #[test]
    fn fixup_returns_a_plain_list_as_given_and_fixes_the_rest() {
        let world = Acl::new(31, "world", "anyone");
        let digest = Acl::new(1, "digest", "u:h");
        let plain = [world.clone(), digest.clone()];
        assert!(matches!(fixup_acl(&plain, &[]), Ok(Cow::Borrowed(l)) if l == plain));
        // Repeats go (the first wins), `auth` becomes the session's authenticated ids.
        let repeated = [world.clone(), world.clone(), digest.clone()];
        assert!(matches!(fixup_acl(&repeated, &[]), Ok(Cow::Owned(l)) if l == plain));
        let auth = [Id::new("ip", "1.2.3.4"), Id::new("digest", "u:h")];
        let with_auth = [Acl::new(1, "auth", ""), world.clone()];
        assert_eq!(
            fixup_acl(&with_auth, &auth).map(Cow::into_owned),
            Ok(vec![digest.clone(), world.clone()])
        );
        // Every way to be invalid, on both paths.
        for bad in [
            vec![],
            vec![Acl::new(1, "auth", "")],
            vec![Acl::new(1, "digest", "no-colon")],
            vec![world.clone(), Acl::new(1, "ip", "not-an-ip")],
            vec![world.clone(), world.clone(), Acl::new(1, "nope", "x")],
        ] {
            assert_eq!(fixup_acl(&bad, &[]), Err(ErrorCode::InvalidAcl), "{bad:?}");
        }
    }

    #[test]
    fn digest_id_hashes_user_and_password_together() {
        // The superDigest the compat notes pass to ZooKeeper is the digest of super:test.
        assert_eq!(
            digest_id("super:test"),
            "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
        );
        assert_eq!(digest_id("nocolon"), "nocolon:Ra+cHr2ZoHvBjtNArFGNGlVie4g=");
    }

    #[test]
    fn sasl_entries_match_the_same_name_the_super_name_or_any_name_when_let_do_x() {
        let acl = vec![Acl::new(perms::READ, "sasl", "alice")];
        let as_user = |name: &str| vec![Id::new("sasl", name)];
        assert!(check_acl(&acl, perms::READ, &as_user("alice"), None));
        assert!(!check_acl(&acl, perms::READ, &as_user("bob"), None));
        assert!(!check_acl(&acl, perms::WRITE, &as_user("alice"), None));
        // A SASL user named super matches every sasl entry (not other schemes).
        assert!(check_acl(&acl, perms::READ, &as_user("super"), None));
        let digest_acl = vec![Acl::new(perms::READ, "digest", "super:x")];
        assert!(!check_acl(
            &digest_acl,
            perms::READ,
            &as_user("super"),
            None
        ));
        // letAnySaslUserDoX=alice: any SASL user matches sasl:alice, nobody else does.
        assert!(check_acl(&acl, perms::READ, &as_user("bob"), Some("alice")));
        assert!(!check_acl(
            &acl,
            perms::READ,
            &as_user("bob"),
            Some("carol")
        ));
        assert!(!check_acl(
            &acl,
            perms::READ,
            &[Id::new("digest", "bob:h")],
            Some("alice")
        ));
    }

    #[test]
    fn sasl_ids_must_be_kerberos_principals() {
        // Found by compat-tests/b2b: ZooKeeper 3.9.5 answers InvalidACL for `sasl:a@b@c`.
        for ok in ["u1", "", "a/b", "a/b/c", "a@R", "a/b@R", "@", "/@"] {
            assert!(id_is_valid("sasl", ok), "{ok:?} should be valid");
        }
        for bad in ["a@b@c", "a/b/c@R", "a@R/x", "@@"] {
            assert!(!id_is_valid("sasl", bad), "{bad:?} should be invalid");
            let acl = vec![Acl::new(perms::ALL, "sasl", bad)];
            assert_eq!(fixup_acl(&acl, &[]).unwrap_err(), ErrorCode::InvalidAcl);
        }
    }

    #[test]
    fn ip_acl_matches_cidr_and_never_across_families() {
        assert!(ip_matches("10.1.2.3", "10.0.0.0/8"));
        assert!(!ip_matches("11.1.2.3", "10.0.0.0/8"));
        assert!(ip_matches("10.1.2.3", "10.1.2.3"));
        assert!(!ip_matches("10.1.2.4", "10.1.2.3"));
        assert!(ip_matches("10.1.2.7", "10.1.2.0/29"));
        assert!(!ip_matches("10.1.2.4", "10.1.2.0/30"));
        assert!(ip_matches("1.2.3.4", "0.0.0.0/0"));
        assert!(!ip_matches("::1", "0.0.0.0/0"));
        assert!(ip_matches("fe80::1", "fe80::/16"));
        assert!(!ip_matches("10.0.0.1", "10.0.0.0/33"));
    }

    #[test]
    fn acl_table_reuses_and_frees_entries() {
        let mut t = AclTable::default();
        let a = t.intern(&Acl::open_unsafe());
        let b = t.intern(&Acl::open_unsafe());
        assert_eq!(a, b);
        let r = t.intern(&Acl::read_unsafe());
        assert_ne!(a, r);
        t.release(r);
        assert_eq!(t.live(), 1);
        t.release(a);
        assert_eq!(t.live(), 1);
        t.release(a);
        assert_eq!(t.live(), 0);
    }
}
