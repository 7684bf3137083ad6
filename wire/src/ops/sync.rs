//! sync (9).

use crate::record;

record! {
    pub struct SyncRequest {
        pub path: String,
    }
}

record! {
    /// The path is echoed; sync does not check existence.
    pub struct SyncResponse {
        pub path: String,
    }
}
