//! `Stat`, the 68-byte node metadata every read and write reply carries (ZooKeeper's
//! `zookeeper.jute`; the server fills it in `DataNode.copyStat`).

use crate::record;

record! {
    /// The wire Stat. `cversion` here is the wire value (`stored × 2 − numChildren`) and
    /// `ephemeral_owner` the client-visible owner (0 for containers and TTL nodes).
    pub struct Stat {
        pub czxid: i64,
        pub mzxid: i64,
        pub ctime: i64,
        pub mtime: i64,
        pub version: i32,
        pub cversion: i32,
        pub aversion: i32,
        pub ephemeral_owner: i64,
        pub data_length: i32,
        pub num_children: i32,
        pub pzxid: i64,
    }
}

impl Stat {
    pub const WIRE_LEN: usize = 68;
}
