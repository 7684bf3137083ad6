//! What the core sends to a connection's writer, and how the writer puts it on the wire.
//!
//! Everything for one connection goes through one queue, in the order the core produced it:
//! that single queue is what makes "a watch event precedes every later reply" hold by
//! construction. The queue is bounded in messages and in bytes; a client that stops
//! reading fills it, and the core then closes that connection instead of waiting for it or
//! buffering without limit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;
use wire::{ConnectResponse, MultiResult, ReplyHeader, Response, WatcherEvent, Writer};

/// At most this many messages wait for one connection's writer.
pub const MAX_QUEUED_MESSAGES: usize = 16 * 1024;
/// At most this many (estimated) bytes wait for one connection's writer: 64 jute.maxbuffer-sized
/// replies.
pub const MAX_QUEUED_BYTES: usize = 64 << 20;

#[derive(Debug)]
pub enum Outbound {
    /// The handshake reply.
    Connect(ConnectResponse),
    /// A reply; `body` only when `header.err == 0` (or for multi, always).
    Reply {
        header: ReplyHeader,
        body: Option<Response>,
    },
    /// A write's reply, with the stamps the writer needs to time the write's last stage
    /// (`latency.rs`); on the wire the same as `Reply`.
    WriteReply {
        header: ReplyHeader,
        body: Option<Response>,
        stamps: crate::latency::ReplyStamps,
    },
    /// A watch notification (xid -1).
    Event { zxid: i64, event: WatcherEvent },
    /// Flush what is queued, then close the socket.
    Close,
}

impl Outbound {
    /// Appends this message as one length-prefixed frame. Returns false for `Close`.
    pub fn encode(&self, w: &mut Writer) -> bool {
        match self {
            Outbound::Connect(resp) => wire::encode_connect_response(w, resp),
            Outbound::Reply { header, body } | Outbound::WriteReply { header, body, .. } => {
                wire::encode_reply(w, header, body.as_ref())
            }
            Outbound::Event { zxid, event } => wire::encode_notification(w, *zxid, event),
            Outbound::Close => return false,
        }
        true
    }

    /// A cheap upper estimate of the encoded size, for the byte bound: the variable parts
    /// (data, paths, child names) exactly, fixed records rounded up.
    pub fn approx_size(&self) -> usize {
        const FIXED: usize = 128;
        match self {
            Outbound::Reply {
                body: Some(body), ..
            }
            | Outbound::WriteReply {
                body: Some(body), ..
            } => FIXED + response_size(body),
            Outbound::Event { event, .. } => FIXED + event.path.len(),
            _ => FIXED,
        }
    }
}

fn strings_size(v: &[String]) -> usize {
    v.iter().map(|s| s.len() + 4).sum()
}

fn response_size(r: &Response) -> usize {
    let data = |d: &Option<Vec<u8>>| d.as_ref().map_or(0, Vec::len);
    match r {
        Response::GetData(g) | Response::Reconfig(g) => data(&g.data),
        Response::GetChildren(c) => strings_size(&c.children),
        Response::GetChildren2(c) => strings_size(&c.children),
        Response::GetEphemerals(e) => strings_size(&e.ephemerals),
        Response::Create(c) => c.path.len(),
        Response::Create2(c) => c.path.len(),
        Response::Sync(s) => s.path.len(),
        Response::GetAcl(a) => a
            .acl
            .iter()
            .map(|a| a.id.id.len() + a.id.scheme.len() + 12)
            .sum(),
        Response::Multi(results) => results
            .iter()
            .map(|m| {
                100 + match m {
                    MultiResult::Create { path } | MultiResult::Create2 { path, .. } => path.len(),
                    MultiResult::GetChildren { children } => strings_size(children),
                    MultiResult::GetData { data: d, .. } => data(d),
                    _ => 0,
                }
            })
            .sum(),
        _ => 0,
    }
}

/// Why a message was not queued.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The client is not reading fast enough: over the message or byte bound.
    Full,
    /// The writer is gone.
    Closed,
}

/// The core's end of a connection's queue.
#[derive(Debug, Clone)]
pub struct OutboundTx {
    tx: mpsc::Sender<Outbound>,
    queued: Arc<AtomicUsize>,
}

/// The writer's end.
#[derive(Debug)]
pub struct OutboundRx {
    rx: mpsc::Receiver<Outbound>,
    queued: Arc<AtomicUsize>,
}

pub fn queue() -> (OutboundTx, OutboundRx) {
    let (tx, rx) = mpsc::channel(MAX_QUEUED_MESSAGES);
    let queued = Arc::new(AtomicUsize::new(0));
    (
        OutboundTx {
            tx,
            queued: queued.clone(),
        },
        OutboundRx { rx, queued },
    )
}

impl OutboundTx {
    pub fn try_send(&self, msg: Outbound) -> Result<(), Refused> {
        let size = msg.approx_size();
        // `Close` always gets through the byte bound, so a slow client can still be closed.
        if !matches!(msg, Outbound::Close)
            && self.queued.load(Ordering::Relaxed) + size > MAX_QUEUED_BYTES
        {
            return Err(Refused::Full);
        }
        match self.tx.try_send(msg) {
            Ok(()) => {
                self.queued.fetch_add(size, Ordering::Relaxed);
                Ok(())
            }
            Err(mpsc::error::TrySendError::Full(_)) => Err(Refused::Full),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(Refused::Closed),
        }
    }
}

impl OutboundRx {
    pub async fn recv(&mut self) -> Option<Outbound> {
        let msg = self.rx.recv().await?;
        self.queued.fetch_sub(msg.approx_size(), Ordering::Relaxed);
        Some(msg)
    }

    pub fn try_recv(&mut self) -> Option<Outbound> {
        let msg = self.rx.try_recv().ok()?;
        self.queued.fetch_sub(msg.approx_size(), Ordering::Relaxed);
        Some(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::ops::data::GetDataResponse;

    fn big_reply(n: usize) -> Outbound {
        Outbound::Reply {
            header: ReplyHeader {
                xid: 1,
                zxid: 1,
                err: 0,
            },
            body: Some(Response::GetData(GetDataResponse {
                data: Some(vec![0; n]),
                stat: Default::default(),
            })),
        }
    }

    #[tokio::test]
    async fn the_byte_bound_refuses_and_reading_frees_room() {
        let (tx, mut rx) = queue();
        let chunk = 1 << 20;
        let mut sent = 0;
        while tx.try_send(big_reply(chunk)).is_ok() {
            sent += 1;
        }
        assert_eq!(sent, MAX_QUEUED_BYTES / (chunk + 128));
        assert_eq!(tx.try_send(big_reply(chunk)), Err(Refused::Full));
        assert_eq!(
            tx.try_send(Outbound::Close),
            Ok(()),
            "Close always gets through"
        );
        rx.recv().await.unwrap();
        assert_eq!(tx.try_send(big_reply(chunk)), Ok(()));
        drop(rx);
        assert_eq!(tx.try_send(big_reply(1)), Err(Refused::Closed));
    }
}
