//! Round trips for every record, every request opcode, every response and every multi result:
//! encode, decode, compare the value, re-encode, compare the bytes. Every strict prefix of a
//! record's encoding must be an error, which pins that no field is silently optional.

use std::fmt::Debug;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

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
    decode_request_frame, encode_request, frame, Acl, ConnectRequest, ConnectResponse, Id,
    MultiResult, OpCode, Reader, Record, ReplyHeader, Request, RequestHeader, Response, Stat,
    WatcherEvent, Writer,
};

// ---- strategies -------------------------------------------------------------------------

fn s() -> impl Strategy<Value = String> {
    // Paths-ish most of the time, any printable Unicode (multi-byte UTF-8) otherwise.
    prop_oneof!["[a-z/]{0,12}", "\\PC{0,8}"]
}

fn strings() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(s(), 0..5)
}

fn buf() -> impl Strategy<Value = Option<Vec<u8>>> {
    prop::option::of(prop::collection::vec(any::<u8>(), 0..40))
}

fn id() -> impl Strategy<Value = Id> {
    (s(), s()).prop_map(|(scheme, id)| Id { scheme, id })
}

fn acl() -> impl Strategy<Value = Acl> {
    (any::<i32>(), id()).prop_map(|(perms, id)| Acl { perms, id })
}

fn acls() -> impl Strategy<Value = Vec<Acl>> {
    prop::collection::vec(acl(), 0..4)
}

fn stat() -> impl Strategy<Value = Stat> {
    (
        any::<i64>(),
        any::<i64>(),
        any::<i64>(),
        any::<i64>(),
        any::<i32>(),
        any::<i32>(),
        any::<i32>(),
        any::<i64>(),
        any::<i32>(),
        any::<i32>(),
        any::<i64>(),
    )
        .prop_map(
            |(
                czxid,
                mzxid,
                ctime,
                mtime,
                version,
                cversion,
                aversion,
                ephemeral_owner,
                data_length,
                num_children,
                pzxid,
            )| {
                Stat {
                    czxid,
                    mzxid,
                    ctime,
                    mtime,
                    version,
                    cversion,
                    aversion,
                    ephemeral_owner,
                    data_length,
                    num_children,
                    pzxid,
                }
            },
        )
}

fn request_header() -> impl Strategy<Value = RequestHeader> {
    (any::<i32>(), any::<i32>()).prop_map(|(xid, op_type)| RequestHeader { xid, op_type })
}

fn reply_header() -> impl Strategy<Value = ReplyHeader> {
    (any::<i32>(), any::<i64>(), any::<i32>()).prop_map(|(xid, zxid, err)| ReplyHeader {
        xid,
        zxid,
        err,
    })
}

fn watcher_event() -> impl Strategy<Value = WatcherEvent> {
    (any::<i32>(), any::<i32>(), s()).prop_map(|(event_type, state, path)| WatcherEvent {
        event_type,
        state,
        path,
    })
}

fn connect_request() -> impl Strategy<Value = ConnectRequest> {
    (
        any::<i32>(),
        any::<i64>(),
        any::<i32>(),
        any::<i64>(),
        buf(),
        prop::option::of(any::<bool>()),
    )
        .prop_map(
            |(protocol_version, last_zxid_seen, timeout, session_id, passwd, read_only)| {
                ConnectRequest {
                    protocol_version,
                    last_zxid_seen,
                    timeout,
                    session_id,
                    passwd,
                    read_only,
                }
            },
        )
}

fn connect_response() -> impl Strategy<Value = ConnectResponse> {
    (
        any::<i32>(),
        any::<i32>(),
        any::<i64>(),
        buf(),
        prop::option::of(any::<bool>()),
    )
        .prop_map(
            |(protocol_version, timeout, session_id, passwd, read_only)| ConnectResponse {
                protocol_version,
                timeout,
                session_id,
                passwd,
                read_only,
            },
        )
}

fn create_request() -> impl Strategy<Value = CreateRequest> {
    (s(), buf(), acls(), any::<i32>()).prop_map(|(path, data, acl, flags)| CreateRequest {
        path,
        data,
        acl,
        flags,
    })
}

fn create_ttl_request() -> impl Strategy<Value = CreateTtlRequest> {
    (s(), buf(), acls(), any::<i32>(), any::<i64>()).prop_map(|(path, data, acl, flags, ttl)| {
        CreateTtlRequest {
            path,
            data,
            acl,
            flags,
            ttl,
        }
    })
}

fn path_version<T: Debug>(f: fn(String, i32) -> T) -> impl Strategy<Value = T> {
    (s(), any::<i32>()).prop_map(move |(p, v)| f(p, v))
}

fn path_watch<T: Debug>(f: fn(String, bool) -> T) -> impl Strategy<Value = T> {
    (s(), any::<bool>()).prop_map(move |(p, w)| f(p, w))
}

fn path_only<T: Debug>(f: fn(String) -> T) -> impl Strategy<Value = T> {
    s().prop_map(f)
}

fn delete_request() -> impl Strategy<Value = DeleteRequest> {
    path_version(|path, version| DeleteRequest { path, version })
}
fn check_request() -> impl Strategy<Value = CheckVersionRequest> {
    path_version(|path, version| CheckVersionRequest { path, version })
}
fn exists_request() -> impl Strategy<Value = ExistsRequest> {
    path_watch(|path, watch| ExistsRequest { path, watch })
}
fn get_data_request() -> impl Strategy<Value = GetDataRequest> {
    path_watch(|path, watch| GetDataRequest { path, watch })
}
fn get_children_request() -> impl Strategy<Value = GetChildrenRequest> {
    path_watch(|path, watch| GetChildrenRequest { path, watch })
}
fn set_data_request() -> impl Strategy<Value = SetDataRequest> {
    (s(), buf(), any::<i32>()).prop_map(|(path, data, version)| SetDataRequest {
        path,
        data,
        version,
    })
}
fn set_acl_request() -> impl Strategy<Value = SetAclRequest> {
    (s(), acls(), any::<i32>()).prop_map(|(path, acl, version)| SetAclRequest {
        path,
        acl,
        version,
    })
}
fn reconfig_request() -> impl Strategy<Value = ReconfigRequest> {
    (s(), s(), s(), any::<i64>()).prop_map(
        |(joining_servers, leaving_servers, new_members, cur_config_id)| ReconfigRequest {
            joining_servers,
            leaving_servers,
            new_members,
            cur_config_id,
        },
    )
}
fn watches_request() -> impl Strategy<Value = WatchesRequest> {
    path_version(|path, watcher_type| WatchesRequest { path, watcher_type })
}
fn add_watch_request() -> impl Strategy<Value = AddWatchRequest> {
    path_version(|path, mode| AddWatchRequest { path, mode })
}
fn auth_packet() -> impl Strategy<Value = AuthPacket> {
    (any::<i32>(), s(), buf()).prop_map(|(auth_type, scheme, auth)| AuthPacket {
        auth_type,
        scheme,
        auth,
    })
}
fn set_watches() -> impl Strategy<Value = SetWatches> {
    (any::<i64>(), strings(), strings(), strings()).prop_map(
        |(relative_zxid, data_watches, exist_watches, child_watches)| SetWatches {
            relative_zxid,
            data_watches,
            exist_watches,
            child_watches,
        },
    )
}
fn set_watches2() -> impl Strategy<Value = SetWatches2> {
    (
        any::<i64>(),
        strings(),
        strings(),
        strings(),
        strings(),
        strings(),
    )
        .prop_map(
            |(
                relative_zxid,
                data_watches,
                exist_watches,
                child_watches,
                persistent_watches,
                persistent_recursive_watches,
            )| {
                SetWatches2 {
                    relative_zxid,
                    data_watches,
                    exist_watches,
                    child_watches,
                    persistent_watches,
                    persistent_recursive_watches,
                }
            },
        )
}
fn client_info() -> impl Strategy<Value = ClientInfo> {
    (s(), s()).prop_map(|(auth_scheme, user)| ClientInfo { auth_scheme, user })
}
fn multi_header() -> impl Strategy<Value = MultiHeader> {
    (any::<i32>(), any::<bool>(), any::<i32>()).prop_map(|(op_type, done, err)| MultiHeader {
        op_type,
        done,
        err,
    })
}

/// A sub-op a multi (14) may hold.
fn multi_write_op() -> impl Strategy<Value = Request> {
    prop_oneof![
        create_request().prop_map(Request::Create),
        create_request().prop_map(Request::Create2),
        create_request().prop_map(Request::CreateContainer),
        create_ttl_request().prop_map(Request::CreateTtl),
        delete_request().prop_map(Request::Delete),
        set_data_request().prop_map(Request::SetData),
        check_request().prop_map(Request::Check),
    ]
}

/// A sub-op a multiRead (22) may hold.
fn multi_read_op() -> impl Strategy<Value = Request> {
    prop_oneof![
        get_children_request().prop_map(Request::GetChildren),
        get_data_request().prop_map(Request::GetData)
    ]
}

/// Every request opcode a client may send.
fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        create_request().prop_map(Request::Create),
        create_request().prop_map(Request::Create2),
        create_request().prop_map(Request::CreateContainer),
        create_ttl_request().prop_map(Request::CreateTtl),
        delete_request().prop_map(Request::Delete),
        path_only(|path| DeleteContainerRequest { path }).prop_map(Request::DeleteContainer),
        exists_request().prop_map(Request::Exists),
        get_data_request().prop_map(Request::GetData),
        set_data_request().prop_map(Request::SetData),
        path_only(|path| GetAclRequest { path }).prop_map(Request::GetAcl),
        set_acl_request().prop_map(Request::SetAcl),
        get_children_request().prop_map(Request::GetChildren),
        get_children_request().prop_map(Request::GetChildren2),
        path_only(|path| SyncRequest { path }).prop_map(Request::Sync),
        Just(Request::Ping),
        check_request().prop_map(Request::Check),
        prop::collection::vec(multi_write_op(), 0..5).prop_map(Request::Multi),
        prop::collection::vec(multi_read_op(), 0..5).prop_map(Request::MultiRead),
        reconfig_request().prop_map(Request::Reconfig),
        watches_request().prop_map(Request::CheckWatches),
        watches_request().prop_map(Request::RemoveWatches),
        auth_packet().prop_map(Request::Auth),
        set_watches().prop_map(Request::SetWatches),
        set_watches2().prop_map(Request::SetWatches2),
        buf().prop_map(|token| Request::Sasl(GetSaslRequest { token })),
        path_only(|prefix_path| GetEphemeralsRequest { prefix_path })
            .prop_map(Request::GetEphemerals),
        path_only(|path| GetAllChildrenNumberRequest { path })
            .prop_map(Request::GetAllChildrenNumber),
        add_watch_request().prop_map(Request::AddWatch),
        Just(Request::WhoAmI),
        Just(Request::CloseSession),
    ]
}

fn multi_result() -> impl Strategy<Value = MultiResult> {
    prop_oneof![
        s().prop_map(|path| MultiResult::Create { path }),
        (s(), stat()).prop_map(|(path, stat)| MultiResult::Create2 { path, stat }),
        Just(MultiResult::Delete),
        stat().prop_map(|stat| MultiResult::SetData { stat }),
        Just(MultiResult::Check),
        strings().prop_map(|children| MultiResult::GetChildren { children }),
        (buf(), stat()).prop_map(|(data, stat)| MultiResult::GetData { data, stat }),
        any::<i32>().prop_map(MultiResult::Error),
    ]
}

/// Every response body, paired with an opcode whose reply it is.
fn response() -> impl Strategy<Value = (OpCode, Response)> {
    prop_oneof![
        prop::sample::select(vec![
            OpCode::Delete,
            OpCode::Ping,
            OpCode::Auth,
            OpCode::SetWatches,
            OpCode::SetWatches2,
            OpCode::CheckWatches,
            OpCode::RemoveWatches,
            OpCode::CloseSession,
        ])
        .prop_map(|op| (op, Response::Empty)),
        s().prop_map(|path| (OpCode::Create, Response::Create(CreateResponse { path }))),
        (
            prop::sample::select(vec![
                OpCode::Create2,
                OpCode::CreateContainer,
                OpCode::CreateTtl
            ]),
            s(),
            stat()
        )
            .prop_map(|(op, path, stat)| (op, Response::Create2(Create2Response { path, stat }))),
        stat().prop_map(|stat| (OpCode::Exists, Response::Exists(ExistsResponse { stat }))),
        (buf(), stat()).prop_map(|(data, stat)| (
            OpCode::GetData,
            Response::GetData(GetDataResponse { data, stat })
        )),
        stat().prop_map(|stat| (OpCode::SetData, Response::SetData(SetDataResponse { stat }))),
        (acls(), stat()).prop_map(|(acl, stat)| (
            OpCode::GetAcl,
            Response::GetAcl(GetAclResponse { acl, stat })
        )),
        stat().prop_map(|stat| (OpCode::SetAcl, Response::SetAcl(SetAclResponse { stat }))),
        strings().prop_map(|children| (
            OpCode::GetChildren,
            Response::GetChildren(GetChildrenResponse { children })
        )),
        (strings(), stat()).prop_map(|(children, stat)| {
            (
                OpCode::GetChildren2,
                Response::GetChildren2(GetChildren2Response { children, stat }),
            )
        }),
        s().prop_map(|path| (OpCode::Sync, Response::Sync(SyncResponse { path }))),
        (
            prop::sample::select(vec![OpCode::Multi, OpCode::MultiRead]),
            prop::collection::vec(multi_result(), 0..6)
        )
            .prop_map(|(op, rs)| (op, Response::Multi(rs))),
        (buf(), stat()).prop_map(|(data, stat)| (
            OpCode::Reconfig,
            Response::Reconfig(GetDataResponse { data, stat })
        )),
        buf().prop_map(|token| (OpCode::Sasl, Response::Sasl(SetSaslResponse { token }))),
        strings().prop_map(|ephemerals| {
            (
                OpCode::GetEphemerals,
                Response::GetEphemerals(GetEphemeralsResponse { ephemerals }),
            )
        }),
        any::<i32>().prop_map(|total_number| {
            (
                OpCode::GetAllChildrenNumber,
                Response::GetAllChildrenNumber(GetAllChildrenNumberResponse { total_number }),
            )
        }),
        any::<i32>().prop_map(|err| (OpCode::AddWatch, Response::AddWatch(ErrorResponse { err }))),
        prop::collection::vec(client_info(), 0..4).prop_map(|client_info| (
            OpCode::WhoAmI,
            Response::WhoAmI(WhoAmIResponse { client_info })
        )),
    ]
}

// ---- checks -------------------------------------------------------------------------------

/// encode → decode gives the value back, consumes exactly the encoding, re-encodes to the
/// same bytes; and every strict prefix is an error.
fn check_record<T: Record + PartialEq + Debug>(v: &T) -> Result<(), TestCaseError> {
    let bytes = v.to_bytes();
    let mut r = Reader::new(&bytes);
    let back =
        T::decode(&mut r).map_err(|e| TestCaseError::fail(format!("{e} decoding {bytes:02x?}")))?;
    prop_assert_eq!(&back, v);
    prop_assert_eq!(r.remaining(), 0, "decode left bytes unread");
    prop_assert_eq!(back.to_bytes(), bytes.clone());
    prop_assert!(
        bytes.len() >= T::MIN_WIRE_LEN,
        "MIN_WIRE_LEN {} > {} bytes",
        T::MIN_WIRE_LEN,
        bytes.len()
    );
    for cut in 0..bytes.len() {
        prop_assert!(
            T::from_bytes(&bytes[..cut]).is_err(),
            "prefix of {} of {} bytes decoded",
            cut,
            bytes.len()
        );
    }
    Ok(())
}

macro_rules! record_round_trips {
    ($($name:ident: $strategy:expr;)*) => {
        proptest! {
            $(
                #[test]
                fn $name(v in $strategy) {
                    check_record(&v)?;
                }
            )*
        }
    };
}

record_round_trips! {
    id_round_trips: id();
    acl_round_trips: acl();
    stat_round_trips: stat();
    request_header_round_trips: request_header();
    reply_header_round_trips: reply_header();
    watcher_event_round_trips: watcher_event();
    multi_header_round_trips: multi_header();
    create_request_round_trips: create_request();
    create_ttl_request_round_trips: create_ttl_request();
    create_response_round_trips: s().prop_map(|path| CreateResponse { path });
    create2_response_round_trips: (s(), stat()).prop_map(|(path, stat)| Create2Response { path, stat });
    delete_container_request_round_trips: path_only(|path| DeleteContainerRequest { path });
    delete_request_round_trips: delete_request();
    exists_request_round_trips: exists_request();
    exists_response_round_trips: stat().prop_map(|stat| ExistsResponse { stat });
    get_data_request_round_trips: get_data_request();
    get_data_response_round_trips: (buf(), stat()).prop_map(|(data, stat)| GetDataResponse { data, stat });
    set_data_request_round_trips: set_data_request();
    set_data_response_round_trips: stat().prop_map(|stat| SetDataResponse { stat });
    get_acl_request_round_trips: path_only(|path| GetAclRequest { path });
    get_acl_response_round_trips: (acls(), stat()).prop_map(|(acl, stat)| GetAclResponse { acl, stat });
    set_acl_request_round_trips: set_acl_request();
    set_acl_response_round_trips: stat().prop_map(|stat| SetAclResponse { stat });
    get_children_request_round_trips: get_children_request();
    get_children_response_round_trips: strings().prop_map(|children| GetChildrenResponse { children });
    get_children2_response_round_trips:
        (strings(), stat()).prop_map(|(children, stat)| GetChildren2Response { children, stat });
    get_all_children_number_request_round_trips: path_only(|path| GetAllChildrenNumberRequest { path });
    get_all_children_number_response_round_trips:
        any::<i32>().prop_map(|total_number| GetAllChildrenNumberResponse { total_number });
    sync_request_round_trips: path_only(|path| SyncRequest { path });
    sync_response_round_trips: path_only(|path| SyncResponse { path });
    check_version_request_round_trips: check_request();
    reconfig_request_round_trips: reconfig_request();
    watches_request_round_trips: watches_request();
    set_watches_round_trips: set_watches();
    set_watches2_round_trips: set_watches2();
    add_watch_request_round_trips: add_watch_request();
    error_response_round_trips: any::<i32>().prop_map(|err| ErrorResponse { err });
    auth_packet_round_trips: auth_packet();
    get_sasl_request_round_trips: buf().prop_map(|token| GetSaslRequest { token });
    set_sasl_response_round_trips: buf().prop_map(|token| SetSaslResponse { token });
    get_ephemerals_request_round_trips: path_only(|prefix_path| GetEphemeralsRequest { prefix_path });
    get_ephemerals_response_round_trips: strings().prop_map(|ephemerals| GetEphemeralsResponse { ephemerals });
    client_info_round_trips: client_info();
    who_am_i_response_round_trips:
        prop::collection::vec(client_info(), 0..4).prop_map(|client_info| WhoAmIResponse { client_info });
}

proptest! {
    /// The handshake records: the value (readOnly present or not) survives, and so do the bytes.
    #[test]
    fn connect_request_round_trips_with_and_without_read_only(v in connect_request()) {
        let bytes = v.to_bytes();
        prop_assert_eq!(ConnectRequest::from_bytes(&bytes).unwrap(), v.clone());
        prop_assert_eq!(ConnectRequest::from_bytes(&bytes).unwrap().to_bytes(), bytes.clone());
        let framed = {
            let mut w = Writer::new();
            wire::encode_connect_request(&mut w, &v);
            w.into_inner()
        };
        prop_assert_eq!(framed, frame::frame(&bytes));
    }

    #[test]
    fn connect_response_round_trips_with_and_without_read_only(v in connect_response()) {
        let bytes = v.to_bytes();
        prop_assert_eq!(ConnectResponse::from_bytes(&bytes).unwrap(), v.clone());
        prop_assert_eq!(ConnectResponse::from_bytes(&bytes).unwrap().to_bytes(), bytes);
    }

    /// Every opcode: body bytes decode to the same request under the request's own opcode,
    /// and the whole frame survives encode_request → frame::check → decode_request_frame.
    #[test]
    fn every_request_round_trips(req in request(), xid in any::<i32>()) {
        let body = req.body_bytes();
        let op = req.opcode().code();
        prop_assert_eq!(Request::decode(op, &body).unwrap(), req.clone());
        prop_assert_eq!(Request::decode(op, &body).unwrap().body_bytes(), body.clone());

        let h = RequestHeader { xid, op_type: op };
        let mut w = Writer::new();
        encode_request(&mut w, &h, &req);
        let bytes = w.into_inner();
        let len = match frame::check(&bytes, frame::DEFAULT_MAX_FRAME).unwrap() {
            frame::Check::Frame { len } => len,
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        };
        prop_assert_eq!(len + 4, bytes.len());
        prop_assert_eq!(decode_request_frame(&bytes[4..]).unwrap(), (h, req));
    }

    /// Every response body and every multi result kind.
    #[test]
    fn every_response_round_trips((op, resp) in response()) {
        let bytes = resp.to_bytes();
        let back = Response::decode(op, &bytes).unwrap();
        prop_assert_eq!(&back, &resp);
        prop_assert_eq!(back.to_bytes(), bytes);
    }

    #[test]
    fn multi_results_round_trip_in_order(rs in prop::collection::vec(multi_result(), 0..8)) {
        let resp = Response::Multi(rs);
        let bytes = resp.to_bytes();
        prop_assert_eq!(Response::decode(OpCode::Multi, &bytes).unwrap(), resp);
        // The last 9 bytes are always the end marker {-1, true, -1}.
        prop_assert_eq!(&bytes[bytes.len() - 9..], &[0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff][..]);
    }
}

// ---- exact forms that properties alone do not pin ------------------------------------------

#[test]
fn connect_request_without_read_only_is_44_bytes_and_decodes_as_old_client() {
    let v = ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0,
        timeout: 30000,
        session_id: 0,
        passwd: Some(vec![0; 16]),
        read_only: None,
    };
    let bytes = v.to_bytes();
    assert_eq!(bytes.len(), 44);
    assert_eq!(ConnectRequest::from_bytes(&bytes).unwrap().read_only, None);
    let mut with = bytes.clone();
    with.push(1);
    assert_eq!(
        ConnectRequest::from_bytes(&with).unwrap().read_only,
        Some(true)
    );
    assert_eq!(
        ConnectRequest {
            read_only: Some(true),
            ..v
        }
        .to_bytes(),
        with
    );
}

#[test]
fn connect_response_mirrors_presence_of_read_only_byte() {
    let v = ConnectResponse {
        protocol_version: 0,
        timeout: 4000,
        session_id: 7,
        passwd: Some(vec![9; 16]),
        read_only: None,
    };
    assert_eq!(v.to_bytes().len(), 36);
    assert_eq!(
        ConnectResponse {
            read_only: Some(false),
            ..v.clone()
        }
        .to_bytes()
        .len(),
        37
    );
    assert_eq!(
        *ConnectResponse {
            read_only: Some(false),
            ..v
        }
        .to_bytes()
        .last()
        .unwrap(),
        0
    );
}

#[test]
fn multi_error_result_carries_code_in_header_and_body() {
    let bytes = Response::Multi(vec![MultiResult::Error(-101)]).to_bytes();
    assert_eq!(
        bytes,
        vec![
            0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0x9b, // MultiHeader{-1, false, -101}
            0xff, 0xff, 0xff, 0x9b, // ErrorResponse{-101}
            0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff, // end
        ]
    );
}

#[test]
fn multi_request_sub_ops_carry_err_minus_one() {
    let bytes = Request::Multi(vec![Request::Delete(DeleteRequest {
        path: "/a".into(),
        version: -1,
    })])
    .body_bytes();
    assert_eq!(
        bytes,
        vec![
            0, 0, 0, 2, 0, 0xff, 0xff, 0xff, 0xff, // MultiHeader{2, false, -1}
            0, 0, 0, 2, b'/', b'a', 0xff, 0xff, 0xff, 0xff, // DeleteRequest
            0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff, // end
        ]
    );
}

#[test]
fn create_container_and_ttl_results_decode_as_create2() {
    let stat = Stat {
        czxid: 5,
        ..Stat::default()
    };
    for op_type in [19, 21] {
        let mut w = Writer::new();
        MultiHeader {
            op_type,
            done: false,
            err: 0,
        }
        .encode(&mut w);
        Create2Response {
            path: "/c".into(),
            stat: stat.clone(),
        }
        .encode(&mut w);
        MultiHeader::END.encode(&mut w);
        assert_eq!(
            Response::decode(OpCode::Multi, &w.into_inner()).unwrap(),
            Response::Multi(vec![MultiResult::Create2 {
                path: "/c".into(),
                stat: stat.clone()
            }])
        );
    }
}

#[test]
fn null_ustring_decodes_as_empty_string() {
    // kazoo writes "" as a null string (-1); Java's readers hand null to code that treats it
    // like an empty path. We keep String fields and read null as "".
    let bytes = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];
    assert_eq!(
        DeleteRequest::from_bytes(&bytes).unwrap(),
        DeleteRequest {
            path: String::new(),
            version: 0
        }
    );
    let id = Id::from_bytes(&[0, 0, 0, 4, b'a', b'u', b't', b'h', 0xff, 0xff, 0xff, 0xff]).unwrap();
    assert_eq!(id, Id::new("auth", ""));
}

#[test]
fn null_buffer_and_empty_buffer_stay_distinct() {
    let null = GetDataResponse {
        data: None,
        stat: Stat::default(),
    };
    let empty = GetDataResponse {
        data: Some(vec![]),
        stat: Stat::default(),
    };
    assert_eq!(&null.to_bytes()[..4], &[0xff; 4]);
    assert_eq!(&empty.to_bytes()[..4], &[0; 4]);
    assert_eq!(GetDataResponse::from_bytes(&null.to_bytes()).unwrap(), null);
    assert_eq!(
        GetDataResponse::from_bytes(&empty.to_bytes()).unwrap(),
        empty
    );
}

#[test]
fn min_wire_len_matches_fixed_sizes() {
    assert_eq!(<Stat as Record>::MIN_WIRE_LEN, Stat::WIRE_LEN);
    assert_eq!(
        <RequestHeader as Record>::MIN_WIRE_LEN,
        RequestHeader::WIRE_LEN
    );
    assert_eq!(<ReplyHeader as Record>::MIN_WIRE_LEN, ReplyHeader::WIRE_LEN);
    assert_eq!(<Acl as Record>::MIN_WIRE_LEN, 12);
    assert_eq!(<MultiHeader as Record>::MIN_WIRE_LEN, 9);
    assert_eq!(<ClientInfo as Record>::MIN_WIRE_LEN, 8);
}

/// Round trips cannot see a type number that is wrong on both sides; ZooKeeper's `OpResult`
/// subclasses (the type each one passes to its constructor) can.
#[test]
fn multi_result_header_types_follow_zookeeper() {
    let cases = [
        (MultiResult::Create { path: "/a".into() }, 1, 0),
        (
            MultiResult::Create2 {
                path: "/a".into(),
                stat: Stat::default(),
            },
            15,
            0,
        ),
        (MultiResult::Delete, 2, 0),
        (
            MultiResult::SetData {
                stat: Stat::default(),
            },
            5,
            0,
        ),
        (MultiResult::Check, 13, 0),
        (MultiResult::GetChildren { children: vec![] }, 8, 0),
        (
            MultiResult::GetData {
                data: None,
                stat: Stat::default(),
            },
            4,
            0,
        ),
        (MultiResult::Error(-2), -1, -2),
    ];
    for (result, op_type, err) in cases {
        let mut w = Writer::new();
        result.encode(&mut w);
        let h = MultiHeader::from_bytes(&w.buf).unwrap();
        assert_eq!(
            h,
            MultiHeader {
                op_type,
                done: false,
                err
            },
            "{result:?}"
        );
    }
}
