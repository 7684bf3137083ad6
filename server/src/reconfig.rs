//! ZooKeeper's `reconfig` (opcode 16), the pure part: reading the membership that
//! `/zookeeper/config` holds, computing the next one from a request (incremental `joining` /
//! `leaving`, or non-incremental `newMembers`) with ZooKeeper's checks, and rendering it back in
//! ZooKeeper's `server.N=...` form.
//!
//! Every member runs `next_members` when it applies a reconfig entry, on the same bytes of
//! `/zookeeper/config` at the same index, so every member reaches the same answer (the new text or
//! the same error): the decision is part of the replicated state machine, not of whichever server
//! received the request (see `core/reconfig.rs`).

use wire::ops::reconfig::ReconfigRequest;
use wire::ErrorCode;

use crate::config::{PeerRole, ServerSpec};

/// The membership `/zookeeper/config` describes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Members {
    /// In id order.
    pub servers: Vec<ServerSpec>,
    /// The `version=<hex>` line: the zxid that wrote this membership (None: no such line).
    pub version: Option<i64>,
}

impl Members {
    /// Parses the text of `/zookeeper/config`. Lines that do not parse are skipped (the node is
    /// written only by the servers, in this format).
    pub fn parse(text: &str) -> Members {
        let mut m = Members::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let key = key.trim();
            if key == "version" {
                m.version = i64::from_str_radix(value.trim(), 16).ok();
            } else if let Some(id) = key.strip_prefix("server.") {
                if let Ok(id) = id.parse::<u64>() {
                    if let Ok(spec) = ServerSpec::parse(id, value) {
                        m.servers.push(spec);
                    }
                }
            }
        }
        m.servers.sort_by_key(|s| s.id);
        m
    }

    /// Every member's id (voters and observers), in id order.
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.servers.iter().map(|s| s.id)
    }

    /// Whether `id` is a member (voter or observer).
    pub fn lists(&self, id: u64) -> bool {
        self.servers.iter().any(|s| s.id == id)
    }

    /// Voting members (participants), in id order.
    pub fn voters(&self) -> Vec<u64> {
        crate::config::ids_by_role(&self.servers, false)
    }

    /// Observers (Raft learners), in id order.
    pub fn observers(&self) -> Vec<u64> {
        crate::config::ids_by_role(&self.servers, true)
    }

    /// The peer address book of `me`: every other member's `host:peerPort`.
    pub fn peer_addresses(&self, me: u64) -> Vec<(u64, String)> {
        self.servers
            .iter()
            .filter(|s| s.id != me)
            .map(|s| (s.id, s.peer_address()))
            .collect()
    }
}

/// `server.N=...` lines, one per server in id order, each ending in a newline: what
/// `Txn::SetConfig` writes before its `version=` line.
pub fn render(servers: &[ServerSpec]) -> String {
    let mut sorted: Vec<&ServerSpec> = servers.iter().collect();
    sorted.sort_by_key(|s| s.id);
    sorted
        .iter()
        .map(|s| format!("server.{}={}\n", s.id, s))
        .collect()
}

/// The membership a reconfig request asks for, given the current one, with ZooKeeper's checks in
/// ZooKeeper's order (PrepRequestProcessor): `BadVersion` when `curConfigId` is neither -1 nor
/// the current version; `BadArguments` for a spec that does not parse, a joiner without a client
/// port, two servers sharing a peer or election address, or a result with too few voters (two
/// while `standaloneEnabled`, as ZooKeeper's default, else one). An empty string counts as
/// absent, as the clients send null for an unused field.
pub fn next_members(
    current: &Members,
    req: &ReconfigRequest,
    standalone_enabled: bool,
) -> Result<Vec<ServerSpec>, ErrorCode> {
    if req.cur_config_id != -1 && Some(req.cur_config_id) != current.version {
        return Err(ErrorCode::BadVersion);
    }
    let servers = if !req.new_members.trim().is_empty() {
        non_incremental(&req.new_members)?
    } else {
        incremental(&current.servers, &req.joining_servers, &req.leaving_servers)?
    };
    check_addresses(&servers)?;
    let voters = servers
        .iter()
        .filter(|s| s.role != Some(PeerRole::Observer))
        .count();
    if voters < if standalone_enabled { 2 } else { 1 } {
        return Err(ErrorCode::BadArguments);
    }
    Ok(servers)
}

/// `server.N=spec` (the key as ZooKeeper reads it: the id after the last dot).
fn parse_line(line: &str) -> Result<ServerSpec, ErrorCode> {
    let (key, value) = line.split_once('=').ok_or(ErrorCode::BadArguments)?;
    let key = key.trim();
    let id = key
        .strip_prefix("server.")
        .and_then(|id| id.parse::<u64>().ok())
        .ok_or(ErrorCode::BadArguments)?;
    ServerSpec::parse(id, value).map_err(|_| ErrorCode::BadArguments)
}

/// `newMembers`: the whole membership, servers separated by commas or newlines.
fn non_incremental(text: &str) -> Result<Vec<ServerSpec>, ErrorCode> {
    let mut servers: Vec<ServerSpec> = Vec::new();
    for line in text.split([',', '\n']) {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (key, _) = line.split_once('=').ok_or(ErrorCode::BadArguments)?;
        // A `version=` line (a copy of /zookeeper/config pasted back) is ignored, as
        // ZooKeeper's dynamic-config parser ignores it.
        if key.trim() == "version" {
            continue;
        }
        let spec = parse_line(line)?;
        servers.retain(|s| s.id != spec.id);
        servers.push(spec);
    }
    servers.sort_by_key(|s| s.id);
    Ok(servers)
}

/// `joining` and `leaving`, comma separated, applied to the current membership (leaving first).
fn incremental(
    current: &[ServerSpec],
    joining: &str,
    leaving: &str,
) -> Result<Vec<ServerSpec>, ErrorCode> {
    let mut servers = current.to_vec();
    for id in leaving.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let id: u64 = id.parse().map_err(|_| ErrorCode::BadArguments)?;
        servers.retain(|s| s.id != id);
    }
    for line in joining.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let spec = parse_line(line)?;
        // "each server should have at least 3 ports specified": peer, election, client.
        if spec.client_port.is_none() {
            return Err(ErrorCode::BadArguments);
        }
        servers.retain(|s| s.id != spec.id);
        servers.push(spec);
    }
    servers.sort_by_key(|s| s.id);
    Ok(servers)
}

/// No two servers share a peer or election address (ZooKeeper's `checkAddressDuplicate`).
fn check_addresses(servers: &[ServerSpec]) -> Result<(), ErrorCode> {
    let mut seen = std::collections::HashSet::new();
    for s in servers {
        let mut ports = vec![s.peer_port];
        if s.election_port != s.peer_port {
            ports.push(s.election_port);
        }
        for port in ports {
            if !seen.insert((s.host.clone(), port)) {
                return Err(ErrorCode::BadArguments);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const THREE: &str = "server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n\
                         server.2=127.0.0.1:2889:3889:participant;0.0.0.0:2182\n\
                         server.3=127.0.0.1:2890:3890:participant;0.0.0.0:2183\n\
                         version=100000003";

    fn req(joining: &str, leaving: &str, new_members: &str, v: i64) -> ReconfigRequest {
        ReconfigRequest {
            joining_servers: joining.into(),
            leaving_servers: leaving.into(),
            new_members: new_members.into(),
            cur_config_id: v,
        }
    }

    #[test]
    fn parses_the_config_node() {
        let m = Members::parse(THREE);
        assert_eq!(m.version, Some(0x1_0000_0003));
        assert_eq!(m.voters(), vec![1, 2, 3]);
        assert_eq!(
            m.peer_addresses(2),
            vec![(1, "127.0.0.1:2888".into()), (3, "127.0.0.1:2890".into())]
        );
        assert_eq!(render(&m.servers) + "version=100000003", THREE);
    }

    #[test]
    fn incremental_add_observer_and_remove() {
        let m = Members::parse(THREE);
        let joining = "server.100=0.0.0.0:7001:7002:observer;0.0.0.0:7003";
        let next = next_members(&m, &req(joining, "2", "", -1), true).unwrap();
        assert_eq!(
            render(&next),
            "server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n\
             server.3=127.0.0.1:2890:3890:participant;0.0.0.0:2183\n\
             server.100=0.0.0.0:7001:7002:observer;0.0.0.0:7003\n"
        );
    }

    #[test]
    fn version_must_match_unless_minus_one() {
        let m = Members::parse(THREE);
        let j = "server.4=127.0.0.1:2891:3891;2184";
        assert_eq!(
            next_members(&m, &req(j, "", "", 0x1_0000_0004), true),
            Err(ErrorCode::BadVersion)
        );
        assert!(next_members(&m, &req(j, "", "", 0x1_0000_0003), true).is_ok());
    }

    #[test]
    fn bad_arguments() {
        let m = Members::parse(THREE);
        for (j, l, n) in [
            ("some thing", "", ""),
            ("server.x=127.0.0.1:1:2;3", "", ""),
            // no client port on a joiner
            ("server.4=127.0.0.1:2891:3891", "", ""),
            // the peer address of server 1
            ("server.4=127.0.0.1:2888:3999;2184", "", ""),
            ("", "x", ""),
            // one voter left
            ("", "1,2", ""),
            ("", "", "server.1=127.0.0.1:2888:3888;2181"),
            ("", "", "nonsense"),
        ] {
            assert_eq!(
                next_members(&m, &req(j, l, n, -1), true),
                Err(ErrorCode::BadArguments),
                "{j:?} {l:?} {n:?}"
            );
        }
        // Without standaloneEnabled a single voter is a valid ensemble.
        assert!(next_members(&m, &req("", "1,2", "", -1), false).is_ok());
    }

    #[test]
    fn non_incremental_accepts_commas_and_newlines() {
        let m = Members::parse(THREE);
        let n = "server.2=127.0.0.1:2889:3889;2181\n,server.3=127.0.0.1:2890:3890;2181\n";
        let next = next_members(&m, &req("", "", n, -1), true).unwrap();
        assert_eq!(
            render(&next),
            "server.2=127.0.0.1:2889:3889:participant;0.0.0.0:2181\n\
             server.3=127.0.0.1:2890:3890:participant;0.0.0.0:2181\n"
        );
    }
}
