//! Opcodes (ZooKeeper's `ZooDefs.OpCode`) and special xids (`ClientCnxn`'s `NOTIFICATION_XID`,
//! `PING_XID`, `AUTHPACKET_XID`, `SET_WATCHES_XID`).

/// Every opcode of the 3.9 client protocol, with ZooKeeper's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum OpCode {
    Notification = 0,
    Create = 1,
    Delete = 2,
    Exists = 3,
    GetData = 4,
    SetData = 5,
    GetAcl = 6,
    SetAcl = 7,
    GetChildren = 8,
    Sync = 9,
    Ping = 11,
    GetChildren2 = 12,
    Check = 13,
    Multi = 14,
    Create2 = 15,
    Reconfig = 16,
    CheckWatches = 17,
    RemoveWatches = 18,
    CreateContainer = 19,
    DeleteContainer = 20,
    CreateTtl = 21,
    MultiRead = 22,
    Auth = 100,
    SetWatches = 101,
    Sasl = 102,
    GetEphemerals = 103,
    GetAllChildrenNumber = 104,
    SetWatches2 = 105,
    AddWatch = 106,
    WhoAmI = 107,
    CreateSession = -10,
    CloseSession = -11,
    Error = -1,
}

impl OpCode {
    pub const ALL: [OpCode; 33] = [
        OpCode::Notification,
        OpCode::Create,
        OpCode::Delete,
        OpCode::Exists,
        OpCode::GetData,
        OpCode::SetData,
        OpCode::GetAcl,
        OpCode::SetAcl,
        OpCode::GetChildren,
        OpCode::Sync,
        OpCode::Ping,
        OpCode::GetChildren2,
        OpCode::Check,
        OpCode::Multi,
        OpCode::Create2,
        OpCode::Reconfig,
        OpCode::CheckWatches,
        OpCode::RemoveWatches,
        OpCode::CreateContainer,
        OpCode::DeleteContainer,
        OpCode::CreateTtl,
        OpCode::MultiRead,
        OpCode::Auth,
        OpCode::SetWatches,
        OpCode::Sasl,
        OpCode::GetEphemerals,
        OpCode::GetAllChildrenNumber,
        OpCode::SetWatches2,
        OpCode::AddWatch,
        OpCode::WhoAmI,
        OpCode::CreateSession,
        OpCode::CloseSession,
        OpCode::Error,
    ];

    pub fn code(self) -> i32 {
        self as i32
    }

    pub fn from_code(code: i32) -> Option<OpCode> {
        OpCode::ALL.iter().copied().find(|o| o.code() == code)
    }

    /// Ops that change state and so go through the log (ZooKeeper's `Request.isQuorum`
    /// less createSession, which the server makes itself).
    pub fn is_write(self) -> bool {
        matches!(
            self,
            OpCode::Create
                | OpCode::Create2
                | OpCode::CreateContainer
                | OpCode::CreateTtl
                | OpCode::Delete
                | OpCode::DeleteContainer
                | OpCode::SetData
                | OpCode::SetAcl
                | OpCode::Multi
                | OpCode::Reconfig
                | OpCode::CloseSession
        )
    }
}

/// Special xids (ZooKeeper's `ClientCnxn` constants of the same names).
pub mod xid {
    /// A watch notification, server to client.
    pub const NOTIFICATION: i32 = -1;
    /// Ping request and reply.
    pub const PING: i32 = -2;
    /// AuthPacket request and reply.
    pub const AUTH: i32 = -4;
    /// setWatches / setWatches2 sent on reconnect.
    pub const SET_WATCHES: i32 = -8;
}
