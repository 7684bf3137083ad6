//! Hostile input: whatever the bytes, every decoder returns a value or an error, never a
//! panic, and never reserves room for more than the frame holds. Framing and the
//! four-letter-word hook are pinned at their edges.

use proptest::prelude::*;

use wire::frame::{self, Check, FrameError, DEFAULT_MAX_FRAME};
use wire::ops::auth::{AuthPacket, GetSaslRequest, SetSaslResponse};
use wire::ops::check::CheckVersionRequest;
use wire::ops::children::{
    GetAllChildrenNumberRequest, GetAllChildrenNumberResponse, GetChildren2Response,
    GetChildrenRequest, GetChildrenResponse,
};
use wire::ops::create::{
    Create2Response, CreateRequest, CreateResponse, CreateTtlRequest, DeleteContainerRequest,
};
use wire::ops::data::{GetDataRequest, GetDataResponse, SetDataRequest, SetDataResponse};
use wire::ops::delete::DeleteRequest;
use wire::ops::ephemerals::{GetEphemeralsRequest, GetEphemeralsResponse};
use wire::ops::exists::{ExistsRequest, ExistsResponse};
use wire::ops::get_acl::{GetAclRequest, GetAclResponse};
use wire::ops::multi::MultiHeader;
use wire::ops::reconfig::ReconfigRequest;
use wire::ops::set_acl::{SetAclRequest, SetAclResponse};
use wire::ops::sync::{SyncRequest, SyncResponse};
use wire::ops::watches::{AddWatchRequest, ErrorResponse, SetWatches, SetWatches2, WatchesRequest};
use wire::ops::who_am_i::{ClientInfo, WhoAmIResponse};
use wire::{
    decode_connect_frame, decode_reply_frame, decode_request_frame, Acl, ConnectRequest,
    ConnectResponse, DecodeError, FourLetterWord, Id, OpCode, Record, ReplyHeader, Request,
    RequestHeader, Response, Stat, WatcherEvent, Writer,
};

/// Feeds `b` to every decoder the crate has. Results are ignored: the point is that each
/// returns.
fn decode_everything(b: &[u8]) {
    macro_rules! all {
        ($($t:ty),* $(,)?) => { $( let _ = <$t>::from_bytes(b); )* };
    }
    all!(
        Id,
        Acl,
        Stat,
        RequestHeader,
        ReplyHeader,
        WatcherEvent,
        ConnectRequest,
        ConnectResponse,
        MultiHeader,
        CreateRequest,
        CreateTtlRequest,
        CreateResponse,
        Create2Response,
        DeleteContainerRequest,
        DeleteRequest,
        ExistsRequest,
        ExistsResponse,
        GetDataRequest,
        GetDataResponse,
        SetDataRequest,
        SetDataResponse,
        GetAclRequest,
        GetAclResponse,
        SetAclRequest,
        SetAclResponse,
        GetChildrenRequest,
        GetChildrenResponse,
        GetChildren2Response,
        GetAllChildrenNumberRequest,
        GetAllChildrenNumberResponse,
        SyncRequest,
        SyncResponse,
        CheckVersionRequest,
        ReconfigRequest,
        WatchesRequest,
        SetWatches,
        SetWatches2,
        AddWatchRequest,
        ErrorResponse,
        AuthPacket,
        GetSaslRequest,
        SetSaslResponse,
        GetEphemeralsRequest,
        GetEphemeralsResponse,
        ClientInfo,
        WhoAmIResponse,
    );
    for op in OpCode::ALL {
        let _ = Request::decode(op.code(), b);
        let _ = Response::decode(op, b);
    }
    let _ = decode_request_frame(b);
    let _ = decode_connect_frame(b);
    let _ = decode_reply_frame(b);
    let _ = frame::check(b, DEFAULT_MAX_FRAME);
    if b.len() >= 4 {
        let _ = FourLetterWord::detect([b[0], b[1], b[2], b[3]]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic_any_decoder(b in prop::collection::vec(any::<u8>(), 0..300)) {
        decode_everything(&b);
    }

    /// Random bodies behind a real header, so every opcode's decoder is reached, not only
    /// the header check. Small length-like words (-1, 0, 1, 2) are made likely so strings,
    /// vectors and multi headers get past their first field.
    #[test]
    fn random_bodies_behind_every_opcode_never_panic(
        op in prop::sample::select(OpCode::ALL.to_vec()),
        words in prop::collection::vec(prop_oneof![Just(-1i32), Just(0), Just(1), Just(2), Just(13), any::<i32>()], 0..24),
        tail in prop::collection::vec(any::<u8>(), 0..16),
    ) {
        let mut w = Writer::new();
        RequestHeader { xid: 1, op_type: op.code() }.encode(&mut w);
        for x in words {
            w.write_i32(x);
        }
        w.buf.extend_from_slice(&tail);
        decode_everything(&w.buf);
        decode_everything(&w.buf[8..]);
    }
}

// ---- lengths --------------------------------------------------------------------------

#[test]
fn string_length_minus_two_is_bad_length() {
    let b = [0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 0];
    assert_eq!(
        DeleteRequest::from_bytes(&b).unwrap_err(),
        DecodeError::BadLength {
            what: "DeleteRequest.path",
            len: -2,
            at: 0
        }
    );
}

#[test]
fn string_length_i32_max_is_truncated_before_allocating() {
    let b = [0x7f, 0xff, 0xff, 0xff, b'/', b'a'];
    assert_eq!(
        SyncRequest::from_bytes(&b).unwrap_err(),
        DecodeError::Truncated {
            what: "SyncRequest.path",
            at: 0
        }
    );
}

#[test]
fn buffer_length_past_frame_end_is_truncated() {
    // SetSaslResponse{token}: claims 5 bytes, has 4.
    let b = [0, 0, 0, 5, 1, 2, 3, 4];
    assert_eq!(
        SetSaslResponse::from_bytes(&b).unwrap_err(),
        DecodeError::Truncated {
            what: "SetSaslResponse.token",
            at: 0
        }
    );
    assert_eq!(
        SetSaslResponse::from_bytes(&[0x80, 0, 0, 0]).unwrap_err(),
        DecodeError::BadLength {
            what: "SetSaslResponse.token",
            len: i32::MIN,
            at: 0
        }
    );
}

#[test]
fn vector_count_minus_two_is_bad_length() {
    let b = [0xff, 0xff, 0xff, 0xfe];
    assert_eq!(
        GetChildrenResponse::from_bytes(&b).unwrap_err(),
        DecodeError::BadLength {
            what: "GetChildrenResponse.children",
            len: -2,
            at: 0
        }
    );
}

#[test]
fn null_vector_decodes_as_empty() {
    assert_eq!(
        GetChildrenResponse::from_bytes(&[0xff; 4]).unwrap(),
        GetChildrenResponse { children: vec![] }
    );
}

/// A 12-byte frame claiming i32::MAX ACLs: were the count trusted, `Vec::with_capacity`
/// would ask for ~120 GB and abort the test process.
#[test]
fn huge_vector_count_in_a_tiny_frame_is_refused_without_allocating() {
    let b = [0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(
        GetAclResponse::from_bytes(&b).unwrap_err(),
        DecodeError::Truncated {
            what: "GetAclResponse.acl",
            at: 0
        }
    );
    let b = [0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0];
    assert_eq!(
        GetChildrenResponse::from_bytes(&b).unwrap_err(),
        DecodeError::Truncated {
            what: "GetChildrenResponse.children",
            at: 0
        }
    );
}

/// The count is weighed against each element's smallest encoding (an ACL is at least 12
/// bytes) before anything is reserved: 10 ACLs cannot fit in 100 bytes, so the error names
/// the count, not an element that ran off the end.
#[test]
fn vector_count_is_checked_against_element_size_before_reserving() {
    let mut w = Writer::new();
    w.write_string("/a");
    w.write_buffer(None);
    let count_at = w.len();
    w.write_i32(10);
    w.buf.extend_from_slice(&[0; 100]);
    assert_eq!(
        CreateRequest::from_bytes(&w.buf).unwrap_err(),
        DecodeError::Truncated {
            what: "CreateRequest.acl",
            at: count_at
        }
    );
    // 8 ACLs of 12 zero bytes each fit in 100: they decode (as perms 0, empty id).
    let mut w = Writer::new();
    w.write_string("/a");
    w.write_buffer(None);
    w.write_i32(8);
    w.buf.extend_from_slice(&[0; 96]);
    w.write_i32(0);
    assert_eq!(
        CreateRequest::from_bytes(&w.buf).unwrap().acl,
        vec![Acl::new(0, "", ""); 8]
    );
}

#[test]
fn invalid_utf8_path_is_an_error() {
    let b = [0, 0, 0, 2, b'/', 0xff, 0];
    assert_eq!(
        ExistsRequest::from_bytes(&b).unwrap_err(),
        DecodeError::BadUtf8 {
            what: "ExistsRequest.path",
            at: 0
        }
    );
}

#[test]
fn any_nonzero_boolean_byte_reads_true() {
    let b = [0, 0, 0, 1, b'/', 7];
    assert_eq!(
        GetDataRequest::from_bytes(&b).unwrap(),
        GetDataRequest {
            path: "/".into(),
            watch: true
        }
    );
}

// ---- opcodes and multi ------------------------------------------------------------------

fn frame_body(xid: i32, op: i32, body: &[u8]) -> Vec<u8> {
    let mut w = Writer::new();
    RequestHeader { xid, op_type: op }.encode(&mut w);
    w.buf.extend_from_slice(body);
    w.into_inner()
}

#[test]
fn server_internal_opcodes_are_unknown_to_clients() {
    for op in [OpCode::Notification, OpCode::CreateSession, OpCode::Error] {
        assert_eq!(
            decode_request_frame(&frame_body(1, op.code(), &[])).unwrap_err(),
            (
                Some(RequestHeader {
                    xid: 1,
                    op_type: op.code()
                }),
                DecodeError::UnknownOpcode(op.code())
            )
        );
    }
}

fn multi_body(ops: &[(i32, Vec<u8>)], end: bool) -> Vec<u8> {
    let mut w = Writer::new();
    for (op, body) in ops {
        MultiHeader {
            op_type: *op,
            done: false,
            err: -1,
        }
        .encode(&mut w);
        w.buf.extend_from_slice(body);
    }
    if end {
        MultiHeader::END.encode(&mut w);
    }
    w.into_inner()
}

#[test]
fn multi_holding_a_read_op_is_invalid() {
    let get = GetDataRequest {
        path: "/a".into(),
        watch: false,
    }
    .to_bytes();
    assert_eq!(
        Request::decode(14, &multi_body(&[(4, get)], true)).unwrap_err(),
        DecodeError::Invalid("multi holds a read op")
    );
}

#[test]
fn multi_read_holding_a_write_op_is_invalid() {
    let del = DeleteRequest {
        path: "/a".into(),
        version: -1,
    }
    .to_bytes();
    assert_eq!(
        Request::decode(22, &multi_body(&[(2, del)], true)).unwrap_err(),
        DecodeError::Invalid("multiRead holds a write op")
    );
}

#[test]
fn unknown_or_nested_op_inside_multi_is_invalid_not_unknown_opcode() {
    for op in [99, 14, 22, 11, 0] {
        let (h, e) = decode_request_frame(&frame_body(3, 14, &multi_body(&[(op, vec![])], true)))
            .unwrap_err();
        assert_eq!(
            h,
            Some(RequestHeader {
                xid: 3,
                op_type: 14
            })
        );
        assert_eq!(
            e,
            DecodeError::Invalid("op not allowed inside multi"),
            "sub-op {op}"
        );
    }
}

#[test]
fn multi_without_end_marker_is_truncated() {
    let del = DeleteRequest {
        path: "/a".into(),
        version: -1,
    }
    .to_bytes();
    assert!(matches!(
        Request::decode(14, &multi_body(&[(2, del)], false)).unwrap_err(),
        DecodeError::Truncated {
            what: "MultiHeader.op_type",
            ..
        }
    ));
}

#[test]
fn empty_multi_is_just_the_end_marker() {
    assert_eq!(
        Request::decode(14, &multi_body(&[], true)).unwrap(),
        Request::Multi(vec![])
    );
}

#[test]
fn multi_result_with_unexpected_type_is_invalid() {
    let mut w = Writer::new();
    MultiHeader {
        op_type: OpCode::Exists.code(),
        done: false,
        err: 0,
    }
    .encode(&mut w);
    assert_eq!(
        Response::decode(OpCode::Multi, &w.buf).unwrap_err(),
        DecodeError::Invalid("unexpected op type in multi result")
    );
}

// ---- framing ----------------------------------------------------------------------------

fn with_len(len: i32, body_bytes: usize) -> Vec<u8> {
    let mut v = len.to_be_bytes().to_vec();
    v.resize(4 + body_bytes, 0);
    v
}

#[test]
fn partial_header_needs_more_bytes() {
    for n in 0..4 {
        assert_eq!(
            frame::check(&[0u8; 3][..n], DEFAULT_MAX_FRAME),
            Ok(Check::NeedMore(4 - n))
        );
    }
}

#[test]
fn frame_of_exactly_the_limit_is_accepted() {
    let max = DEFAULT_MAX_FRAME;
    assert_eq!(
        frame::check(&with_len(max as i32, max), max),
        Ok(Check::Frame { len: max })
    );
    assert_eq!(
        frame::check(&with_len(max as i32, 10), max),
        Ok(Check::NeedMore(max - 10))
    );
}

#[test]
fn frame_one_over_the_limit_is_a_protocol_error_from_the_header_alone() {
    let max = DEFAULT_MAX_FRAME;
    let err = Err(FrameError::TooLarge { len: max + 1, max });
    assert_eq!(frame::check(&with_len(max as i32 + 1, 0), max), err);
    assert_eq!(
        frame::check(&with_len(i32::MAX, 0), max),
        Err(FrameError::TooLarge {
            len: i32::MAX as usize,
            max
        })
    );
}

#[test]
fn negative_frame_length_is_a_protocol_error() {
    assert_eq!(
        frame::check(&with_len(-1, 0), DEFAULT_MAX_FRAME),
        Err(FrameError::Negative(-1))
    );
    assert_eq!(
        frame::check(&with_len(i32::MIN, 0), DEFAULT_MAX_FRAME),
        Err(FrameError::Negative(i32::MIN))
    );
}

#[test]
fn zero_length_frame_is_whole_at_four_bytes() {
    assert_eq!(
        frame::check(&[0, 0, 0, 0], DEFAULT_MAX_FRAME),
        Ok(Check::Frame { len: 0 })
    );
}

#[test]
fn check_reports_only_the_first_of_two_buffered_frames() {
    let mut b = frame::frame(b"abc");
    b.extend_from_slice(&frame::frame(b"defgh"));
    assert_eq!(
        frame::check(&b, DEFAULT_MAX_FRAME),
        Ok(Check::Frame { len: 3 })
    );
    assert_eq!(
        frame::check(&b[7..], DEFAULT_MAX_FRAME),
        Ok(Check::Frame { len: 5 })
    );
}

#[test]
fn frame_prepends_big_endian_length() {
    assert_eq!(
        frame::frame(&[9; 258]),
        [&[0, 0, 1, 2][..], &[9; 258][..]].concat()
    );
}

// ---- four-letter words ------------------------------------------------------------------

#[test]
fn every_four_letter_word_is_detected_from_its_bytes() {
    assert_eq!(FourLetterWord::ALL.len(), 18);
    for w in FourLetterWord::ALL {
        let b: [u8; 4] = w.as_str().as_bytes().try_into().unwrap();
        assert_eq!(FourLetterWord::detect(b), Some(w));
        assert_eq!(FourLetterWord::from_name(w.as_str()), Some(w));
    }
    assert_eq!(
        i32::from_be_bytes(*b"ruok"),
        0x7275_6f6b,
        "ZooKeeper's FourLetterCommands.ruokCmd is \"ruok\" read as a big-endian int, 0x72756f6b"
    );
}

#[test]
fn no_four_letter_word_collides_with_a_valid_frame_length() {
    for w in FourLetterWord::ALL {
        let b: [u8; 4] = w.as_str().as_bytes().try_into().unwrap();
        let len = i32::from_be_bytes(b);
        assert!(len > 1 << 20, "{} reads as {len}", w.as_str());
        assert!(matches!(
            frame::check(&b, DEFAULT_MAX_FRAME),
            Err(FrameError::TooLarge { .. })
        ));
    }
}

#[test]
fn real_handshake_lengths_and_near_misses_are_not_words() {
    for len in [44i32, 45, 0, DEFAULT_MAX_FRAME as i32] {
        assert_eq!(FourLetterWord::detect(len.to_be_bytes()), None);
    }
    // Detection is exact and case-sensitive, as ZooKeeper's int lookup is.
    for near in [*b"RUOK", *b"ruo\0", *b"imok", *b"\0ruo"] {
        assert_eq!(FourLetterWord::detect(near), None, "{near:?}");
    }
}

#[test]
fn a_borrowed_string_reads_as_the_owned_one_does() {
    use wire::jute::Reader;
    // "/a", then null, then bad UTF-8.
    let b = [
        0, 0, 0, 2, b'/', b'a', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0xff,
    ];
    let mut r = Reader::new(&b);
    let path: &str = r.read_str("path").unwrap();
    assert_eq!(path, "/a");
    assert!(
        std::ptr::eq(path.as_ptr(), b[4..].as_ptr()),
        "borrowed, not copied"
    );
    assert_eq!(r.read_str("null").unwrap(), "");
    assert_eq!(
        r.read_str("bad").unwrap_err(),
        DecodeError::BadUtf8 {
            what: "bad",
            at: 10
        }
    );
    let mut owned = Reader::new(&b);
    assert_eq!(owned.read_string("path").unwrap(), "/a");
    assert_eq!(owned.read_opt_string("null").unwrap(), None);
    assert_eq!(
        owned.read_opt_string("bad").unwrap_err(),
        DecodeError::BadUtf8 {
            what: "bad",
            at: 10
        }
    );
}
