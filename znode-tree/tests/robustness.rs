//! Properties over random inputs: hostile bytes never panic, and a failed multi leaves the
//! state exactly as a no-op entry would (rollback is byte-exact).

use proptest::prelude::*;
use wire::ops::check::CheckVersionRequest;
use wire::ops::create::CreateRequest;
use wire::ops::data::SetDataRequest;
use wire::ops::delete::DeleteRequest;
use wire::{Acl, MultiResult, Request, Response};
use znode_tree::{Entry, Restore, Tree, TreeConfig, Txn};

fn path() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!["a", "b"]), 1..4)
        .prop_map(|v| format!("/{}", v.join("/")))
}

fn write_op() -> impl Strategy<Value = Request> {
    let data = prop::collection::vec(any::<u8>(), 0..4).prop_map(Some);
    prop_oneof![
        (path(), data.clone(), 0..5i32).prop_map(|(p, d, f)| {
            let req = CreateRequest {
                path: p,
                data: d,
                acl: Acl::open_unsafe(),
                flags: f,
            };
            if f == 4 {
                Request::CreateContainer(req)
            } else {
                Request::Create(req)
            }
        }),
        (path(), -1..2i32).prop_map(|(p, v)| Request::Delete(DeleteRequest {
            path: p,
            version: v
        })),
        (path(), data, -1..2i32).prop_map(|(p, d, v)| Request::SetData(SetDataRequest {
            path: p,
            data: d,
            version: v
        })),
        (path(), -1..2i32).prop_map(|(p, v)| Request::Check(CheckVersionRequest {
            path: p,
            version: v
        })),
    ]
}

fn entry(txn: Txn) -> Entry {
    Entry {
        session_id: 3,
        xid: 1,
        time_ms: 42,
        auth: vec![],
        via: None,
        txn,
    }
}

fn build(prefix: &[Request]) -> Tree {
    let mut t = Tree::new(TreeConfig::default());
    t.apply(
        1,
        &entry(Txn::CreateSession {
            timeout_ms: 1,
            password: [1; 16],
        }),
    );
    // Quota bookkeeping on /a makes rollback cover in-place stats updates too.
    for (i, p) in [
        "/a",
        "/zookeeper/quota/a",
        "/zookeeper/quota/a/zookeeper_limits",
        "/zookeeper/quota/a/zookeeper_stats",
    ]
    .iter()
    .enumerate()
    {
        let req = CreateRequest {
            path: (*p).into(),
            data: Some(b"count=-1,bytes=-1".to_vec()),
            acl: Acl::open_unsafe(),
            flags: 0,
        };
        t.apply(2 + i as i64, &entry(Txn::Write(Request::Create(req))));
    }
    for (i, op) in prefix.iter().enumerate() {
        let op = if let Request::Check(_) = op {
            Request::Multi(vec![op.clone()])
        } else {
            op.clone()
        };
        t.apply(10 + i as i64, &entry(Txn::Write(op)));
    }
    t
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn failed_multi_is_byte_exact_no_op(prefix in prop::collection::vec(write_op(), 0..20),
                                        ops in prop::collection::vec(write_op(), 1..8)) {
        let mut a = build(&prefix);
        let mut b = build(&prefix);
        let z = 1000;
        let applied = a.apply(z, &entry(Txn::Write(Request::Multi(ops.clone()))));
        b.apply(z, &entry(Txn::Write(Request::Ping)));
        let Ok(Response::Multi(results)) = applied.reply else { panic!("multi reply {:?}", applied.reply) };
        prop_assert_eq!(results.len(), ops.len());
        let failed = results.iter().any(|r| matches!(r, MultiResult::Error(e) if *e != 0));
        if failed {
            prop_assert!(applied.changes.is_empty());
            prop_assert_eq!(a.digest(), b.digest());
            prop_assert_eq!(a.snapshot(), b.snapshot());
            prop_assert_eq!(a.approximate_data_size(), b.approximate_data_size());
            prop_assert_eq!(a.node_count(), b.node_count());
        } else {
            let restored = Tree::restore(&a.snapshot(), TreeConfig::default()).unwrap();
            prop_assert_eq!(restored.digest(), a.digest());
        }
    }

    /// Random byte edits past the header of a real snapshot, the checksum recomputed, read as
    /// either version: restore answers Ok or Err, never panics, and whatever it accepts
    /// re-encodes to a snapshot that restores to the same digest.
    #[test]
    fn corrupted_snapshots_never_panic(prefix in prop::collection::vec(write_op(), 0..20),
                                       edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
                                       version in 1u8..3,
                                       piece in 1usize..300) {
        let mut body = build(&prefix).snapshot();
        body.truncate(body.len() - 4);
        body[4] = version;
        for (at, byte) in edits {
            let i = 5 + at.index(body.len() - 5);
            body[i] = byte;
        }
        let crc = crc32fast::hash(&body);
        body.extend_from_slice(&crc.to_be_bytes());
        let whole = Tree::restore(&body, TreeConfig::default());
        // Fed in pieces, the same bytes get the same answer (the digest, or an error).
        let mut r = Restore::new(TreeConfig::default());
        let mut fed = Ok(());
        for piece in body.chunks(piece) {
            fed = fed.and_then(|()| r.feed(piece));
        }
        let pieces = fed.and_then(|()| r.finish());
        prop_assert_eq!(
            pieces.as_ref().map(|t| t.digest()).is_ok(),
            whole.as_ref().map(|t| t.digest()).is_ok()
        );
        if let (Ok(a), Ok(b)) = (&whole, &pieces) {
            prop_assert_eq!(a.digest(), b.digest());
        }
        if let Ok(t) = whole {
            let again = Tree::restore(&t.snapshot(), TreeConfig::default());
            prop_assert_eq!(again.map(|a| a.digest()), Ok(t.digest()));
        }
    }

    #[test]
    fn hostile_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = Entry::decode(&bytes);
        let mut with_version = vec![1u8];
        with_version.extend_from_slice(&bytes);
        let _ = Entry::decode(&with_version);
        let _ = Tree::restore(&bytes, TreeConfig::default());
        for version in [1u8, 2] {
            let mut framed = b"PDKT".to_vec();
            framed.push(version);
            framed.extend_from_slice(&bytes);
            let crc = crc32fast::hash(&framed);
            framed.extend_from_slice(&crc.to_be_bytes());
            let _ = Tree::restore(&framed, TreeConfig::default());
        }
    }
}
