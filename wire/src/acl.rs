//! `Id`, `ACL` (ZooKeeper's `zookeeper.jute`), permission bits and the well-known ACLs
//! (`ZooDefs.Perms`, `ZooDefs.Ids`).

use crate::record;

record! {
    /// An identity: `scheme:id`, e.g. `world:anyone`, `digest:user:hash`, `ip:10.0.0.0/8`.
    pub struct Id {
        pub scheme: String,
        pub id: String,
    }
}

record! {
    pub struct Acl {
        pub perms: i32,
        pub id: Id,
    }
}

/// Permission bits.
pub mod perms {
    pub const READ: i32 = 1;
    pub const WRITE: i32 = 2;
    pub const CREATE: i32 = 4;
    pub const DELETE: i32 = 8;
    pub const ADMIN: i32 = 16;
    pub const ALL: i32 = 31;
}

impl Id {
    pub fn new(scheme: &str, id: &str) -> Id {
        Id {
            scheme: scheme.to_owned(),
            id: id.to_owned(),
        }
    }

    /// `world:anyone`.
    pub fn anyone() -> Id {
        Id::new("world", "anyone")
    }
}

impl Acl {
    pub fn new(perms: i32, scheme: &str, id: &str) -> Acl {
        Acl {
            perms,
            id: Id::new(scheme, id),
        }
    }

    /// `OPEN_ACL_UNSAFE`.
    pub fn open_unsafe() -> Vec<Acl> {
        vec![Acl::new(perms::ALL, "world", "anyone")]
    }

    /// `READ_ACL_UNSAFE`.
    pub fn read_unsafe() -> Vec<Acl> {
        vec![Acl::new(perms::READ, "world", "anyone")]
    }

    /// `CREATOR_ALL_ACL`.
    pub fn creator_all() -> Vec<Acl> {
        vec![Acl::new(perms::ALL, "auth", "")]
    }
}
