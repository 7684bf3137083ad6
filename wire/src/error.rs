//! ZooKeeper's error codes (`KeeperException.Code`) and the codec's own decode errors.

use thiserror::Error;

/// A ZooKeeper outcome code as sent in `ReplyHeader.err` and in multi error results.
/// These are data, not Rust errors: a `NoNode` reply is a correct answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ErrorCode {
    Ok = 0,
    SystemError = -1,
    RuntimeInconsistency = -2,
    DataInconsistency = -3,
    ConnectionLoss = -4,
    MarshallingError = -5,
    Unimplemented = -6,
    OperationTimeout = -7,
    BadArguments = -8,
    UnknownSession = -12,
    NewConfigNoQuorum = -13,
    ReconfigInProgress = -14,
    ApiError = -100,
    NoNode = -101,
    NoAuth = -102,
    BadVersion = -103,
    NoChildrenForEphemerals = -108,
    NodeExists = -110,
    NotEmpty = -111,
    SessionExpired = -112,
    InvalidCallback = -113,
    InvalidAcl = -114,
    AuthFailed = -115,
    SessionMoved = -118,
    NotReadOnly = -119,
    EphemeralOnLocalSession = -120,
    NoWatcher = -121,
    RequestTimeout = -122,
    ReconfigDisabled = -123,
    SessionClosedRequireSaslAuth = -124,
    QuotaExceeded = -125,
    ThrottledOp = -127,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 32] = [
        ErrorCode::Ok,
        ErrorCode::SystemError,
        ErrorCode::RuntimeInconsistency,
        ErrorCode::DataInconsistency,
        ErrorCode::ConnectionLoss,
        ErrorCode::MarshallingError,
        ErrorCode::Unimplemented,
        ErrorCode::OperationTimeout,
        ErrorCode::BadArguments,
        ErrorCode::UnknownSession,
        ErrorCode::NewConfigNoQuorum,
        ErrorCode::ReconfigInProgress,
        ErrorCode::ApiError,
        ErrorCode::NoNode,
        ErrorCode::NoAuth,
        ErrorCode::BadVersion,
        ErrorCode::NoChildrenForEphemerals,
        ErrorCode::NodeExists,
        ErrorCode::NotEmpty,
        ErrorCode::SessionExpired,
        ErrorCode::InvalidCallback,
        ErrorCode::InvalidAcl,
        ErrorCode::AuthFailed,
        ErrorCode::SessionMoved,
        ErrorCode::NotReadOnly,
        ErrorCode::EphemeralOnLocalSession,
        ErrorCode::NoWatcher,
        ErrorCode::RequestTimeout,
        ErrorCode::ReconfigDisabled,
        ErrorCode::SessionClosedRequireSaslAuth,
        ErrorCode::QuotaExceeded,
        ErrorCode::ThrottledOp,
    ];

    pub fn code(self) -> i32 {
        self as i32
    }

    pub fn from_code(code: i32) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|e| e.code() == code)
    }
}

/// Why a frame or record could not be decoded. The connection that sent it gets
/// ZooKeeper's answer (MarshallingError, or a close); nothing panics.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    #[error("record ended early reading {what} at byte {at}")]
    Truncated { what: &'static str, at: usize },
    #[error("invalid length {len} for {what} at byte {at}")]
    BadLength {
        what: &'static str,
        len: i32,
        at: usize,
    },
    #[error("{what} at byte {at} is not valid UTF-8")]
    BadUtf8 { what: &'static str, at: usize },
    #[error("unknown opcode {0}")]
    UnknownOpcode(i32),
    #[error("{0}")]
    Invalid(&'static str),
}

impl DecodeError {
    /// The code ZooKeeper answers an undecodable request with: an opcode it does not accept
    /// from clients is `Unimplemented` (and the connection is then closed:
    /// `UnimplementedRequestProcessor`); any other malformed body, including a multi with
    /// foreign sub-ops (`MultiOperationRecord.deserialize`'s "Invalid type of op"), is
    /// `MarshallingError`.
    pub fn reply_code(&self) -> ErrorCode {
        match self {
            DecodeError::UnknownOpcode(_) => ErrorCode::Unimplemented,
            _ => ErrorCode::MarshallingError,
        }
    }
}
