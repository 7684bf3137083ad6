//! The payload of a log-segment record: one change to the raft log store (`storage.rs`), as it
//! is appended (and synced) and as a start reads it back.
//!
//! A record says what a write did, not how to redo it in another store: which metadata it set
//! (hard state, an installed snapshot that resets the log, the newest snapshot's metadata, the
//! membership, the log's start, the rejoining mark) and which entries it appended. The entries are
//! stored as raft-rs encodes them (`Entry` protobuf), each after its term and length, so that a
//! start can index them (where each entry sits, and its term) without decoding them, and a read
//! can take an entry's bytes straight from the file.
//!
//! Layout, little-endian:
//! `version u8 (1) | flags u8 | [hard_state] | [install] | [snapshot_meta] | [conf_state] |
//!  [first_index u64, truncated_term u64] | [rejoining u8] | count u32 | [first u64 |
//!  (term u64, len u32, Entry bytes) x count]`,
//! where each bracketed protobuf is `len u32 | bytes`, present when its flag is set, and `first`
//! (the index of the first entry; the rest follow on) is present when `count > 0`.

use protobuf::Message as _;
use raft::eraftpb::{ConfState, Entry, HardState, SnapshotMetadata};

use crate::ConsensusError;

const VERSION: u8 = 1;
const HARD_STATE: u8 = 1;
const INSTALL: u8 = 1 << 1;
const SNAPSHOT_META: u8 = 1 << 2;
const CONF_STATE: u8 = 1 << 3;
const FIRST_INDEX: u8 = 1 << 4;
const REJOINING: u8 = 1 << 5;
const KNOWN: u8 = HARD_STATE | INSTALL | SNAPSHOT_META | CONF_STATE | FIRST_INDEX | REJOINING;

/// One change to the store. `install` resets the log to start after the snapshot (its
/// metadata is also the newest snapshot's, and its membership the store's).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Change {
    pub hard_state: Option<HardState>,
    pub install: Option<SnapshotMetadata>,
    pub snapshot_meta: Option<SnapshotMetadata>,
    pub conf_state: Option<ConfState>,
    /// The log's first index and the term of the entry before it.
    pub first_index: Option<(u64, u64)>,
    pub rejoining: Option<bool>,
}

/// An entry as a record holds it: its index and term, and where its bytes are in the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub index: u64,
    pub term: u64,
    pub offset: u32,
    pub len: u32,
}

fn put_message(out: &mut Vec<u8>, m: &impl protobuf::Message) {
    let len = m.compute_size();
    out.extend_from_slice(&len.to_le_bytes());
    // Encoding an in-memory message only fails on missing required fields; eraftpb has none.
    m.write_to_vec(out).expect("eraftpb messages always encode");
}

/// Encodes `change` and `entries` (contiguous) into `out` (cleared first); each entry's span.
pub fn encode(change: &Change, entries: &[Entry], out: &mut Vec<u8>, spans: &mut Vec<Span>) {
    out.clear();
    spans.clear();
    let mut flags = 0;
    for (present, flag) in [
        (change.hard_state.is_some(), HARD_STATE),
        (change.install.is_some(), INSTALL),
        (change.snapshot_meta.is_some(), SNAPSHOT_META),
        (change.conf_state.is_some(), CONF_STATE),
        (change.first_index.is_some(), FIRST_INDEX),
        (change.rejoining.is_some(), REJOINING),
    ] {
        if present {
            flags |= flag;
        }
    }
    out.push(VERSION);
    out.push(flags);
    if let Some(hs) = &change.hard_state {
        put_message(out, hs);
    }
    if let Some(m) = &change.install {
        put_message(out, m);
    }
    if let Some(m) = &change.snapshot_meta {
        put_message(out, m);
    }
    if let Some(cs) = &change.conf_state {
        put_message(out, cs);
    }
    if let Some((first, term)) = change.first_index {
        out.extend_from_slice(&first.to_le_bytes());
        out.extend_from_slice(&term.to_le_bytes());
    }
    if let Some(r) = change.rejoining {
        out.push(u8::from(r));
    }
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    if let Some(first) = entries.first() {
        out.extend_from_slice(&first.index.to_le_bytes());
    }
    for e in entries {
        out.extend_from_slice(&e.term.to_le_bytes());
        let len = e.compute_size();
        out.extend_from_slice(&len.to_le_bytes());
        let offset = out.len() as u32;
        e.write_to_vec(out).expect("eraftpb messages always encode");
        spans.push(Span {
            index: e.index,
            term: e.term,
            offset,
            len,
        });
    }
}

/// Reads a payload: fields in order, each checked against what is left.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ConsensusError> {
        if self.bytes.len() - self.at < n {
            return Err(ConsensusError::Corrupt(format!(
                "log record ends at {} where {n} more bytes were expected at {}",
                self.bytes.len(),
                self.at
            )));
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, ConsensusError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, ConsensusError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }

    fn u64(&mut self) -> Result<u64, ConsensusError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }

    fn message<M: protobuf::Message>(&mut self, what: &str) -> Result<M, ConsensusError> {
        let len = self.u32()? as usize;
        let bytes = self.take(len)?;
        M::parse_from_bytes(bytes)
            .map_err(|e| ConsensusError::Corrupt(format!("log record's {what}: {e}")))
    }
}

/// Decodes a payload; the change and its entries' spans (appended to `spans`, cleared first).
/// The entries themselves are left in the payload (`entry` decodes one).
pub fn decode(payload: &[u8], spans: &mut Vec<Span>) -> Result<Change, ConsensusError> {
    spans.clear();
    let mut r = Reader {
        bytes: payload,
        at: 0,
    };
    let version = r.u8()?;
    if version != VERSION {
        return Err(ConsensusError::Corrupt(format!(
            "log record of version {version}; this paddock reads version {VERSION}"
        )));
    }
    let flags = r.u8()?;
    if flags & !KNOWN != 0 {
        return Err(ConsensusError::Corrupt(format!(
            "log record with unknown flags {flags:#x}"
        )));
    }
    let mut change = Change::default();
    if flags & HARD_STATE != 0 {
        change.hard_state = Some(r.message("hard state")?);
    }
    if flags & INSTALL != 0 {
        change.install = Some(r.message("installed snapshot")?);
    }
    if flags & SNAPSHOT_META != 0 {
        change.snapshot_meta = Some(r.message("snapshot metadata")?);
    }
    if flags & CONF_STATE != 0 {
        change.conf_state = Some(r.message("membership")?);
    }
    if flags & FIRST_INDEX != 0 {
        change.first_index = Some((r.u64()?, r.u64()?));
    }
    if flags & REJOINING != 0 {
        change.rejoining = Some(r.u8()? != 0);
    }
    let count = r.u32()?;
    if count > 0 {
        let first = r.u64()?;
        for i in 0..u64::from(count) {
            let term = r.u64()?;
            let len = r.u32()?;
            let offset = r.at as u32;
            r.take(len as usize)?;
            spans.push(Span {
                index: first + i,
                term,
                offset,
                len,
            });
        }
    }
    if r.at != payload.len() {
        return Err(ConsensusError::Corrupt(format!(
            "log record has {} bytes after its end",
            payload.len() - r.at
        )));
    }
    Ok(change)
}

/// Decodes one entry's bytes, checking that it is the one expected.
pub fn entry(bytes: &[u8], index: u64, term: u64) -> Result<Entry, ConsensusError> {
    let e = Entry::parse_from_bytes(bytes)
        .map_err(|e| ConsensusError::Corrupt(format!("log entry {index}: {e}")))?;
    if e.index != index || e.term != term {
        return Err(ConsensusError::Corrupt(format!(
            "log entry {index} (term {term}) reads back as entry {} (term {})",
            e.index, e.term
        )));
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(from: u64, n: u64, term: u64) -> Vec<Entry> {
        (from..from + n)
            .map(|index| Entry {
                index,
                term,
                data: vec![index as u8; index as usize % 7].into(),
                ..Default::default()
            })
            .collect()
    }

    #[test]
    fn every_field_reads_back_and_entries_from_their_spans() {
        let change = Change {
            hard_state: Some(HardState {
                term: 4,
                vote: 2,
                commit: 9,
                ..Default::default()
            }),
            install: Some(SnapshotMetadata {
                index: 7,
                term: 3,
                ..Default::default()
            }),
            snapshot_meta: Some(SnapshotMetadata {
                index: 5,
                term: 2,
                ..Default::default()
            }),
            conf_state: Some(ConfState {
                voters: vec![1, 2, 3],
                ..Default::default()
            }),
            first_index: Some((8, 3)),
            rejoining: Some(true),
        };
        let es = entries(8, 5, 4);
        let (mut out, mut spans, mut back) = (Vec::new(), Vec::new(), Vec::new());
        encode(&change, &es, &mut out, &mut spans);
        assert_eq!(decode(&out, &mut back).unwrap(), change);
        assert_eq!(back, spans);
        for (s, e) in spans.iter().zip(&es) {
            let bytes = &out[s.offset as usize..(s.offset + s.len) as usize];
            assert_eq!(&entry(bytes, s.index, s.term).unwrap(), e);
        }
        // Nothing but a commit hint, and nothing at all.
        for change in [
            Change {
                hard_state: change.hard_state.clone(),
                ..Default::default()
            },
            Change::default(),
        ] {
            encode(&change, &[], &mut out, &mut spans);
            assert_eq!(decode(&out, &mut back).unwrap(), change);
            assert!(back.is_empty());
        }
    }

    #[test]
    fn a_short_a_long_or_a_foreign_payload_is_refused_not_misread() {
        let (mut out, mut spans) = (Vec::new(), Vec::new());
        encode(
            &Change {
                first_index: Some((3, 1)),
                ..Default::default()
            },
            &entries(3, 2, 1),
            &mut out,
            &mut spans,
        );
        for cut in 0..out.len() {
            let err = decode(&out[..cut], &mut Vec::new()).unwrap_err();
            assert!(matches!(err, ConsensusError::Corrupt(_)), "{cut}: {err}");
        }
        let mut long = out.clone();
        long.push(0);
        assert!(decode(&long, &mut Vec::new())
            .unwrap_err()
            .to_string()
            .contains("1 bytes after its end"));
        let mut foreign = out.clone();
        foreign[0] = 9;
        assert!(decode(&foreign, &mut Vec::new())
            .unwrap_err()
            .to_string()
            .contains("version 9"));
        let mut flags = out;
        flags[1] |= 0x80;
        assert!(decode(&flags, &mut Vec::new())
            .unwrap_err()
            .to_string()
            .contains("unknown flags"));
        // An entry read from the wrong place is caught by its index and term.
        let bytes = &spans[0];
        let (mut out2, mut spans2) = (Vec::new(), Vec::new());
        encode(
            &Change::default(),
            &entries(3, 1, 1),
            &mut out2,
            &mut spans2,
        );
        let e = &out2[spans2[0].offset as usize..][..spans2[0].len as usize];
        assert!(entry(e, bytes.index + 1, 1).is_err());
    }
}
