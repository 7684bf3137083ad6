//! create (1), create2 (15), createContainer (19), createTTL (21) and deleteContainer (20).

use crate::acl::Acl;
use crate::record;
use crate::stat::Stat;

record! {
    /// Body of create, create2 and createContainer.
    pub struct CreateRequest {
        pub path: String,
        pub data: Option<Vec<u8>>,
        pub acl: Vec<Acl>,
        pub flags: i32,
    }
}

record! {
    /// Body of createTTL.
    pub struct CreateTtlRequest {
        pub path: String,
        pub data: Option<Vec<u8>>,
        pub acl: Vec<Acl>,
        pub flags: i32,
        pub ttl: i64,
    }
}

record! {
    /// Reply to create (1): the actual path, sequence suffix included.
    pub struct CreateResponse {
        pub path: String,
    }
}

record! {
    /// Reply to create2, createContainer and createTTL.
    pub struct Create2Response {
        pub path: String,
        pub stat: Stat,
    }
}

record! {
    /// Server-internal deleteContainer (20): the path only.
    pub struct DeleteContainerRequest {
        pub path: String,
    }
}

/// `CreateMode` flag values (ZooKeeper's `CreateMode.fromFlag`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CreateMode {
    Persistent,
    Ephemeral,
    PersistentSequential,
    EphemeralSequential,
    Container,
    PersistentWithTtl,
    PersistentSequentialWithTtl,
}

impl CreateMode {
    pub fn from_flags(flags: i32) -> Option<CreateMode> {
        Some(match flags {
            0 => CreateMode::Persistent,
            1 => CreateMode::Ephemeral,
            2 => CreateMode::PersistentSequential,
            3 => CreateMode::EphemeralSequential,
            4 => CreateMode::Container,
            5 => CreateMode::PersistentWithTtl,
            6 => CreateMode::PersistentSequentialWithTtl,
            _ => return None,
        })
    }

    pub fn flags(self) -> i32 {
        match self {
            CreateMode::Persistent => 0,
            CreateMode::Ephemeral => 1,
            CreateMode::PersistentSequential => 2,
            CreateMode::EphemeralSequential => 3,
            CreateMode::Container => 4,
            CreateMode::PersistentWithTtl => 5,
            CreateMode::PersistentSequentialWithTtl => 6,
        }
    }

    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl
        )
    }

    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }

    pub fn is_ttl(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
        )
    }

    pub fn is_container(self) -> bool {
        self == CreateMode::Container
    }
}
