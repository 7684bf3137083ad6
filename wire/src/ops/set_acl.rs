//! setACL (7).

use crate::acl::Acl;
use crate::record;
use crate::stat::Stat;

record! {
    pub struct SetAclRequest {
        pub path: String,
        pub acl: Vec<Acl>,
        pub version: i32,
    }
}

record! {
    pub struct SetAclResponse {
        pub stat: Stat,
    }
}
