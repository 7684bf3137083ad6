//! The handshake: `ConnectRequest` and `ConnectResponse`, each with an optional trailing
//! `readOnly` byte (ZooKeeper's `ProtocolManager.deserializeConnectRequest` reads it only if
//! the frame has it). go-zookeeper omits it; Java, kazoo and C send it.
//! The server mirrors the client's choice, so both records remember whether it was present.

use crate::error::DecodeError;
use crate::jute::{Reader, Record, Writer};

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectRequest {
    pub protocol_version: i32,
    pub last_zxid_seen: i64,
    pub timeout: i32,
    pub session_id: i64,
    pub passwd: Option<Vec<u8>>,
    /// `None` when the client sent no readOnly byte (an "old client").
    pub read_only: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectResponse {
    pub protocol_version: i32,
    pub timeout: i32,
    pub session_id: i64,
    pub passwd: Option<Vec<u8>>,
    /// `None` leaves the byte out, for clients that did not send one.
    pub read_only: Option<bool>,
}

impl Record for ConnectRequest {
    fn encode(&self, w: &mut Writer) {
        w.write_i32(self.protocol_version);
        w.write_i64(self.last_zxid_seen);
        w.write_i32(self.timeout);
        w.write_i64(self.session_id);
        w.write_buffer(self.passwd.as_deref());
        if let Some(ro) = self.read_only {
            w.write_bool(ro);
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ConnectRequest {
            protocol_version: r.read_i32("ConnectRequest.protocolVersion")?,
            last_zxid_seen: r.read_i64("ConnectRequest.lastZxidSeen")?,
            timeout: r.read_i32("ConnectRequest.timeOut")?,
            session_id: r.read_i64("ConnectRequest.sessionId")?,
            passwd: r.read_buffer("ConnectRequest.passwd")?,
            read_only: if r.is_empty() {
                None
            } else {
                Some(r.read_bool("ConnectRequest.readOnly")?)
            },
        })
    }
}

impl Record for ConnectResponse {
    fn encode(&self, w: &mut Writer) {
        w.write_i32(self.protocol_version);
        w.write_i32(self.timeout);
        w.write_i64(self.session_id);
        w.write_buffer(self.passwd.as_deref());
        if let Some(ro) = self.read_only {
            w.write_bool(ro);
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ConnectResponse {
            protocol_version: r.read_i32("ConnectResponse.protocolVersion")?,
            timeout: r.read_i32("ConnectResponse.timeOut")?,
            session_id: r.read_i64("ConnectResponse.sessionId")?,
            passwd: r.read_buffer("ConnectResponse.passwd")?,
            read_only: if r.is_empty() {
                None
            } else {
                Some(r.read_bool("ConnectResponse.readOnly")?)
            },
        })
    }
}
