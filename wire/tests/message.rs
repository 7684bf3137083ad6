//! The server's seam: whole request frames in, whole reply and notification frames out.

use wire::ops::data::{GetDataRequest, GetDataResponse};
use wire::ops::delete::DeleteRequest;
use wire::{
    decode_request_frame, encode_notification, encode_reply, DecodeError, ReplyHeader, Request,
    RequestHeader, Response, Stat, WatcherEvent, Writer,
};

#[test]
fn request_frame_decodes_header_and_body() {
    // xid 7, getData(4), "/a", watch=true
    let body = [0, 0, 0, 7, 0, 0, 0, 4, 0, 0, 0, 2, b'/', b'a', 1];
    let (h, req) = decode_request_frame(&body).unwrap();
    assert_eq!(h, RequestHeader { xid: 7, op_type: 4 });
    assert_eq!(
        req,
        Request::GetData(GetDataRequest {
            path: "/a".into(),
            watch: true
        })
    );
}

#[test]
fn bad_body_still_returns_header_for_marshalling_error_reply() {
    // delete(2) whose path claims 100 bytes but the frame ends.
    let body = [0, 0, 0, 9, 0, 0, 0, 2, 0, 0, 0, 100, b'/'];
    let (h, e) = decode_request_frame(&body).unwrap_err();
    assert_eq!(h, Some(RequestHeader { xid: 9, op_type: 2 }));
    assert!(matches!(e, DecodeError::Truncated { .. }), "{e:?}");
}

#[test]
fn unknown_opcode_returns_header_and_unknown_opcode() {
    let body = [0, 0, 0, 3, 0, 0, 0, 99];
    assert_eq!(
        decode_request_frame(&body).unwrap_err(),
        (
            Some(RequestHeader {
                xid: 3,
                op_type: 99
            }),
            DecodeError::UnknownOpcode(99)
        )
    );
}

#[test]
fn short_header_returns_no_header() {
    let (h, e) = decode_request_frame(&[0, 0, 0, 1, 0, 0]).unwrap_err();
    assert_eq!(h, None);
    assert!(
        matches!(
            e,
            DecodeError::Truncated {
                what: "RequestHeader.op_type",
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn trailing_bytes_after_the_record_are_ignored_like_java() {
    let mut body = vec![0, 0, 0, 5, 0, 0, 0, 2, 0, 0, 0, 2, b'/', b'x', 0, 0, 0, 3];
    body.extend_from_slice(b"junk");
    let (_, req) = decode_request_frame(&body).unwrap();
    assert_eq!(
        req,
        Request::Delete(DeleteRequest {
            path: "/x".into(),
            version: 3
        })
    );
}

#[test]
fn error_reply_is_a_bare_header_frame() {
    let mut w = Writer::new();
    encode_reply(
        &mut w,
        &ReplyHeader {
            xid: 5,
            zxid: 0x10,
            err: -101,
        },
        None,
    );
    assert_eq!(
        w.into_inner(),
        vec![0, 0, 0, 16, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0x10, 0xff, 0xff, 0xff, 0x9b]
    );
}

#[test]
fn reply_with_body_has_length_covering_header_and_body() {
    let stat = Stat {
        version: 1,
        data_length: 2,
        ..Stat::default()
    };
    let body = Response::GetData(GetDataResponse {
        data: Some(b"hi".to_vec()),
        stat: stat.clone(),
    });
    let mut w = Writer::new();
    w.write_u8(0xaa); // frames append: earlier bytes stay untouched
    encode_reply(
        &mut w,
        &ReplyHeader {
            xid: 1,
            zxid: 2,
            err: 0,
        },
        Some(&body),
    );
    let out = w.into_inner();
    assert_eq!(out[0], 0xaa);
    let len = i32::from_be_bytes(out[1..5].try_into().unwrap()) as usize;
    assert_eq!(len, 16 + 4 + 2 + 68);
    assert_eq!(out.len(), 1 + 4 + len);
    assert_eq!(&out[5..9], &[0, 0, 0, 1]);
    assert_eq!(&out[21..27], &[0, 0, 0, 2, b'h', b'i']);
}

#[test]
fn empty_response_writes_the_same_bytes_as_none() {
    let h = ReplyHeader {
        xid: 4,
        zxid: 9,
        err: 0,
    };
    let mut a = Writer::new();
    encode_reply(&mut a, &h, None);
    let mut b = Writer::new();
    encode_reply(&mut b, &h, Some(&Response::Empty));
    assert_eq!(a.into_inner(), b.into_inner());
}

#[test]
fn notification_frame_has_xid_minus_one_and_err_zero() {
    let mut w = Writer::new();
    encode_notification(
        &mut w,
        0x22,
        &WatcherEvent {
            event_type: 3,
            state: 3,
            path: "/n".into(),
        },
    );
    assert_eq!(
        w.into_inner(),
        vec![
            0, 0, 0, 30, // length
            0xff, 0xff, 0xff, 0xff, // xid -1
            0, 0, 0, 0, 0, 0, 0, 0x22, // zxid
            0, 0, 0, 0, // err
            0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 2, b'/', b'n',
        ]
    );
}

#[test]
fn connect_response_frame_mirrors_an_old_client_without_read_only() {
    let req = wire::decode_connect_frame(&[
        0, 0, 0, 0, // protocolVersion
        0, 0, 0, 0, 0, 0, 0, 0, // lastZxidSeen
        0, 0, 0x75, 0x30, // timeOut 30000
        0, 0, 0, 0, 0, 0, 0, 0, // sessionId
        0, 0, 0, 0, // passwd: empty
    ])
    .unwrap();
    assert_eq!(req.read_only, None);
    let mut w = Writer::new();
    wire::encode_connect_response(
        &mut w,
        &wire::ConnectResponse {
            protocol_version: 0,
            timeout: req.timeout,
            session_id: 1,
            passwd: Some(vec![]),
            read_only: req.read_only,
        },
    );
    assert_eq!(
        w.into_inner(),
        vec![0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0x75, 0x30, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]
    );
}

#[test]
fn reply_frame_splits_header_from_body() {
    let mut w = Writer::new();
    encode_reply(
        &mut w,
        &ReplyHeader {
            xid: 2,
            zxid: 3,
            err: 0,
        },
        Some(&Response::Sync(wire::ops::sync::SyncResponse {
            path: "/s".into(),
        })),
    );
    let bytes = w.into_inner();
    let (h, rest) = wire::decode_reply_frame(&bytes[4..]).unwrap();
    assert_eq!(
        h,
        ReplyHeader {
            xid: 2,
            zxid: 3,
            err: 0
        }
    );
    assert_eq!(rest, &[0, 0, 0, 2, b'/', b's']);
}
