//! check (13): valid only inside multi.

use crate::record;

record! {
    pub struct CheckVersionRequest {
        pub path: String,
        pub version: i32,
    }
}
