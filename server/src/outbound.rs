//! What the core sends to a connection's writer, and how the writer puts it on the wire.
//!
//! Everything for one connection goes through one bounded queue, in the order the core
//! produced it: that single queue is what makes "a watch event precedes every later reply"
//! hold by construction.

use wire::{ConnectResponse, Record, ReplyHeader, Response, WatcherEvent, Writer};

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
            Outbound::Connect(resp) => {
                let at = w.begin_frame();
                resp.encode(w);
                w.finish_frame(at);
            }
            Outbound::Reply { header, body } => {
                let at = w.begin_frame();
                header.encode(w);
                if let Some(body) = body {
                    body.encode(w);
                }
                w.finish_frame(at);
            }
            Outbound::Event { zxid, event } => {
                let at = w.begin_frame();
                ReplyHeader { xid: wire::xid::NOTIFICATION, zxid: *zxid, err: 0 }.encode(w);
                event.encode(w);
                w.finish_frame(at);
            }
            Outbound::Close => return false,
        }
        true
    }
}
