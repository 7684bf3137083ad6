//! `RequestHeader`, `ReplyHeader` and `WatcherEvent`, as ZooKeeper's `zookeeper.jute` defines
//! them.

use crate::record;

record! {
    /// Precedes every client frame after the handshake. `op_type` is the opcode.
    pub struct RequestHeader {
        pub xid: i32,
        pub op_type: i32,
    }
}

record! {
    /// Precedes every server frame after the handshake. A non-zero `err` means no body follows
    /// (multi excepted).
    pub struct ReplyHeader {
        pub xid: i32,
        pub zxid: i64,
        pub err: i32,
    }
}

record! {
    /// The body of a notification (xid -1). `state` is always 3 (SyncConnected) from a server.
    pub struct WatcherEvent {
        pub event_type: i32,
        pub state: i32,
        pub path: String,
    }
}

impl RequestHeader {
    pub const WIRE_LEN: usize = 8;
}

impl ReplyHeader {
    pub const WIRE_LEN: usize = 16;
}

/// `Watcher.Event.EventType` values the server sends.
pub mod event_type {
    pub const NONE: i32 = -1;
    pub const NODE_CREATED: i32 = 1;
    pub const NODE_DELETED: i32 = 2;
    pub const NODE_DATA_CHANGED: i32 = 3;
    pub const NODE_CHILDREN_CHANGED: i32 = 4;
}

/// `Watcher.Event.KeeperState::SyncConnected`, the only state a server puts in an event.
pub const STATE_SYNC_CONNECTED: i32 = 3;
