//! One file per opcode family: each holds that op's request and response records.

pub mod auth;
pub mod check;
pub mod children;
pub mod create;
pub mod data;
pub mod delete;
pub mod ephemerals;
pub mod exists;
pub mod get_acl;
pub mod multi;
pub mod reconfig;
pub mod set_acl;
pub mod sync;
pub mod watches;
pub mod who_am_i;
