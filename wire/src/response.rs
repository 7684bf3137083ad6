//! `Response`: every reply body the server sends after a `ReplyHeader` with err 0.

use crate::error::{DecodeError, ErrorCode};
use crate::jute::{Reader, Record, Writer};
use crate::opcode::OpCode;
use crate::ops::auth::SetSaslResponse;
use crate::ops::children::{
    GetAllChildrenNumberResponse, GetChildren2Response, GetChildrenResponse,
};
use crate::ops::create::{Create2Response, CreateResponse};
use crate::ops::data::{GetDataResponse, SetDataResponse};
use crate::ops::ephemerals::GetEphemeralsResponse;
use crate::ops::exists::ExistsResponse;
use crate::ops::get_acl::GetAclResponse;
use crate::ops::multi::{self, MultiHeader};
use crate::ops::set_acl::SetAclResponse;
use crate::ops::sync::SyncResponse;
use crate::ops::watches::ErrorResponse;
use crate::ops::who_am_i::WhoAmIResponse;
use crate::stat::Stat;

/// A reply body. `Empty` is the reply of ops with no response record (delete, ping, auth,
/// setWatches, checkWatches, removeWatches, closeSession) and of every error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    Empty,
    Create(CreateResponse),
    Create2(Create2Response),
    Exists(ExistsResponse),
    GetData(GetDataResponse),
    SetData(SetDataResponse),
    GetAcl(GetAclResponse),
    SetAcl(SetAclResponse),
    GetChildren(GetChildrenResponse),
    GetChildren2(GetChildren2Response),
    Sync(SyncResponse),
    Multi(Vec<MultiResult>),
    /// reconfig's reply: the new config as a GetDataResponse.
    Reconfig(GetDataResponse),
    Sasl(SetSaslResponse),
    GetEphemerals(GetEphemeralsResponse),
    GetAllChildrenNumber(GetAllChildrenNumberResponse),
    AddWatch(ErrorResponse),
    WhoAmI(WhoAmIResponse),
}

/// One result inside a multi or multiRead reply (ZooKeeper's `OpResult`, written by
/// `MultiResponse.serialize`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiResult {
    /// create (1): MultiHeader.type 1.
    Create {
        path: String,
    },
    /// create2, createContainer, createTTL: MultiHeader.type 15.
    Create2 {
        path: String,
        stat: Stat,
    },
    Delete,
    SetData {
        stat: Stat,
    },
    Check,
    GetChildren {
        children: Vec<String>,
    },
    GetData {
        data: Option<Vec<u8>>,
        stat: Stat,
    },
    /// MultiHeader.type -1, the code in both the header and the body.
    Error(i32),
}

impl MultiResult {
    pub fn error(code: ErrorCode) -> MultiResult {
        MultiResult::Error(code.code())
    }

    fn header_type(&self) -> i32 {
        match self {
            MultiResult::Create { .. } => OpCode::Create.code(),
            MultiResult::Create2 { .. } => OpCode::Create2.code(),
            MultiResult::Delete => OpCode::Delete.code(),
            MultiResult::SetData { .. } => OpCode::SetData.code(),
            MultiResult::Check => OpCode::Check.code(),
            MultiResult::GetChildren { .. } => OpCode::GetChildren.code(),
            MultiResult::GetData { .. } => OpCode::GetData.code(),
            MultiResult::Error(_) => OpCode::Error.code(),
        }
    }

    pub fn encode(&self, w: &mut Writer) {
        let err = match self {
            MultiResult::Error(e) => *e,
            _ => 0,
        };
        MultiHeader {
            op_type: self.header_type(),
            done: false,
            err,
        }
        .encode(w);
        match self {
            MultiResult::Create { path } => w.write_string(path),
            MultiResult::Create2 { path, stat } => {
                w.write_string(path);
                stat.encode(w);
            }
            MultiResult::Delete | MultiResult::Check => {}
            MultiResult::SetData { stat } => stat.encode(w),
            MultiResult::GetChildren { children } => w.write_string_vec(children),
            MultiResult::GetData { data, stat } => {
                w.write_buffer(data.as_deref());
                stat.encode(w);
            }
            MultiResult::Error(e) => ErrorResponse { err: *e }.encode(w),
        }
    }

    pub fn decode_body(h: &MultiHeader, r: &mut Reader<'_>) -> Result<MultiResult, DecodeError> {
        let op = OpCode::from_code(h.op_type).ok_or(DecodeError::UnknownOpcode(h.op_type))?;
        Ok(match op {
            OpCode::Create => MultiResult::Create {
                path: r.read_string("CreateResponse.path")?,
            },
            OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => {
                let c = Create2Response::decode(r)?;
                MultiResult::Create2 {
                    path: c.path,
                    stat: c.stat,
                }
            }
            OpCode::Delete => MultiResult::Delete,
            OpCode::SetData => MultiResult::SetData {
                stat: Stat::decode(r)?,
            },
            OpCode::Check => MultiResult::Check,
            OpCode::GetChildren => MultiResult::GetChildren {
                children: r.read_string_vec("GetChildrenResponse.children")?,
            },
            OpCode::GetData => {
                let d = GetDataResponse::decode(r)?;
                MultiResult::GetData {
                    data: d.data,
                    stat: d.stat,
                }
            }
            OpCode::Error => MultiResult::Error(ErrorResponse::decode(r)?.err),
            _ => return Err(DecodeError::Invalid("unexpected op type in multi result")),
        })
    }
}

impl Response {
    pub fn encode(&self, w: &mut Writer) {
        match self {
            Response::Empty => {}
            Response::Create(r) => r.encode(w),
            Response::Create2(r) => r.encode(w),
            Response::Exists(r) => r.encode(w),
            Response::GetData(r) | Response::Reconfig(r) => r.encode(w),
            Response::SetData(r) => r.encode(w),
            Response::GetAcl(r) => r.encode(w),
            Response::SetAcl(r) => r.encode(w),
            Response::GetChildren(r) => r.encode(w),
            Response::GetChildren2(r) => r.encode(w),
            Response::Sync(r) => r.encode(w),
            Response::Multi(results) => multi::encode_results(results, w),
            Response::Sasl(r) => r.encode(w),
            Response::GetEphemerals(r) => r.encode(w),
            Response::GetAllChildrenNumber(r) => r.encode(w),
            Response::AddWatch(r) => r.encode(w),
            Response::WhoAmI(r) => r.encode(w),
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.encode(&mut w);
        w.into_inner()
    }

    /// Decodes the body of a successful reply to a request of opcode `op` (client side:
    /// tests, the captured-vector checks and tools).
    pub fn decode(op: OpCode, body: &[u8]) -> Result<Response, DecodeError> {
        let r = &mut Reader::new(body);
        Ok(match op {
            OpCode::Create => Response::Create(CreateResponse::decode(r)?),
            OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => {
                Response::Create2(Create2Response::decode(r)?)
            }
            OpCode::Exists => Response::Exists(ExistsResponse::decode(r)?),
            OpCode::GetData => Response::GetData(GetDataResponse::decode(r)?),
            OpCode::SetData => Response::SetData(SetDataResponse::decode(r)?),
            OpCode::GetAcl => Response::GetAcl(GetAclResponse::decode(r)?),
            OpCode::SetAcl => Response::SetAcl(SetAclResponse::decode(r)?),
            OpCode::GetChildren => Response::GetChildren(GetChildrenResponse::decode(r)?),
            OpCode::GetChildren2 => Response::GetChildren2(GetChildren2Response::decode(r)?),
            OpCode::Sync => Response::Sync(SyncResponse::decode(r)?),
            OpCode::Multi | OpCode::MultiRead => Response::Multi(multi::decode_results(r)?),
            OpCode::Reconfig => Response::Reconfig(GetDataResponse::decode(r)?),
            OpCode::Sasl => Response::Sasl(SetSaslResponse::decode(r)?),
            OpCode::GetEphemerals => Response::GetEphemerals(GetEphemeralsResponse::decode(r)?),
            OpCode::GetAllChildrenNumber => {
                Response::GetAllChildrenNumber(GetAllChildrenNumberResponse::decode(r)?)
            }
            OpCode::AddWatch => Response::AddWatch(ErrorResponse::decode(r)?),
            OpCode::WhoAmI => Response::WhoAmI(WhoAmIResponse::decode(r)?),
            _ => Response::Empty,
        })
    }
}
