//! The one error type of the TLS module. Every variant names the zoo.cfg key at fault, and the
//! file when there is one, so that an operator can find the line to change; none ever carries a
//! password or key material (texts are built here from fixed words, key names and paths only).

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TlsError {
    /// A key's value is refused, or the key asks for something paddock does not do.
    #[error("{key}: {reason}")]
    Key { key: String, reason: String },
    /// The file a key names cannot be used (missing, unreadable, malformed, wrong password).
    #[error("{key}={}: {reason}", path.display())]
    File {
        key: String,
        path: PathBuf,
        reason: String,
    },
    /// rustls refused the assembled configuration (the keys were each valid, the whole is not).
    #[error("{prefix}*: rustls refused the TLS configuration: {reason}")]
    Build { prefix: String, reason: String },
}

impl TlsError {
    pub(crate) fn key(key: impl Into<String>, reason: impl Into<String>) -> TlsError {
        TlsError::Key {
            key: key.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn file(
        key: impl Into<String>,
        path: impl Into<PathBuf>,
        reason: impl Into<String>,
    ) -> TlsError {
        TlsError::File {
            key: key.into(),
            path: path.into(),
            reason: reason.into(),
        }
    }
}
