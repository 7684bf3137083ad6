//! Auth packets, the SASL exchange and the `enforce.auth` check. Both kinds of packet are
//! answered at once with zxid 0, outside the ordered pipeline, as ZooKeeper does.

use std::sync::Arc;

use tracing::{info, warn};

use wire::ops::auth::SetSaslResponse;
use wire::{ErrorCode, Id, OpCode, ReplyHeader, Response};
use znode_tree::acl;

use super::Core;
use crate::msg::ConnId;
use crate::outbound::Outbound;
use crate::sasl::{SaslServer, Step};

impl Core {
    /// With `enforce.auth` on, only auth and SASL packets pass until the connection holds an id
    /// of a required scheme (ZooKeeper checks every other packet, pings included).
    pub(super) fn authenticated_as_required(&self, id: ConnId, op_type: i32) -> bool {
        let Some(schemes) = &self.cfg.enforce_auth_schemes else {
            return true;
        };
        op_type == OpCode::Auth.code()
            || op_type == OpCode::Sasl.code()
            || self.conns[&id]
                .auth
                .iter()
                .any(|a| schemes.contains(&a.scheme))
    }

    pub(super) fn auth(&mut self, id: ConnId, xid: i32, packet: wire::ops::auth::AuthPacket) {
        let conn = self.conns.get_mut(&id).unwrap();
        let result = if packet.scheme == "ip" {
            Ok(vec![Id::new("ip", &conn.remote.ip().to_string())])
        } else {
            acl::authenticate(
                &packet.scheme,
                packet.auth.as_deref().unwrap_or(&[]),
                self.cfg.super_digest.as_deref(),
            )
        };
        match result {
            Ok(ids) => {
                for new in ids {
                    if !conn.auth.contains(&new) {
                        conn.auth.push(new);
                    }
                }
                self.send_header(id, xid, 0, 0);
            }
            Err(code) => {
                self.meters.stats.auth_failed += 1;
                self.send_header(id, xid, 0, code.code());
                self.close_conn(id);
            }
        }
    }

    /// `ZooKeeperServer.processSasl`: like auth, answered at once with zxid 0, outside the
    /// ordered pipeline. A failure answers AuthFailed (SessionClosedRequireSaslAuth when SASL is
    /// enforced) with an empty token and closes the connection; the session lives on until it
    /// expires, as in ZooKeeper.
    pub(super) fn sasl(&mut self, id: ConnId, xid: i32, token: Vec<u8>) {
        let reply = |err: i32, token: Option<Vec<u8>>| Outbound::Reply {
            header: ReplyHeader { xid, zxid: 0, err },
            body: Some(Response::Sasl(SetSaslResponse { token })),
        };
        let cfg = Arc::clone(&self.cfg);
        let Some(sasl_cfg) = cfg.sasl.as_ref() else {
            // No JAAS Server section, so no SASL server for this connection. ZooKeeper then hits a
            // null saslServer, logs it, and answers OK with a null token (ZooKeeperServer.processSasl):
            // the connection stays, unauthenticated.
            self.send(id, reply(0, None));
            return;
        };
        let conn = self.conns.get_mut(&id).unwrap();
        let (remote, session_id) = (conn.remote, conn.session_id);
        let result = match &mut conn.sasl {
            Some(server) => server.evaluate(&token, sasl_cfg),
            None => SaslServer::for_config(sasl_cfg)
                .and_then(|server| conn.sasl.insert(server).evaluate(&token, sasl_cfg)),
        };
        match result {
            Ok(Step::Challenge(challenge)) => self.send(id, reply(0, Some(challenge))),
            Ok(Step::Complete {
                token,
                authorization_id,
            }) => {
                info!(
                    peer = %remote,
                    session = %session_id,
                    authorization_id,
                    "SASL authentication succeeded"
                );
                let mut ids = vec![Id::new("sasl", &authorization_id)];
                if sasl_cfg.is_super_user(&authorization_id) {
                    ids.push(Id::new("super", ""));
                }
                for new in ids {
                    if !conn.auth.contains(&new) {
                        conn.auth.push(new);
                    }
                }
                self.send(id, reply(0, token));
            }
            Err(e) => {
                warn!(peer = %remote, session = %session_id, error = %e, "SASL authentication failed");
                let sasl_required = cfg
                    .enforce_auth_schemes
                    .as_ref()
                    .is_some_and(|s| s.iter().any(|s| s == "sasl"));
                if sasl_cfg.allow_failed_clients && !sasl_required {
                    // zookeeper.allowSaslFailedClients: the connection stays, unauthenticated.
                    self.send(id, reply(0, None));
                } else {
                    let code = if sasl_required {
                        ErrorCode::SessionClosedRequireSaslAuth
                    } else {
                        ErrorCode::AuthFailed
                    };
                    self.send(id, reply(code.code(), None));
                    self.close_conn(id);
                }
            }
        }
    }
}
