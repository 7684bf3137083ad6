//! `server.N=host:peerPort:electionPort[:role][;[clientHost:]clientPort]`: one member of an
//! ensemble, as zoo.cfg and `/zookeeper/config` write it.

use std::fmt;

/// A server's role in an ensemble (`server.N=...:participant|observer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerRole {
    Participant,
    Observer,
}

/// One `server.N=host:peerPort:electionPort[:role][;[clientHost:]clientPort]` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub id: u64,
    pub host: String,
    /// ZooKeeper's quorum port; paddock uses it for Raft traffic.
    pub peer_port: u16,
    pub election_port: u16,
    /// `None` when the line names no role; ZooKeeper then treats the server as a participant.
    pub role: Option<PeerRole>,
    pub client_host: Option<String>,
    pub client_port: Option<u16>,
}

/// The ids of `servers` that are observers (`true`) or voting participants (`false`), in their
/// order.
pub fn ids_by_role(servers: &[ServerSpec], observers: bool) -> Vec<u64> {
    servers
        .iter()
        .filter(|s| (s.role == Some(PeerRole::Observer)) == observers)
        .map(|s| s.id)
        .collect()
}

impl ServerSpec {
    /// Parses the value of a `server.<id>` key.
    pub fn parse(id: u64, value: &str) -> Result<ServerSpec, String> {
        let (server_part, client_part) = match value.split_once(';') {
            Some((s, c)) => (s.trim(), Some(c.trim())),
            None => (value.trim(), None),
        };
        if server_part.contains('|') {
            return Err("multiple addresses per server (multiAddress) are not supported".into());
        }
        let (host, rest) = split_host(server_part)?;
        let fields: Vec<&str> = rest.split(':').collect();
        if fields.len() < 2 || fields.len() > 3 {
            return Err("expected host:peerPort:electionPort[:participant|observer]".into());
        }
        let peer_port = parse_port(fields[0])?;
        let election_port = parse_port(fields[1])?;
        let role = match fields.get(2).map(|s| s.to_ascii_lowercase()) {
            None => None,
            Some(r) if r == "participant" => Some(PeerRole::Participant),
            Some(r) if r == "observer" => Some(PeerRole::Observer),
            Some(r) => {
                return Err(format!(
                    "unknown server role {r:?} (participant or observer)"
                ))
            }
        };
        let (client_host, client_port) = match client_part.filter(|c| !c.is_empty()) {
            None => (None, None),
            Some(c) if c.parse::<u16>().is_ok() => (None, Some(parse_port(c)?)),
            Some(c) => {
                let (h, p) = split_host(c)?;
                (Some(h), Some(parse_port(p)?))
            }
        };
        Ok(ServerSpec {
            id,
            host,
            peer_port,
            election_port,
            role,
            client_host,
            client_port,
        })
    }
}

impl ServerSpec {
    /// `host:peerPort`, where the other members reach this one.
    pub fn peer_address(&self) -> String {
        format!("{}:{}", bracket_v6(&self.host), self.peer_port)
    }
}

impl fmt::Display for ServerSpec {
    /// ZooKeeper's `QuorumServer.toString` form, as used in `/zookeeper/config`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}",
            bracket_v6(&self.host),
            self.peer_port,
            self.election_port
        )?;
        match self.role {
            Some(PeerRole::Observer) => f.write_str(":observer")?,
            // An unnamed role is a participant; ZooKeeper always prints it.
            _ => f.write_str(":participant")?,
        }
        if let Some(port) = self.client_port {
            let host = self.client_host.as_deref().unwrap_or("0.0.0.0");
            write!(f, ";{}:{}", bracket_v6(host), port)?;
        }
        Ok(())
    }
}

fn bracket_v6(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// Splits `host:rest` or `[v6]:rest` into the host and what follows the first port colon.
fn split_host(s: &str) -> Result<(String, &str), String> {
    if let Some(inner) = s.strip_prefix('[') {
        let (host, after) = inner
            .split_once(']')
            .ok_or("unterminated [ in IPv6 address")?;
        let rest = after.strip_prefix(':').ok_or("expected : after ]")?;
        Ok((host.to_string(), rest))
    } else {
        let (host, rest) = s.split_once(':').ok_or("expected host:port")?;
        if host.is_empty() {
            return Err("empty host".into());
        }
        Ok((host.to_string(), rest))
    }
}

pub(super) fn parse_port(s: &str) -> Result<u16, String> {
    s.trim()
        .parse::<u16>()
        .map_err(|_| format!("{:?} is not a valid port number", s.trim()))
}
