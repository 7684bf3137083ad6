//! whoAmI (107): no request body.

use crate::record;

record! {
    pub struct ClientInfo {
        pub auth_scheme: String,
        pub user: String,
    }
}

record! {
    pub struct WhoAmIResponse {
        pub client_info: Vec<ClientInfo>,
    }
}
