//! What the examples share: connecting to ZooKeeper and PostgreSQL, printing a line at once.
#![allow(dead_code)]

use std::io::Write;
use std::time::Duration;

use zookeeper_client::Client;

// The connection flags every example takes (a plain comment: clap would show a doc comment as
// each example's about text).
#[derive(clap::Args, Debug)]
pub struct ZkArgs {
    /// ZooKeeper connect string (host:port,...).
    #[arg(long)]
    pub servers: String,
    #[arg(long, default_value_t = 4000)]
    pub session_timeout_ms: u64,
}

impl ZkArgs {
    pub async fn connect(&self) -> anyhow::Result<Client> {
        zk(&self.servers, self.session_timeout_ms).await
    }
}

pub async fn zk(servers: &str, session_timeout_ms: u64) -> anyhow::Result<Client> {
    Ok(Client::connector()
        .with_session_timeout(Duration::from_millis(session_timeout_ms))
        .connect(servers)
        .await?)
}

pub async fn pg(conn: &str) -> anyhow::Result<tokio_postgres::Client> {
    let (client, connection) = tokio_postgres::connect(conn, tokio_postgres::NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("postgres connection: {e}");
        }
    });
    Ok(client)
}

/// One line on stdout, flushed: the tests read these as they come.
pub fn say(line: impl AsRef<str>) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", line.as_ref());
    let _ = out.flush();
}

pub fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
}

pub fn append(path: &str, line: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(format!("{line}\n").as_bytes())
}
