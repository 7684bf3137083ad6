//! Whole messages: a frame body in, `(RequestHeader, Request)` out; a `ReplyHeader` and its body
//! in, one length-prefixed frame out. This is the seam the server's connection loop uses, so it
//! never has to sequence header, body and length prefix itself.

use crate::connect::{ConnectRequest, ConnectResponse};
use crate::error::DecodeError;
use crate::header::{ReplyHeader, RequestHeader, WatcherEvent};
use crate::jute::{Reader, Record, Writer};
use crate::opcode::{xid, OpCode};
use crate::request::Request;
use crate::response::Response;

/// Decodes one client frame body (length prefix already stripped by `frame::check`) after
/// the handshake.
///
/// On failure the header is returned whenever it could be read, so the server can answer
/// with the right xid: `MarshallingError` for a bad body, `Unimplemented` for an opcode
/// ZooKeeper does not accept from clients (`DecodeError::UnknownOpcode`). `None` means even
/// the 8-byte header was missing, and the connection should be closed.
///
/// Bytes after the op's record are ignored, as the Java server ignores them
/// (`ByteBufferInputStream.byteBuffer2Record` reads one record and stops).
pub fn decode_request_frame(
    body: &[u8],
) -> Result<(RequestHeader, Request), (Option<RequestHeader>, DecodeError)> {
    let mut r = Reader::new(body);
    let header = RequestHeader::decode(&mut r).map_err(|e| (None, e))?;
    let op = OpCode::from_code(header.op_type).ok_or((
        Some(header.clone()),
        DecodeError::UnknownOpcode(header.op_type),
    ))?;
    match Request::decode_body(op, &mut r) {
        Ok(req) => Ok((header, req)),
        Err(e) => Err((Some(header), e)),
    }
}

/// Decodes the first frame body of a connection. A bare record, no header.
pub fn decode_connect_frame(body: &[u8]) -> Result<ConnectRequest, DecodeError> {
    ConnectRequest::decode(&mut Reader::new(body))
}

/// Appends one whole reply frame: length prefix, `ReplyHeader`, then `body` if given.
///
/// The caller passes `None` for error replies (ZooKeeper sends no body when `err != 0`,
/// multi excepted) and for ops with no response record; `Some(&Response::Empty)` writes the
/// same bytes as `None`.
pub fn encode_reply(w: &mut Writer, h: &ReplyHeader, body: Option<&Response>) {
    let at = w.begin_frame();
    h.encode(w);
    if let Some(body) = body {
        body.encode(w);
    }
    w.finish_frame(at);
}

/// Appends one whole watch-notification frame: `ReplyHeader{xid -1, zxid, err 0}` and the
/// event. `zxid` is the transaction that fired the watch (-1 for events made up by setWatches).
pub fn encode_notification(w: &mut Writer, zxid: i64, ev: &WatcherEvent) {
    let at = w.begin_frame();
    ReplyHeader {
        xid: xid::NOTIFICATION,
        zxid,
        err: 0,
    }
    .encode(w);
    ev.encode(w);
    w.finish_frame(at);
}

/// Appends the whole handshake reply frame (a bare `ConnectResponse`, no header).
pub fn encode_connect_response(w: &mut Writer, resp: &ConnectResponse) {
    let at = w.begin_frame();
    resp.encode(w);
    w.finish_frame(at);
}

/// Appends one whole client request frame: length prefix, `RequestHeader`, body. The client
/// side of `decode_request_frame`, for tests, benchmarks and tools.
pub fn encode_request(w: &mut Writer, h: &RequestHeader, req: &Request) {
    let at = w.begin_frame();
    h.encode(w);
    req.encode_body(w);
    w.finish_frame(at);
}

/// Appends the whole handshake request frame (a bare `ConnectRequest`).
pub fn encode_connect_request(w: &mut Writer, req: &ConnectRequest) {
    let at = w.begin_frame();
    req.encode(w);
    w.finish_frame(at);
}

/// Splits a server frame body into its `ReplyHeader` and the body bytes that follow it
/// (client side: tests and tools pair it with `Response::decode`).
pub fn decode_reply_frame(body: &[u8]) -> Result<(ReplyHeader, &[u8]), DecodeError> {
    let mut r = Reader::new(body);
    let h = ReplyHeader::decode(&mut r)?;
    Ok((h, r.rest()))
}
