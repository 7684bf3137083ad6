//! checkWatches (17), removeWatches (18), setWatches (101), setWatches2 (105), addWatch (106).

use crate::record;

record! {
    /// Body of checkWatches and removeWatches. `watcher_type`: Children=1, Data=2, Any=3,
    /// Persistent=4, PersistentRecursive=5.
    pub struct WatchesRequest {
        pub path: String,
        pub watcher_type: i32,
    }
}

record! {
    /// Sent with xid -8 on reconnect to re-register one-shot watches.
    pub struct SetWatches {
        pub relative_zxid: i64,
        pub data_watches: Vec<String>,
        pub exist_watches: Vec<String>,
        pub child_watches: Vec<String>,
    }
}

record! {
    /// setWatches plus persistent and persistent-recursive watches.
    pub struct SetWatches2 {
        pub relative_zxid: i64,
        pub data_watches: Vec<String>,
        pub exist_watches: Vec<String>,
        pub child_watches: Vec<String>,
        pub persistent_watches: Vec<String>,
        pub persistent_recursive_watches: Vec<String>,
    }
}

record! {
    /// `mode`: 0 persistent, 1 persistent-recursive.
    pub struct AddWatchRequest {
        pub path: String,
        pub mode: i32,
    }
}

record! {
    /// addWatch's reply body (always 0) and the body of a multi error result.
    pub struct ErrorResponse {
        pub err: i32,
    }
}

/// `WatcherType` values for checkWatches/removeWatches.
pub mod watcher_type {
    pub const CHILDREN: i32 = 1;
    pub const DATA: i32 = 2;
    pub const ANY: i32 = 3;
    pub const PERSISTENT: i32 = 4;
    pub const PERSISTENT_RECURSIVE: i32 = 5;
}

/// `AddWatchMode` values.
pub mod add_watch_mode {
    pub const PERSISTENT: i32 = 0;
    pub const PERSISTENT_RECURSIVE: i32 = 1;
}
