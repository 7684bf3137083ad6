//! The fuzz targets' bodies, shared by `cargo fuzz` (fuzz_targets/*.rs) and the stable-Rust
//! smoke run (`wire/tests/fuzz_smoke.rs`), which include this file with `#[path]`.
//!
//! Each target feeds bytes to the decoders the server runs on untrusted input and checks more
//! than "no panic": whatever decodes must re-encode to bytes that decode to the same value,
//! and an error must keep the header the server needs to answer it.

#![allow(dead_code)]

use wire::frame::{self, Check, DEFAULT_MAX_FRAME};
use wire::{
    decode_connect_frame, decode_reply_frame, decode_request_frame, encode_connect_request,
    encode_request, ConnectResponse, FourLetterWord, OpCode, Record, RequestHeader, Response,
    Writer,
};

/// What a target made of one input; the smoke run tallies these to show it reached past
/// the framing checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    Decoded(OpCode),
    BadBody,
    NoHeader,
    NeedMore,
    BadFrame,
    FourLetterWord,
}

fn check_frame(data: &[u8]) -> Result<Option<&[u8]>, ()> {
    match frame::check(data, DEFAULT_MAX_FRAME) {
        Ok(Check::Frame { len }) => {
            assert!(len <= DEFAULT_MAX_FRAME && 4 + len <= data.len());
            Ok(Some(&data[4..4 + len]))
        }
        Ok(Check::NeedMore(n)) => {
            assert!(n > 0);
            if data.len() >= 4 {
                let len = i32::from_be_bytes([data[0], data[1], data[2], data[3]]);
                assert_eq!(
                    n,
                    len as usize - (data.len() - 4),
                    "NeedMore must count the missing bytes"
                );
            } else {
                assert_eq!(n, 4 - data.len());
            }
            Ok(None)
        }
        Err(_) => Err(()),
    }
}

fn request_body(body: &[u8]) -> Outcome {
    match decode_request_frame(body) {
        Ok((h, req)) => {
            assert_eq!(
                h.op_type,
                req.opcode().code(),
                "decoded op differs from the header"
            );
            let mut w = Writer::new();
            encode_request(&mut w, &h, &req);
            let again = decode_request_frame(&w.buf[4..]).expect("re-encoded request must decode");
            assert_eq!(
                again,
                (h, req.clone()),
                "re-encoded request decodes to another value"
            );
            Outcome::Decoded(req.opcode())
        }
        Err((Some(h), _)) => {
            assert_eq!(
                h,
                RequestHeader::from_bytes(body).unwrap(),
                "error kept a wrong header"
            );
            Outcome::BadBody
        }
        Err((None, _)) => {
            assert!(
                body.len() < RequestHeader::WIRE_LEN,
                "header lost though 8 bytes were there"
            );
            Outcome::NoHeader
        }
    }
}

/// `frame::check` then `decode_request_frame`: the server's path for every frame after the
/// handshake. The raw input is also decoded as a body, so the fuzzer need not guess a
/// matching length prefix to reach the record decoders.
pub fn request_decoder(data: &[u8]) -> Outcome {
    let framed = match check_frame(data) {
        Ok(Some(body)) => request_body(body),
        Ok(None) => Outcome::NeedMore,
        Err(()) => Outcome::BadFrame,
    };
    let raw = request_body(data);
    match (framed, raw) {
        (Outcome::Decoded(_), _) => framed,
        (_, Outcome::Decoded(_)) => raw,
        _ => framed,
    }
}

/// The first bytes of a fresh connection: a four-letter word, or a framed ConnectRequest.
pub fn connect_decoder(data: &[u8]) -> Outcome {
    if data.len() >= 4 && FourLetterWord::detect([data[0], data[1], data[2], data[3]]).is_some() {
        // A word must never pass for a frame the server would read.
        assert!(frame::check(data, DEFAULT_MAX_FRAME).is_err());
        return Outcome::FourLetterWord;
    }
    let body = match check_frame(data) {
        Ok(Some(body)) => body,
        Ok(None) => return Outcome::NeedMore,
        Err(()) => return Outcome::BadFrame,
    };
    match decode_connect_frame(body) {
        Ok(req) => {
            let mut w = Writer::new();
            encode_connect_request(&mut w, &req);
            assert_eq!(
                decode_connect_frame(&w.buf[4..]).expect("re-encoded connect must decode"),
                req
            );
            // The reply mirrors the readOnly choice; it must round-trip too.
            let resp = ConnectResponse {
                protocol_version: req.protocol_version,
                timeout: req.timeout,
                session_id: req.session_id,
                passwd: req.passwd.clone(),
                read_only: req.read_only,
            };
            assert_eq!(ConnectResponse::from_bytes(&resp.to_bytes()).unwrap(), resp);
            Outcome::Decoded(OpCode::CreateSession)
        }
        Err(_) => Outcome::BadBody,
    }
}

/// Client side: a reply frame decoded under every opcode. Not on the server's path, but the
/// captured-vector check and tools run it on bytes they did not make.
pub fn response_decoder(data: &[u8]) -> Outcome {
    let body = match check_frame(data) {
        Ok(Some(body)) => body,
        Ok(None) => data,
        Err(()) => data,
    };
    let Ok((_, rest)) = decode_reply_frame(body) else {
        return Outcome::NoHeader;
    };
    let mut last = Outcome::BadBody;
    for op in OpCode::ALL {
        if let Ok(resp) = Response::decode(op, rest) {
            assert_eq!(
                Response::decode(op, &resp.to_bytes()).expect("re-encoded reply must decode"),
                resp
            );
            // Report multi when it decodes: its loop is the decoder most worth reaching.
            if resp != Response::Empty && last != Outcome::Decoded(OpCode::Multi) {
                last = Outcome::Decoded(op);
            }
        }
    }
    last
}
