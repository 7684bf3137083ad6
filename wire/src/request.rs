//! `Request`: every op a client can send after the handshake, decoded from its opcode and body.

use crate::error::DecodeError;
use crate::jute::{Reader, Record, Writer};
use crate::opcode::OpCode;
use crate::ops::auth::{AuthPacket, GetSaslRequest};
use crate::ops::check::CheckVersionRequest;
use crate::ops::children::{GetAllChildrenNumberRequest, GetChildrenRequest};
use crate::ops::create::{CreateRequest, CreateTtlRequest, DeleteContainerRequest};
use crate::ops::data::{GetDataRequest, SetDataRequest};
use crate::ops::delete::DeleteRequest;
use crate::ops::ephemerals::GetEphemeralsRequest;
use crate::ops::exists::ExistsRequest;
use crate::ops::get_acl::GetAclRequest;
use crate::ops::multi;
use crate::ops::reconfig::ReconfigRequest;
use crate::ops::set_acl::SetAclRequest;
use crate::ops::sync::SyncRequest;
use crate::ops::watches::{AddWatchRequest, SetWatches, SetWatches2, WatchesRequest};

/// A decoded client request body. Each variant is one opcode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Create(CreateRequest),
    Create2(CreateRequest),
    CreateContainer(CreateRequest),
    CreateTtl(CreateTtlRequest),
    Delete(DeleteRequest),
    DeleteContainer(DeleteContainerRequest),
    Exists(ExistsRequest),
    GetData(GetDataRequest),
    SetData(SetDataRequest),
    GetAcl(GetAclRequest),
    SetAcl(SetAclRequest),
    GetChildren(GetChildrenRequest),
    GetChildren2(GetChildrenRequest),
    Sync(SyncRequest),
    Ping,
    Check(CheckVersionRequest),
    Multi(Vec<Request>),
    MultiRead(Vec<Request>),
    Reconfig(ReconfigRequest),
    CheckWatches(WatchesRequest),
    RemoveWatches(WatchesRequest),
    Auth(AuthPacket),
    SetWatches(SetWatches),
    SetWatches2(SetWatches2),
    Sasl(GetSaslRequest),
    GetEphemerals(GetEphemeralsRequest),
    GetAllChildrenNumber(GetAllChildrenNumberRequest),
    AddWatch(AddWatchRequest),
    WhoAmI,
    CloseSession,
}

impl Request {
    pub fn opcode(&self) -> OpCode {
        match self {
            Request::Create(_) => OpCode::Create,
            Request::Create2(_) => OpCode::Create2,
            Request::CreateContainer(_) => OpCode::CreateContainer,
            Request::CreateTtl(_) => OpCode::CreateTtl,
            Request::Delete(_) => OpCode::Delete,
            Request::DeleteContainer(_) => OpCode::DeleteContainer,
            Request::Exists(_) => OpCode::Exists,
            Request::GetData(_) => OpCode::GetData,
            Request::SetData(_) => OpCode::SetData,
            Request::GetAcl(_) => OpCode::GetAcl,
            Request::SetAcl(_) => OpCode::SetAcl,
            Request::GetChildren(_) => OpCode::GetChildren,
            Request::GetChildren2(_) => OpCode::GetChildren2,
            Request::Sync(_) => OpCode::Sync,
            Request::Ping => OpCode::Ping,
            Request::Check(_) => OpCode::Check,
            Request::Multi(_) => OpCode::Multi,
            Request::MultiRead(_) => OpCode::MultiRead,
            Request::Reconfig(_) => OpCode::Reconfig,
            Request::CheckWatches(_) => OpCode::CheckWatches,
            Request::RemoveWatches(_) => OpCode::RemoveWatches,
            Request::Auth(_) => OpCode::Auth,
            Request::SetWatches(_) => OpCode::SetWatches,
            Request::SetWatches2(_) => OpCode::SetWatches2,
            Request::Sasl(_) => OpCode::Sasl,
            Request::GetEphemerals(_) => OpCode::GetEphemerals,
            Request::GetAllChildrenNumber(_) => OpCode::GetAllChildrenNumber,
            Request::AddWatch(_) => OpCode::AddWatch,
            Request::WhoAmI => OpCode::WhoAmI,
            Request::CloseSession => OpCode::CloseSession,
        }
    }

    /// True for ops that go through the log (see `OpCode::is_write`).
    pub fn is_write(&self) -> bool {
        self.opcode().is_write()
    }

    /// The path an op names, where it names one.
    pub fn path(&self) -> Option<&str> {
        Some(match self {
            Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => &r.path,
            Request::CreateTtl(r) => &r.path,
            Request::Delete(r) => &r.path,
            Request::DeleteContainer(r) => &r.path,
            Request::Exists(r) => &r.path,
            Request::GetData(r) => &r.path,
            Request::SetData(r) => &r.path,
            Request::GetAcl(r) => &r.path,
            Request::SetAcl(r) => &r.path,
            Request::GetChildren(r) | Request::GetChildren2(r) => &r.path,
            Request::Sync(r) => &r.path,
            Request::Check(r) => &r.path,
            Request::CheckWatches(r) | Request::RemoveWatches(r) => &r.path,
            Request::GetEphemerals(r) => &r.prefix_path,
            Request::GetAllChildrenNumber(r) => &r.path,
            Request::AddWatch(r) => &r.path,
            _ => return None,
        })
    }

    /// Decodes the body of a request whose header named `op`.
    ///
    /// `notification` (0), `createSession` (-10) and `error` (-1) are not client requests and
    /// decode as `UnknownOpcode`; the server answers them, like unknown numbers, with
    /// Unimplemented. A multi whose sub-ops do not belong to its kind (reads in 14, writes
    /// in 22) is `Invalid`, which the server answers with MarshallingError.
    pub fn decode_body(op: OpCode, r: &mut Reader<'_>) -> Result<Request, DecodeError> {
        Ok(match op {
            OpCode::Create => Request::Create(CreateRequest::decode(r)?),
            OpCode::Create2 => Request::Create2(CreateRequest::decode(r)?),
            OpCode::CreateContainer => Request::CreateContainer(CreateRequest::decode(r)?),
            OpCode::CreateTtl => Request::CreateTtl(CreateTtlRequest::decode(r)?),
            OpCode::Delete => Request::Delete(DeleteRequest::decode(r)?),
            OpCode::DeleteContainer => Request::DeleteContainer(DeleteContainerRequest::decode(r)?),
            OpCode::Exists => Request::Exists(ExistsRequest::decode(r)?),
            OpCode::GetData => Request::GetData(GetDataRequest::decode(r)?),
            OpCode::SetData => Request::SetData(SetDataRequest::decode(r)?),
            OpCode::GetAcl => Request::GetAcl(GetAclRequest::decode(r)?),
            OpCode::SetAcl => Request::SetAcl(SetAclRequest::decode(r)?),
            OpCode::GetChildren => Request::GetChildren(GetChildrenRequest::decode(r)?),
            OpCode::GetChildren2 => Request::GetChildren2(GetChildrenRequest::decode(r)?),
            OpCode::Sync => Request::Sync(SyncRequest::decode(r)?),
            OpCode::Ping => Request::Ping,
            OpCode::Check => Request::Check(CheckVersionRequest::decode(r)?),
            OpCode::Multi => {
                let ops = multi::decode_ops(r)?;
                if !ops.iter().all(|o| multi::is_multi_write_op(o.opcode())) {
                    return Err(DecodeError::Invalid("multi holds a read op"));
                }
                Request::Multi(ops)
            }
            OpCode::MultiRead => {
                let ops = multi::decode_ops(r)?;
                if !ops.iter().all(|o| multi::is_multi_read_op(o.opcode())) {
                    return Err(DecodeError::Invalid("multiRead holds a write op"));
                }
                Request::MultiRead(ops)
            }
            OpCode::Reconfig => Request::Reconfig(ReconfigRequest::decode(r)?),
            OpCode::CheckWatches => Request::CheckWatches(WatchesRequest::decode(r)?),
            OpCode::RemoveWatches => Request::RemoveWatches(WatchesRequest::decode(r)?),
            OpCode::Auth => Request::Auth(AuthPacket::decode(r)?),
            OpCode::SetWatches => Request::SetWatches(SetWatches::decode(r)?),
            OpCode::SetWatches2 => Request::SetWatches2(SetWatches2::decode(r)?),
            OpCode::Sasl => Request::Sasl(GetSaslRequest::decode(r)?),
            OpCode::GetEphemerals => Request::GetEphemerals(GetEphemeralsRequest::decode(r)?),
            OpCode::GetAllChildrenNumber => {
                Request::GetAllChildrenNumber(GetAllChildrenNumberRequest::decode(r)?)
            }
            OpCode::AddWatch => Request::AddWatch(AddWatchRequest::decode(r)?),
            OpCode::WhoAmI => Request::WhoAmI,
            OpCode::CloseSession => Request::CloseSession,
            OpCode::Notification | OpCode::CreateSession | OpCode::Error => {
                return Err(DecodeError::UnknownOpcode(op.code()))
            }
        })
    }

    /// Decodes a body given the raw opcode number from a `RequestHeader`.
    ///
    /// Bytes after the op's record are ignored, as the Java server ignores them; the captured
    /// vectors show real clients never send any. A null path (length -1) reads as "".
    pub fn decode(op_type: i32, body: &[u8]) -> Result<Request, DecodeError> {
        let op = OpCode::from_code(op_type).ok_or(DecodeError::UnknownOpcode(op_type))?;
        Request::decode_body(op, &mut Reader::new(body))
    }

    pub fn encode_body(&self, w: &mut Writer) {
        match self {
            Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => r.encode(w),
            Request::CreateTtl(r) => r.encode(w),
            Request::Delete(r) => r.encode(w),
            Request::DeleteContainer(r) => r.encode(w),
            Request::Exists(r) => r.encode(w),
            Request::GetData(r) => r.encode(w),
            Request::SetData(r) => r.encode(w),
            Request::GetAcl(r) => r.encode(w),
            Request::SetAcl(r) => r.encode(w),
            Request::GetChildren(r) | Request::GetChildren2(r) => r.encode(w),
            Request::Sync(r) => r.encode(w),
            Request::Check(r) => r.encode(w),
            Request::Multi(ops) | Request::MultiRead(ops) => multi::encode_ops(ops, w),
            Request::Reconfig(r) => r.encode(w),
            Request::CheckWatches(r) | Request::RemoveWatches(r) => r.encode(w),
            Request::Auth(r) => r.encode(w),
            Request::SetWatches(r) => r.encode(w),
            Request::SetWatches2(r) => r.encode(w),
            Request::Sasl(r) => r.encode(w),
            Request::GetEphemerals(r) => r.encode(w),
            Request::GetAllChildrenNumber(r) => r.encode(w),
            Request::AddWatch(r) => r.encode(w),
            Request::Ping | Request::WhoAmI | Request::CloseSession => {}
        }
    }

    pub fn body_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.encode_body(&mut w);
        w.into_inner()
    }
}
