//! `wire`: the ZooKeeper 3.9 client protocol as bytes ↔ records. Pure: no IO, no clock,
//! no tokio.
//!
//! ```text
//!   socket bytes ──frame::check──▶ frame body ──decode_request_frame──▶ (RequestHeader, Request)
//!   (ReplyHeader, Response) ──encode_reply / encode_notification──▶ socket bytes
//! ```
//!
//! Contract:
//! - decoding never panics and never reserves more than the frame holds, whatever the bytes:
//!   every length and vector count is weighed against the bytes left before anything is
//!   allocated; a malformed record is a `DecodeError` value;
//! - encoding is the exact inverse of decoding for every record (property-tested), and matches
//!   the bytes real clients and Apache ZooKeeper put on the wire (captured vectors). Two
//!   deliberate exceptions, both as Java reads them: a null `ustring` reads as "" (kazoo sends
//!   every empty string as null), and bytes after a request's record are ignored;
//! - the handshake records remember whether the optional readOnly byte was present.
//!
//! Layout: `jute` (primitives and the `record!` macro), `frame`, `message` (whole frames:
//! `decode_request_frame`, `encode_reply`, `encode_notification`), `fourlw`, `connect`, `header`,
//! `stat`, `acl`, `error` (ErrorCode), `opcode`, and `ops/` with one file per opcode family.
//! `request` and `response` tie opcodes to their records.

// Purity, checked: clippy.toml lists the clock, randomness and thread calls this crate must
// not make; denied here so that one in the library fails `cargo clippy`.
#![deny(clippy::disallowed_methods, clippy::disallowed_types)]

pub mod acl;
pub mod connect;
pub mod error;
pub mod fourlw;
pub mod frame;
pub mod header;
pub mod jute;
pub mod message;
pub mod opcode;
pub mod ops;
pub mod request;
pub mod response;
pub mod stat;

pub use acl::{perms, Acl, Id};
pub use connect::{ConnectRequest, ConnectResponse};
pub use error::{DecodeError, ErrorCode};
pub use fourlw::FourLetterWord;
pub use header::{event_type, ReplyHeader, RequestHeader, WatcherEvent, STATE_SYNC_CONNECTED};
pub use jute::{Reader, Record, Writer};
pub use message::{
    decode_connect_frame, decode_reply_frame, decode_request_frame, encode_connect_request,
    encode_connect_response, encode_notification, encode_reply, encode_request,
};
pub use opcode::{xid, OpCode};
pub use ops::create::CreateMode;
pub use request::Request;
pub use response::{MultiResult, Response};
pub use stat::Stat;
