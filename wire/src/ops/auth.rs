//! auth (100, xid -4) and sasl (102).

use crate::record;

record! {
    /// `type` is always 0. For digest, `auth` is `user:password` in UTF-8.
    pub struct AuthPacket {
        pub auth_type: i32,
        pub scheme: String,
        pub auth: Option<Vec<u8>>,
    }
}

record! {
    pub struct GetSaslRequest {
        pub token: Option<Vec<u8>>,
    }
}

record! {
    pub struct SetSaslResponse {
        pub token: Option<Vec<u8>>,
    }
}
