//! reconfig (16). The reply is a `GetDataResponse` (see `data.rs`).

use crate::record;

record! {
    pub struct ReconfigRequest {
        pub joining_servers: String,
        pub leaving_servers: String,
        pub new_members: String,
        pub cur_config_id: i64,
    }
}
