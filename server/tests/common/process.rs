//! The real binary as a child process: a free port, its command line, a guard that kills and
//! reaps it however the test ends, and the wait until it answers `ruok`.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A port for the binary to bind a moment later (see `reserve_ports`).
pub fn free_port() -> u16 {
    super::reserve_ports(1)
}

/// `paddock serve --port PORT --data-dir DIR -D PROP…`, logging warnings, stdout discarded.
pub fn paddock_command(data_dir: &Path, port: u16, props: &[String]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_paddock"));
    cmd.args(["serve", "--port", &port.to_string(), "--data-dir"])
        .arg(data_dir);
    for p in props {
        cmd.args(["-D", p]);
    }
    cmd.env("RUST_LOG", "warn").stdout(Stdio::null());
    cmd
}

/// A running child, killed and reaped when dropped, so a failing test leaves no server behind.
pub struct ChildGuard(Child);

impl ChildGuard {
    pub fn spawn(cmd: &mut Command) -> ChildGuard {
        ChildGuard(cmd.spawn().expect("paddock starts"))
    }

    /// SIGKILL, then reap: the crash the durability tests are about.
    pub fn kill_9(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until the server on `addr` answers `ruok` with `imok` (about 10 s at most).
pub async fn wait_ready(addr: SocketAddr) {
    for _ in 0..200 {
        let ruok = super::four_letter_try(addr, "ruok");
        if let Ok(Some(s)) = tokio::time::timeout(Duration::from_millis(500), ruok).await {
            if s == "imok" {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("paddock did not answer ruok on {addr}");
}
