//! getEphemerals (103).

use crate::record;

record! {
    /// A plain string prefix; empty or `/` means all of the session's ephemerals.
    pub struct GetEphemeralsRequest {
        pub prefix_path: String,
    }
}

record! {
    pub struct GetEphemeralsResponse {
        pub ephemerals: Vec<String>,
    }
}
