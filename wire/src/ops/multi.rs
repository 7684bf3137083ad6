//! multi (14) and multiRead (22): a list of `MultiHeader` + op record, closed by
//! `MultiHeader{-1, true, -1}` (ZooKeeper's `MultiOperationRecord` and `MultiResponse`,
//! `serialize` and `deserialize`).

use crate::error::DecodeError;
use crate::jute::{Reader, Record, Writer};
use crate::opcode::OpCode;
use crate::record;
use crate::request::Request;
use crate::response::MultiResult;

record! {
    pub struct MultiHeader {
        pub op_type: i32,
        pub done: bool,
        pub err: i32,
    }
}

impl MultiHeader {
    pub const END: MultiHeader = MultiHeader {
        op_type: -1,
        done: true,
        err: -1,
    };
}

/// Ops that may stand inside a multi (14).
pub fn is_multi_write_op(op: OpCode) -> bool {
    matches!(
        op,
        OpCode::Create
            | OpCode::Create2
            | OpCode::CreateContainer
            | OpCode::CreateTtl
            | OpCode::Delete
            | OpCode::SetData
            | OpCode::Check
    )
}

/// Ops that may stand inside a multiRead (22).
pub fn is_multi_read_op(op: OpCode) -> bool {
    matches!(op, OpCode::GetChildren | OpCode::GetData)
}

/// Decodes a `MultiOperationRecord`. The sub-ops are not checked against the enclosing
/// opcode here; `Request::decode` does that, so that a mixed multi is a MarshallingError.
pub fn decode_ops(r: &mut Reader<'_>) -> Result<Vec<Request>, DecodeError> {
    let mut ops = Vec::new();
    loop {
        let h = MultiHeader::decode(r)?;
        if h.done {
            return Ok(ops);
        }
        // An unknown number inside a multi is a malformed body (MarshallingError, as Java's
        // MultiOperationRecord throws "Invalid type of op"), not a top-level unknown opcode,
        // which the server would answer with Unimplemented and a close.
        let op = match OpCode::from_code(h.op_type) {
            Some(op) if is_multi_write_op(op) || is_multi_read_op(op) => op,
            _ => return Err(DecodeError::Invalid("op not allowed inside multi")),
        };
        ops.push(Request::decode_body(op, r)?);
    }
}

pub fn encode_ops(ops: &[Request], w: &mut Writer) {
    for op in ops {
        MultiHeader {
            op_type: op.opcode().code(),
            done: false,
            err: -1,
        }
        .encode(w);
        op.encode_body(w);
    }
    MultiHeader::END.encode(w);
}

pub fn decode_results(r: &mut Reader<'_>) -> Result<Vec<MultiResult>, DecodeError> {
    let mut results = Vec::new();
    loop {
        let h = MultiHeader::decode(r)?;
        if h.done {
            return Ok(results);
        }
        results.push(MultiResult::decode_body(&h, r)?);
    }
}

pub fn encode_results(results: &[MultiResult], w: &mut Writer) {
    for res in results {
        res.encode(w);
    }
    MultiHeader::END.encode(w);
}
