//! The seam to peers. Outbound: the raft thread hands each batch of messages to a [`Transport`].
//! Inbound: whatever receives a peer's message calls `Handle::step`.

use raft::eraftpb::Message;

/// Delivers raft messages to other nodes. Called on the raft thread, so it must not block: queue
/// and return. Lost messages are fine (raft retries); reordering across peers is fine.
pub trait Transport: Send + 'static {
    fn send(&mut self, msgs: Vec<Message>);
}

/// A group of one has no one to talk to; anything raft addresses elsewhere is dropped.
pub struct NoPeers;

impl Transport for NoPeers {
    fn send(&mut self, msgs: Vec<Message>) {
        for m in msgs {
            tracing::warn!(to = m.to, msg_type = ?m.get_msg_type(), "standalone node dropped a message for a peer");
        }
    }
}
