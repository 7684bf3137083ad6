//! exists (3).

use crate::record;
use crate::stat::Stat;

record! {
    pub struct ExistsRequest {
        pub path: String,
        pub watch: bool,
    }
}

record! {
    pub struct ExistsResponse {
        pub stat: Stat,
    }
}
