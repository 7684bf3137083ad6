//! `paddock lock` and `paddock elect`: argument structs (clap derive) and the run functions. The
//! server binary only parses them and calls [`run_lock`] / [`run_elect`], which return the exit status.

use std::process::ExitStatus;
use std::time::Duration;

use clap::{Args, ValueEnum};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};
use tokio::signal::unix::{signal, SignalKind};
use zookeeper_client::{Acl, Client, Permission, StateWatcher};

use crate::contend::{ContendError, Held};
use crate::latch::{self, LeaderLatch};
use crate::lock::Lock;
use crate::secure::{parse_acl, SecurityArgs};
use crate::session::Loss;

/// Exit status: could not connect, bad path, or another error (message on stderr).
pub const EXIT_ERROR: i32 = 1;
/// Exit status: --timeout passed before the lock was acquired.
pub const EXIT_TIMEOUT: i32 = 3;
/// Exit status: the session was lost while holding the lock or leading (CMD was signalled).
pub const EXIT_SESSION_LOST: i32 = 4;

const LOCK_AFTER_HELP: &str = "\
Environment of CMD: PADDOCK_LOCK_TOKEN (the fencing token: the czxid of this holder's lock node,
larger for every later holder; pass it to storage with each write and have storage refuse any
write whose token is older than the last one it accepted) and PADDOCK_LOCK_PATH (PATH).

Exit status: CMD's status (128+N if CMD died of signal N); 3 if --timeout passed before the lock
was acquired; 4 if the session was lost while holding the lock (CMD was sent --on-loss first);
1 on any other error (cannot connect, invalid PATH); 2 on bad usage. Without CMD: 0 once stdin
closes and the lock is released.

Node layout: PATH/_c_<uuid>-lock-<seq>, ephemeral sequential, as Curator's InterProcessMutex, so a
Curator InterProcessMutex given the same PATH and `paddock lock` exclude each other. Waiting is
fair (arrival order) and each waiter watches only its predecessor.

Examples:
  paddock lock --servers zk1:2181,zk2:2181 /locks/jobs -- ./job.sh
  paddock lock --timeout 10s /locks/jobs -- ./job.sh || [ $? -eq 3 ] && echo busy
  paddock lock /locks/jobs            # prints the token, holds until stdin closes
  PADDOCK_AUTH=digest:jobs:secret paddock lock --tls-ca ca.pem --servers zk1:2281 /locks/jobs -- ./job.sh

With an identity (--tls-cert, --auth, --sasl) the nodes are the caller's only (auth::cdrwa plus
--acl): no other identity can delete the holder's node. Without one they are open to everyone.";

const ELECT_AFTER_HELP: &str = "\
Environment of CMD: PADDOCK_LEADER_TOKEN (the fencing token of this leadership: the czxid of the
participant's node) and PADDOCK_ELECT_PATH (PATH).

Exit status: CMD's status once CMD exits on its own (leadership is then resigned); 4 if the
session (and so leadership) was lost (CMD was sent --on-loss first); 1 on any other error; 2 on
bad usage. Without CMD: prints `leader <PROPOSAL> <TOKEN>` once elected and leads until stdin
closes (exit 0). With --listen: prints each new leader's proposal, one line per change, until
interrupted.

Node layout: PATH/_c_<uuid>-latch-<seq> holding the proposal, as Curator's LeaderLatch, so
Curator's LeaderLatch.getLeader() reports the proposal of a `paddock elect` leader and the other
way round.

Examples:
  paddock elect --proposal \"$(hostname)\" /election/scheduler -- ./scheduler
  paddock elect --listen /election/scheduler";

/// What CMD is sent when the session is lost while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnLoss {
    /// SIGTERM
    Term,
    /// SIGINT
    Int,
    /// SIGKILL
    Kill,
    /// SIGHUP
    Hup,
    /// Send nothing; CMD runs on (the exit status still says the session was lost)
    None,
}

impl OnLoss {
    fn signal(self) -> Option<Signal> {
        match self {
            OnLoss::Term => Some(Signal::SIGTERM),
            OnLoss::Int => Some(Signal::SIGINT),
            OnLoss::Kill => Some(Signal::SIGKILL),
            OnLoss::Hup => Some(Signal::SIGHUP),
            OnLoss::None => None,
        }
    }
}

/// The connection options both commands take.
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    /// ZooKeeper servers, host:port[,host:port...][/chroot] (paddock or Apache ZooKeeper).
    #[arg(
        long,
        value_name = "HOSTS",
        env = "PADDOCK_SERVERS",
        default_value = "127.0.0.1:2181"
    )]
    pub servers: String,

    /// Session timeout requested from the server (the lease: how long a holder that stopped
    /// answering keeps the lock). Units ms, s, m; a bare number is seconds. The server clamps it
    /// to its [2, 20] ticks.
    #[arg(long, value_name = "T", default_value = "10s", value_parser = parse_duration)]
    pub session_timeout: Duration,

    #[command(flatten)]
    pub security: SecurityArgs,

    /// Also grant SCHEME:ID:PERMS on the nodes made (repeat for more), e.g. world:anyone:r to let
    /// anyone see the holder, or digest:bob:HASH:cdrwa to let bob contend too. Needs an identity
    /// (--tls-cert, --auth or --sasl): the nodes are then auth::cdrwa (every id this session
    /// authenticated as) plus these, so no other identity can delete the holder's node.
    #[arg(long = "acl", value_name = "SCHEME:ID:PERMS", value_parser = parse_acl)]
    pub acl: Vec<Acl>,
}

/// `paddock lock`.
#[derive(Debug, Clone, Args)]
#[command(after_help = LOCK_AFTER_HELP)]
pub struct LockArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,

    /// Give up waiting for the lock after T (exit status 3). Units ms, s, m; a bare number is
    /// seconds. Default: wait forever.
    #[arg(long, value_name = "T", value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// Signal sent to CMD if the session is lost while it runs.
    #[arg(long, value_name = "SIGNAL", value_enum, default_value = "term")]
    pub on_loss: OnLoss,

    /// The lock's znode path, e.g. /locks/jobs (made if missing).
    #[arg(value_name = "PATH")]
    pub path: String,

    /// The command to run while holding the lock (after `--`). Without it: print the token and
    /// hold the lock until stdin closes.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `paddock elect`.
#[derive(Debug, Clone, Args)]
#[command(after_help = ELECT_AFTER_HELP)]
pub struct ElectArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,

    /// This participant's proposal (Curator's participant id), shown as the leader's name.
    /// Default: <hostname>-<pid>.
    #[arg(long, value_name = "VALUE", conflicts_with = "listen")]
    pub proposal: Option<String>,

    /// Do not campaign: print the leader's proposal now and on each change.
    #[arg(long)]
    pub listen: bool,

    /// Signal sent to CMD when leadership is lost while it runs.
    #[arg(long, value_name = "SIGNAL", value_enum, default_value = "term")]
    pub on_loss: OnLoss,

    /// The election's znode path, e.g. /election/scheduler (made if missing).
    #[arg(value_name = "PATH")]
    pub path: String,

    /// The command to run while leader (after `--`). Without it: print `leader PROPOSAL TOKEN`
    /// once elected and lead until stdin closes.
    #[arg(last = true, value_name = "CMD", conflicts_with = "listen")]
    pub command: Vec<String>,
}

/// Parses `250ms`, `10s`, `2m`, or a bare number of seconds (`1.5`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("invalid duration {s:?} (examples: 500ms, 10s, 2m)"))?;
    if !v.is_finite() || v < 0.0 || v * scale > 1e9 {
        return Err(format!("invalid duration {s:?}: out of range"));
    }
    Ok(Duration::from_secs_f64(v * scale))
}

/// Connects with the requested session timeout and security, giving up after a while if no server
/// answers. Returns the client and the ACL for the nodes it makes (empty: open).
pub async fn connect(args: &ConnectArgs) -> anyhow::Result<(Client, Vec<Acl>)> {
    let security = args.security.load()?;
    if !args.acl.is_empty() && !security.authenticated() {
        anyhow::bail!(
            "--acl needs an identity (--tls-cert, --auth or --sasl): without one the nodes are open to everyone"
        );
    }
    let acl = security.node_acl(&args.acl);
    let limit = args.session_timeout.max(Duration::from_secs(10));
    let connector = Client::connector().with_session_timeout(args.session_timeout);
    let connecting = security.connect(connector, &args.servers);
    match tokio::time::timeout(limit, connecting).await {
        Ok(Ok(c)) => Ok((c, acl)),
        Ok(Err(e)) => anyhow::bail!("cannot connect to {}: {e}", args.servers),
        Err(_) => anyhow::bail!(
            "cannot connect to {}: no answer within {} s",
            args.servers,
            limit.as_secs()
        ),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Runs `paddock lock`; returns the process exit status.
pub fn run_lock(args: LockArgs) -> i32 {
    runtime().block_on(async move {
        let (client, acl) = match connect(&args.connect).await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("paddock lock: {e:#}");
                return EXIT_ERROR;
            }
        };
        let states = client.state_watcher();
        let code = match lock_main(client, acl, args).await {
            Ok(code) => code,
            Err(e) => {
                eprintln!("paddock lock: {e:#}");
                EXIT_ERROR
            }
        };
        wait_closed(states).await;
        code
    })
}

/// Runs `paddock elect`; returns the process exit status.
pub fn run_elect(args: ElectArgs) -> i32 {
    runtime().block_on(async move {
        let (client, acl) = match connect(&args.connect).await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("paddock elect: {e:#}");
                return EXIT_ERROR;
            }
        };
        let states = client.state_watcher();
        let r = if args.listen {
            listen_main(client, args).await
        } else {
            elect_main(client, acl, args).await
        };
        let code = match r {
            Ok(code) => code,
            Err(e) => {
                eprintln!("paddock elect: {e:#}");
                EXIT_ERROR
            }
        };
        wait_closed(states).await;
        code
    })
}

/// Once every handle on the client is dropped, it closes its session (deleting its ephemeral nodes
/// at once, instead of at session expiry); wait a little for that before the process exits.
async fn wait_closed(mut states: StateWatcher) {
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        let mut state = states.state();
        while !state.is_terminated() {
            state = states.changed().await;
        }
    })
    .await;
}

struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> anyhow::Result<Signals> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    async fn recv(&mut self) -> Signal {
        tokio::select! {
            _ = self.int.recv() => Signal::SIGINT,
            _ = self.term.recv() => Signal::SIGTERM,
        }
    }
}

fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => EXIT_ERROR,
    }
}

fn spawn(command: &[String], env: &[(&str, String)]) -> anyhow::Result<Child> {
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn()
        .map_err(|e| anyhow::anyhow!("cannot run {:?}: {e}", command[0]))
}

fn send(child: &Child, sig: Signal) {
    if let Some(pid) = child.id() {
        let _ = kill(Pid::from_raw(pid as i32), sig);
    }
}

/// Why holding ended.
enum Outcome {
    Exited(ExitStatus),
    Lost(Loss, ExitStatus),
}

/// Runs CMD until it exits, forwarding SIGINT/SIGTERM; if `lost` resolves first, sends `on_loss`
/// and waits for CMD to exit.
async fn supervise(
    mut child: Child,
    lost: impl std::future::Future<Output = Loss>,
    on_loss: OnLoss,
    signals: &mut Signals,
) -> anyhow::Result<Outcome> {
    tokio::pin!(lost);
    loop {
        tokio::select! {
            status = child.wait() => return Ok(Outcome::Exited(status?)),
            sig = signals.recv() => send(&child, sig),
            loss = &mut lost => {
                if let Some(sig) = on_loss.signal() {
                    send(&child, sig);
                }
                let status = loop {
                    tokio::select! {
                        status = child.wait() => break status?,
                        sig = signals.recv() => send(&child, sig),
                    }
                };
                return Ok(Outcome::Lost(loss, status));
            }
        }
    }
}

/// Holds until stdin reaches end of file (or a signal arrives), or the session is lost.
async fn hold_until_stdin_closes(
    lost: impl std::future::Future<Output = Loss>,
    signals: &mut Signals,
) -> Option<Loss> {
    let stdin = async {
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 512];
        loop {
            match stdin.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::select! {
        _ = stdin => None,
        _ = signals.recv() => None,
        loss = lost => Some(loss),
    }
}

async fn lock_main(client: Client, acl: Vec<Acl>, args: LockArgs) -> anyhow::Result<i32> {
    let mut signals = Signals::new()?;
    let lock = Lock::new(client.clone(), &args.path)?.with_acl(acl.clone());
    warn_foreign_deleters(&client, &args.path, &acl, "paddock lock").await;
    let acquiring = async {
        match args.timeout {
            Some(t) => lock.try_acquire(t).await,
            None => lock.acquire().await,
        }
    };
    let held = tokio::select! {
        r = acquiring => r,
        // Dropping the acquire future leaves the queue (and the session closes on the way out).
        sig = signals.recv() => return Ok(128 + sig as i32),
    };
    let held = match held {
        Ok(h) => h,
        Err(e @ ContendError::Timeout { .. }) => {
            eprintln!("paddock lock: {e}");
            return Ok(EXIT_TIMEOUT);
        }
        Err(e @ ContendError::SessionLost(_)) => {
            eprintln!("paddock lock: {e} while waiting for {}", args.path);
            return Ok(EXIT_SESSION_LOST);
        }
        Err(e) => return Err(e.into()),
    };
    let token = held.token();
    hold(
        held,
        Holding {
            tool: "paddock lock",
            what: format!("the lock on {}", args.path),
            announce: token.to_string(),
            env: [
                ("PADDOCK_LOCK_TOKEN", token.to_string()),
                ("PADDOCK_LOCK_PATH", args.path.clone()),
            ],
            command: &args.command,
            on_loss: args.on_loss,
        },
        &mut signals,
    )
    .await
}

/// What `hold` needs to know about the command holding a lock or a leadership.
struct Holding<'a> {
    tool: &'static str,
    /// What is held, for messages: "the lock on /locks/jobs".
    what: String,
    /// Printed on stdout when there is no CMD.
    announce: String,
    env: [(&'static str, String); 2],
    command: &'a [String],
    on_loss: OnLoss,
}

/// Shared by `paddock lock` and `paddock elect` once they hold: without CMD, print the
/// announcement and hold until stdin closes; with CMD, run it under supervision. Releases when
/// done; a lost session gives EXIT_SESSION_LOST.
async fn hold(held: Held, h: Holding<'_>, signals: &mut Signals) -> anyhow::Result<i32> {
    if h.command.is_empty() {
        println!("{}", h.announce);
        if let Some(loss) = hold_until_stdin_closes(held.lost(), signals).await {
            eprintln!("{}: lost {}: {loss}", h.tool, h.what);
            return Ok(EXIT_SESSION_LOST);
        }
        held.release().await?;
        return Ok(0);
    }
    let child = spawn(h.command, &h.env)?;
    match supervise(child, held.lost(), h.on_loss, signals).await? {
        Outcome::Exited(status) => {
            held.release().await?;
            Ok(exit_code(status))
        }
        Outcome::Lost(loss, status) => {
            eprintln!(
                "{}: lost {} while {:?} ran: {loss}; it then exited with {}",
                h.tool,
                h.what,
                h.command[0],
                exit_code(status)
            );
            Ok(EXIT_SESSION_LOST)
        }
    }
}

/// With a creator-only `acl`: if `path` already exists and lets ids other than this session's
/// (whoAmI) and --acl's delete its children, says so on stderr. The tool's nodes cannot protect
/// themselves there: deleting a node needs the `d` permission on its parent.
async fn warn_foreign_deleters(client: &Client, path: &str, acl: &[Acl], tool: &str) {
    if acl.is_empty() {
        return;
    }
    let Ok((parent, _)) = client.get_acl(path).await else {
        return; // missing (made with `acl`), or not ours to read: the create will tell
    };
    let me = client.list_auth_users().await.unwrap_or_default();
    let mine = |a: &Acl| {
        me.iter()
            .any(|u| u.scheme() == a.scheme() && u.user() == a.id())
    };
    // Where this session may not create, the create fails and says so: no warning needed.
    let may_create = parent.iter().any(|a| {
        a.permission().has(Permission::CREATE)
            && ((a.scheme() == "world" && a.id() == "anyone") || mine(a))
    });
    if !may_create {
        return;
    }
    let foreign: Vec<String> = parent
        .iter()
        .filter(|a| a.permission().has(Permission::DELETE))
        .filter(|a| {
            a.scheme() == "world"
                || !(mine(a)
                    || acl
                        .iter()
                        .any(|x| x.scheme() == a.scheme() && x.id() == a.id()))
        })
        .map(|a| format!("{}:{}", a.scheme(), a.id()))
        .collect();
    if !foreign.is_empty() {
        eprintln!(
            "{tool}: warning: {path} exists and lets {} delete its children, so they can delete this \
             holder's node; setAcl {path} to the contenders' ids, or use a new path",
            foreign.join(", ")
        );
    }
}

fn default_proposal() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    format!("{host}-{}", std::process::id())
}

async fn elect_main(client: Client, acl: Vec<Acl>, args: ElectArgs) -> anyhow::Result<i32> {
    let mut signals = Signals::new()?;
    let proposal = args.proposal.clone().unwrap_or_else(default_proposal);
    let latch = LeaderLatch::new(client.clone(), &args.path, &proposal)?.with_acl(acl.clone());
    warn_foreign_deleters(&client, &args.path, &acl, "paddock elect").await;
    let held = tokio::select! {
        r = latch.campaign() => r,
        sig = signals.recv() => return Ok(128 + sig as i32),
    };
    let held = match held {
        Ok(h) => h,
        Err(e @ ContendError::SessionLost(_)) => {
            eprintln!("paddock elect: {e} while campaigning on {}", args.path);
            return Ok(EXIT_SESSION_LOST);
        }
        Err(e) => return Err(e.into()),
    };
    let token = held.token();
    hold(
        held,
        Holding {
            tool: "paddock elect",
            what: format!("leadership of {}", args.path),
            announce: format!("leader {proposal} {token}"),
            env: [
                ("PADDOCK_LEADER_TOKEN", token.to_string()),
                ("PADDOCK_ELECT_PATH", args.path.clone()),
            ],
            command: &args.command,
            on_loss: args.on_loss,
        },
        &mut signals,
    )
    .await
}

async fn listen_main(client: Client, args: ElectArgs) -> anyhow::Result<i32> {
    use std::io::Write;
    let mut signals = Signals::new()?;
    crate::contend::validate_dir(&args.path)?;
    let mut last: Option<String> = None;
    loop {
        let (now, watcher) = latch::leader_and_watch(&client, &args.path).await?;
        if now != last {
            if let Some(l) = &now {
                println!("{l}");
                let _ = std::io::stdout().flush();
            }
            last = now;
        }
        tokio::select! {
            _ = watcher.changed() => {}
            _ = signals.recv() => return Ok(0),
            loss = crate::session::session_lost(&client) => {
                eprintln!("paddock elect: {loss}");
                return Ok(EXIT_SESSION_LOST);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("").is_err());
    }
}
