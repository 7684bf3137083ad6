//! The raft thread's two seams to the world outside it. To peers: the raft thread hands each
//! batch of messages to a [`Transport`]; whatever receives a peer's message calls
//! `Handle::step`. To the applier: it hands each [`Event`] (committed entries, role changes,
//! read barriers, snapshots to install) to an [`EventSink`].

use crossbeam_channel::Sender;
use raft::eraftpb::Message;

use crate::Event;

/// Delivers raft messages to other nodes. Called on the raft thread, so it must not block: queue
/// and return. Lost messages are fine (raft retries); reordering across peers is fine.
///
/// Snapshots (`MsgSnapshot`) are the exception raft-rs leaves to its user: the leader stops
/// replicating to that follower until the outcome is known. A transport that learns it should
/// call `Handle::report_snapshot`; if nobody does, the node takes a snapshot unacknowledged for a
/// few election timeouts as lost and sends it again.
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

/// Where the raft thread puts its events. It must not block for long: the raft thread waits
/// for it, and with it heartbeats and elections. `false` means the receiver is gone; the event
/// is dropped.
pub trait EventSink: Send {
    fn deliver(&mut self, event: Event) -> bool;
}

impl EventSink for Sender<Event> {
    fn deliver(&mut self, event: Event) -> bool {
        self.send(event).is_ok()
    }
}

impl<F: FnMut(Event) -> bool + Send> EventSink for F {
    fn deliver(&mut self, event: Event) -> bool {
        self(event)
    }
}
