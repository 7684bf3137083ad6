//! What can be wrong with ZooKeeper's files. Every error names the byte offset where the reader
//! stopped, in the decompressed stream for a snapshot and in the file for a log, so that an
//! operator can look at the bytes (`zkTxnLogToolkit.sh -d`, `xxd -s`).

/// Why bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("{what}: the data ends at offset {offset}")]
    Truncated { what: &'static str, offset: u64 },
    #[error("{what}: bad length {len} at offset {offset}")]
    BadLength {
        what: &'static str,
        len: i64,
        offset: u64,
    },
    #[error("{what}: magic {found:#010x} at offset {offset}, expected {expected:#010x}")]
    BadMagic {
        what: &'static str,
        found: u32,
        expected: u32,
        offset: u64,
    },
    #[error(
        "{what}: checksum mismatch at offset {offset} (stored {stored:#x}, computed {computed:#x})"
    )]
    Checksum {
        what: &'static str,
        offset: u64,
        stored: u64,
        computed: u64,
    },
    #[error("{what} at offset {offset}")]
    Invalid { what: String, offset: u64 },
    #[error("{0}")]
    Compression(String),
    /// The records decode but do not make a tree (a node before its parent, an ACL index the
    /// cache lacks); the message names the node.
    #[error("{0}")]
    Tree(String),
}

impl FormatError {
    pub fn invalid(what: impl Into<String>, offset: u64) -> FormatError {
        FormatError::Invalid {
            what: what.into(),
            offset,
        }
    }

    /// The offset the error names, if any.
    pub fn offset(&self) -> Option<u64> {
        match self {
            FormatError::Truncated { offset, .. }
            | FormatError::BadLength { offset, .. }
            | FormatError::BadMagic { offset, .. }
            | FormatError::Checksum { offset, .. }
            | FormatError::Invalid { offset, .. } => Some(*offset),
            FormatError::Compression(_) | FormatError::Tree(_) => None,
        }
    }
}
