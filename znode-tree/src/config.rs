//! The tree's settings: the ZooKeeper system properties that change what apply accepts and
//! what an ACL check grants. Its own file so that `acl` (which reads `skip_acl` and
//! `let_any_sasl_user_do_x`) and `tree` (which holds it) both depend on it, not on each other.

/// Settings that change what apply accepts. Every replica must run with the same values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeConfig {
    /// `zookeeper.extendedTypesEnabled`: TTL nodes allowed.
    pub extended_types: bool,
    /// `zookeeper.enforceQuota`: hard quota limits give QuotaExceeded.
    pub enforce_quota: bool,
    /// `super:base64sha1`; used by the server with `acl::authenticate`.
    pub super_digest: Option<String>,
    /// `zookeeper.skipACL=yes`: every ACL check passes.
    pub skip_acl: bool,
    /// `zookeeper.letAnySaslUserDoX`: every SASL-authenticated user matches `sasl:<this>`.
    pub let_any_sasl_user_do_x: Option<String>,
}
