//! getACL (6).

use crate::acl::Acl;
use crate::record;
use crate::stat::Stat;

record! {
    pub struct GetAclRequest {
        pub path: String,
    }
}

record! {
    pub struct GetAclResponse {
        pub acl: Vec<Acl>,
        pub stat: Stat,
    }
}
