//! getChildren (8), getChildren2 (12) and getAllChildrenNumber (104).

use crate::record;
use crate::stat::Stat;

record! {
    /// Body of getChildren and getChildren2 (same layout).
    pub struct GetChildrenRequest {
        pub path: String,
        pub watch: bool,
    }
}

record! {
    pub struct GetChildrenResponse {
        pub children: Vec<String>,
    }
}

record! {
    pub struct GetChildren2Response {
        pub children: Vec<String>,
        pub stat: Stat,
    }
}

record! {
    pub struct GetAllChildrenNumberRequest {
        pub path: String,
    }
}

record! {
    /// The number of all descendants, not just direct children.
    pub struct GetAllChildrenNumberResponse {
        pub total_number: i32,
    }
}
