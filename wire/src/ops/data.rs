//! getData (4) and setData (5).

use crate::record;
use crate::stat::Stat;

record! {
    pub struct GetDataRequest {
        pub path: String,
        pub watch: bool,
    }
}

record! {
    /// Reply to getData; also the reply to reconfig (the new config and its stat).
    pub struct GetDataResponse {
        pub data: Option<Vec<u8>>,
        pub stat: Stat,
    }
}

record! {
    pub struct SetDataRequest {
        pub path: String,
        pub data: Option<Vec<u8>>,
        pub version: i32,
    }
}

record! {
    pub struct SetDataResponse {
        pub stat: Stat,
    }
}
