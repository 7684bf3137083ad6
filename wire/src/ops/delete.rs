//! delete (2).

use crate::record;

record! {
    pub struct DeleteRequest {
        pub path: String,
        pub version: i32,
    }
}
