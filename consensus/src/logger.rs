//! raft-rs logs through slog; this drain forwards its records to `tracing` so the binary has one
//! log pipeline.

use std::fmt::Write as _;

use slog::{Drain, Level, OwnedKVList, Record, KV};

/// A slog drain that re-emits each record as a `tracing` event at the matching level.
pub(crate) struct TracingDrain;

impl Drain for TracingDrain {
    type Ok = ();
    type Err = slog::Never;

    fn log(&self, record: &Record<'_>, values: &OwnedKVList) -> Result<(), slog::Never> {
        let mut fields = KvText(String::new());
        let _ = record.kv().serialize(record, &mut fields);
        let _ = values.serialize(record, &mut fields);
        let msg = record.msg();
        let kv = fields.0;
        match record.level() {
            Level::Critical | Level::Error => tracing::error!(target: "raft", "{msg}{kv}"),
            Level::Warning => tracing::warn!(target: "raft", "{msg}{kv}"),
            Level::Info => tracing::info!(target: "raft", "{msg}{kv}"),
            Level::Debug => tracing::debug!(target: "raft", "{msg}{kv}"),
            Level::Trace => tracing::trace!(target: "raft", "{msg}{kv}"),
        }
        Ok(())
    }
}

struct KvText(String);

impl slog::Serializer for KvText {
    fn emit_arguments(&mut self, key: slog::Key, val: &std::fmt::Arguments<'_>) -> slog::Result {
        let _ = write!(self.0, " {key}={val}");
        Ok(())
    }
}

/// The logger handed to `RawNode`, tagged with the node id.
pub(crate) fn raft_logger(id: u64) -> slog::Logger {
    slog::Logger::root(TracingDrain.fuse(), slog::o!("node" => id))
}
