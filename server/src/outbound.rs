//! What the core sends to a connection's writer, and how the writer puts it on the wire.
//!
//! Everything for one connection goes through one bounded queue, in the order the core
//! produced it: that single queue is what makes "a watch event precedes every later reply"
//! hold by construction.

use wire::{ConnectResponse, ReplyHeader, Response, WatcherEvent, Writer};

#[derive(Debug)]
pub enum Outbound {
    /// The handshake reply.
    Connect(ConnectResponse),
    /// A reply; `body` only when `header.err == 0` (or for multi, always).
    Reply { header: ReplyHeader, body: Option<Response> },
    /// A watch notification (xid -1).
    Event { zxid: i64, event: WatcherEvent },
    /// Flush what is queued, then close the socket.
    Close,
}

impl Outbound {
    /// Appends this message as one length-prefixed frame. Returns false for `Close`.
    pub fn encode(&self, w: &mut Writer) -> bool {
        match self {
            Outbound::Connect(resp) => wire::encode_connect_response(w, resp),
            Outbound::Reply { header, body } => wire::encode_reply(w, header, body.as_ref()),
            Outbound::Event { zxid, event } => wire::encode_notification(w, *zxid, event),
            Outbound::Close => return false,
        }
        true
    }
}
