//! ZooKeeper's numbers, pinned against `KeeperException.Code`, `ZooDefs.OpCode` and
//! `ClientCnxn`'s special xids of 3.9: a renumbered variant breaks clients
//! silently, so every number is spelled out here once more.

use std::collections::HashSet;

use wire::{xid, ErrorCode, OpCode};

#[test]
fn error_codes_have_zookeepers_numbers() {
    let expected = [
        (ErrorCode::Ok, 0),
        (ErrorCode::SystemError, -1),
        (ErrorCode::RuntimeInconsistency, -2),
        (ErrorCode::DataInconsistency, -3),
        (ErrorCode::ConnectionLoss, -4),
        (ErrorCode::MarshallingError, -5),
        (ErrorCode::Unimplemented, -6),
        (ErrorCode::OperationTimeout, -7),
        (ErrorCode::BadArguments, -8),
        (ErrorCode::UnknownSession, -12),
        (ErrorCode::NewConfigNoQuorum, -13),
        (ErrorCode::ReconfigInProgress, -14),
        (ErrorCode::ApiError, -100),
        (ErrorCode::NoNode, -101),
        (ErrorCode::NoAuth, -102),
        (ErrorCode::BadVersion, -103),
        (ErrorCode::NoChildrenForEphemerals, -108),
        (ErrorCode::NodeExists, -110),
        (ErrorCode::NotEmpty, -111),
        (ErrorCode::SessionExpired, -112),
        (ErrorCode::InvalidCallback, -113),
        (ErrorCode::InvalidAcl, -114),
        (ErrorCode::AuthFailed, -115),
        (ErrorCode::SessionMoved, -118),
        (ErrorCode::NotReadOnly, -119),
        (ErrorCode::EphemeralOnLocalSession, -120),
        (ErrorCode::NoWatcher, -121),
        (ErrorCode::RequestTimeout, -122),
        (ErrorCode::ReconfigDisabled, -123),
        (ErrorCode::SessionClosedRequireSaslAuth, -124),
        (ErrorCode::QuotaExceeded, -125),
        (ErrorCode::ThrottledOp, -127),
    ];
    assert_eq!(
        ErrorCode::ALL.len(),
        expected.len(),
        "ALL and this table disagree on the set of codes"
    );
    for (code, n) in expected {
        assert_eq!(code.code(), n, "{code:?}");
        assert_eq!(ErrorCode::from_code(n), Some(code));
        assert!(ErrorCode::ALL.contains(&code), "{code:?} missing from ALL");
    }
    for unknown in [-9, -126, -128, 1, i32::MIN] {
        assert_eq!(ErrorCode::from_code(unknown), None);
    }
}

#[test]
fn opcodes_have_zookeepers_numbers() {
    let expected = [
        (OpCode::Notification, 0),
        (OpCode::Create, 1),
        (OpCode::Delete, 2),
        (OpCode::Exists, 3),
        (OpCode::GetData, 4),
        (OpCode::SetData, 5),
        (OpCode::GetAcl, 6),
        (OpCode::SetAcl, 7),
        (OpCode::GetChildren, 8),
        (OpCode::Sync, 9),
        (OpCode::Ping, 11),
        (OpCode::GetChildren2, 12),
        (OpCode::Check, 13),
        (OpCode::Multi, 14),
        (OpCode::Create2, 15),
        (OpCode::Reconfig, 16),
        (OpCode::CheckWatches, 17),
        (OpCode::RemoveWatches, 18),
        (OpCode::CreateContainer, 19),
        (OpCode::DeleteContainer, 20),
        (OpCode::CreateTtl, 21),
        (OpCode::MultiRead, 22),
        (OpCode::Auth, 100),
        (OpCode::SetWatches, 101),
        (OpCode::Sasl, 102),
        (OpCode::GetEphemerals, 103),
        (OpCode::GetAllChildrenNumber, 104),
        (OpCode::SetWatches2, 105),
        (OpCode::AddWatch, 106),
        (OpCode::WhoAmI, 107),
        (OpCode::CreateSession, -10),
        (OpCode::CloseSession, -11),
        (OpCode::Error, -1),
    ];
    assert_eq!(OpCode::ALL.len(), expected.len());
    for (op, n) in expected {
        assert_eq!(op.code(), n, "{op:?}");
        assert_eq!(OpCode::from_code(n), Some(op));
    }
    assert_eq!(
        OpCode::ALL
            .iter()
            .map(|o| o.code())
            .collect::<HashSet<_>>()
            .len(),
        OpCode::ALL.len()
    );
    for unknown in [10, 23, 99, 108, -2, -12] {
        assert_eq!(OpCode::from_code(unknown), None, "{unknown}");
    }
}

#[test]
fn special_xids_match_the_java_client() {
    assert_eq!(
        (xid::NOTIFICATION, xid::PING, xid::AUTH, xid::SET_WATCHES),
        (-1, -2, -4, -8)
    );
}

#[test]
fn only_state_changing_ops_go_through_the_log() {
    let writes: HashSet<OpCode> = OpCode::ALL
        .iter()
        .copied()
        .filter(|o| o.is_write())
        .collect();
    let expected: HashSet<OpCode> = [
        OpCode::Create,
        OpCode::Create2,
        OpCode::CreateContainer,
        OpCode::CreateTtl,
        OpCode::Delete,
        OpCode::DeleteContainer,
        OpCode::SetData,
        OpCode::SetAcl,
        OpCode::Multi,
        OpCode::Reconfig,
        OpCode::CloseSession,
    ]
    .into();
    assert_eq!(writes, expected);
}

#[test]
fn undecodable_requests_map_to_unimplemented_or_marshalling_error() {
    use wire::{decode_request_frame, DecodeError};
    assert_eq!(
        DecodeError::UnknownOpcode(99).reply_code(),
        ErrorCode::Unimplemented
    );
    assert_eq!(
        DecodeError::Invalid("x").reply_code(),
        ErrorCode::MarshallingError
    );
    assert_eq!(
        DecodeError::Truncated { what: "x", at: 0 }.reply_code(),
        ErrorCode::MarshallingError
    );
    // An unknown sub-op inside multi is a bad body, not an unknown top-level opcode.
    let body = [
        0, 0, 0, 1, 0, 0, 0, 14, 0, 0, 0, 99, 0, 0xff, 0xff, 0xff, 0xff,
    ];
    assert_eq!(
        decode_request_frame(&body).unwrap_err().1.reply_code(),
        ErrorCode::MarshallingError
    );
    let body = [0, 0, 0, 1, 0, 0, 0, 99];
    assert_eq!(
        decode_request_frame(&body).unwrap_err().1.reply_code(),
        ErrorCode::Unimplemented
    );
}
