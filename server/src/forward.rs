//! Forwarding to the leader: how a follower or observer gets its clients' writes and sessions'
//! activity to the member that proposes.
//!
//! ```text
//!  follower core ──ToLeader frames──▶ LeaderLink task ══App link══▶ leader: serve_follower task
//!                                                                   Propose ─▶ stamp time ─▶ Handle::propose
//!                                                                   (a reconfig: the leader core's checks first)
//!                                                                   Touch   ─▶ leader core (session tracker)
//! ```
//!
//! One ordered link per follower and leader keeps each session's writes in order: the follower
//! sends them in the order its clients did, the leader proposes them in arrival order. Nothing
//! comes back on the link: the entry commits, every member applies it, and the member holding
//! the client's connection replies. The leader stamps the entry's time with its own clock, as
//! ZooKeeper's leader does, so mtimes never go backwards across members with skewed clocks and
//! TTLs are judged by one clock.
//!
//! Failure is never hidden. A leader that cannot propose (it lost its leadership) or reads a
//! frame it cannot decode closes the link; a follower whose link closes, fails to connect or
//! cannot take more frames tells its core (`CoreMsg::ForwardLost`), which closes every client
//! connection with a write in flight on that link: the client sees ConnectionLoss and decides,
//! as with any lost connection, since the write may or may not commit. A forwarded write is never
//! retried (a sequential create would be applied twice).

use std::time::Duration;

use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use consensus::net::{FramedStream, PeerNet};
use wire::Request;
use znode_tree::{Entry, Txn};

use crate::forward_codec::ToLeader;
use crate::msg::CoreMsg;

/// Frames the core may queue for the leader before the link counts as stuck.
const LINK_QUEUE: usize = 64 * 1024;
/// How long connecting to the leader may take before the link counts as lost.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// The core's end of its link to the current leader.
#[derive(Debug)]
pub struct LeaderLink {
    pub leader: u64,
    /// Which link this is: a `ForwardLost` names the epoch it is about, so a late report of an
    /// old link does not fail writes sent on the new one.
    pub epoch: u64,
    tx: mpsc::Sender<Vec<u8>>,
}

impl LeaderLink {
    /// Starts connecting to `leader`; frames sent meanwhile wait in the queue.
    pub fn open(net: PeerNet, leader: u64, epoch: u64, core: mpsc::Sender<CoreMsg>) -> LeaderLink {
        let (tx, rx) = mpsc::channel(LINK_QUEUE);
        tokio::spawn(tracing::Instrument::in_current_span(run_link(
            net, leader, epoch, rx, core,
        )));
        LeaderLink { leader, epoch, tx }
    }

    /// Queues a frame. `false` when the link is gone or stuck: the caller treats it as lost.
    pub fn send(&self, frame: &ToLeader) -> bool {
        self.tx.try_send(frame.encode()).is_ok()
    }
}

async fn run_link(
    net: PeerNet,
    leader: u64,
    epoch: u64,
    mut rx: mpsc::Receiver<Vec<u8>>,
    core: mpsc::Sender<CoreMsg>,
) {
    let why = match tokio::time::timeout(CONNECT_TIMEOUT, net.connect_app(leader)).await {
        Ok(Ok(stream)) => {
            info!(leader, epoch, "forward link to the leader is up");
            pump(stream, &mut rx).await
        }
        Ok(Err(e)) => format!("cannot connect: {e}"),
        Err(_) => "connecting timed out".to_string(),
    };
    if why.is_empty() {
        debug!(leader, epoch, "forward link closed by this member");
        return;
    }
    warn!(leader, epoch, reason = %why, "forward link to the leader lost");
    let _ = core.send(CoreMsg::ForwardLost { epoch }).await;
}

/// Writes queued frames until the core drops its end (returns "") or the link fails (the reason).
async fn pump(stream: FramedStream, rx: &mut mpsc::Receiver<Vec<u8>>) -> String {
    let (mut reader, mut writer) = stream.into_split();
    loop {
        tokio::select! {
            frame = rx.recv() => match frame {
                None => {
                    let _ = writer.close().await;
                    return String::new();
                }
                Some(frame) => {
                    if let Err(e) = writer.send(&frame).await {
                        return format!("write failed: {e}");
                    }
                }
            },
            // The leader never writes on this link: anything but a pending read is its end.
            got = reader.recv() => return match got {
                Ok(None) => "the leader closed the link".to_string(),
                Ok(Some(_)) => "the leader sent an unexpected frame".to_string(),
                Err(e) => format!("read failed: {e}"),
            },
        }
    }
}

/// The leader's side: accepts forward links from the other members for as long as the server
/// runs. Every member runs it; a member that is not the leader closes the links it is sent
/// (its proposals fail), which tells the sender to look again.
pub fn serve_followers(net: PeerNet, raft: consensus::Handle, core: mpsc::Sender<CoreMsg>) {
    let Some(mut streams) = net.app_streams() else {
        warn!("forward links are already being served");
        return;
    };
    tokio::spawn(async move {
        while let Some((peer, stream)) = streams.recv().await {
            tokio::spawn(serve_follower(peer, stream, raft.clone(), core.clone()));
        }
    });
}

async fn serve_follower(
    peer: u64,
    stream: FramedStream,
    raft: consensus::Handle,
    core: mpsc::Sender<CoreMsg>,
) {
    let (mut reader, _writer) = stream.into_split();
    let why = loop {
        let frame = match reader.recv().await {
            Ok(Some(f)) => f,
            Ok(None) => break None,
            Err(e) => break Some(format!("read failed: {e}")),
        };
        match ToLeader::decode(&frame) {
            Ok(ToLeader::Propose(bytes)) => {
                let mut entry = match Entry::decode(&bytes) {
                    Ok(e) => e,
                    Err(e) => break Some(format!("undecodable entry: {e}")),
                };
                entry.time_ms = crate::clock::now_ms();
                // The member is the link's, whatever the entry says: the owner check
                // (SessionMoved) rests on it.
                if entry.via.is_some() {
                    entry.via = Some(peer);
                }
                if let Txn::Attach { member } = &mut entry.txn {
                    *member = peer;
                }
                if let Txn::Write(Request::Reconfig(_)) = entry.txn {
                    // The leader's core judges a reconfig first (ReconfigInProgress,
                    // NewConfigNoQuorum); the link waits for it, so later frames keep their order.
                    let (done, judged) = tokio::sync::oneshot::channel();
                    if core
                        .send(CoreMsg::ForwardedReconfig { entry, done })
                        .await
                        .is_err()
                    {
                        break Some("the core stopped".to_string());
                    }
                    match judged.await {
                        Ok(Ok(())) => continue,
                        Ok(Err(e)) => break Some(format!("cannot propose: {e}")),
                        Err(_) => break Some("the core stopped".to_string()),
                    }
                }
                if let Err(e) = raft.propose(entry.encode()) {
                    break Some(format!("cannot propose: {e}"));
                }
            }
            Ok(ToLeader::Touch(sessions)) => {
                if core.send(CoreMsg::PeerTouch { sessions }).await.is_err() {
                    break Some("the core stopped".to_string());
                }
            }
            Err(e) => break Some(format!("bad frame: {e}")),
        }
    };
    // Dropping the stream closes the link: the follower fails what it had in flight.
    match why {
        None => debug!(peer, "forward link from a member closed"),
        Some(why) => info!(peer, reason = %why, "closing a member's forward link"),
    }
}
