//! The AdminServer's `shed_connections` (alias `shed`), as ZooKeeper 3.10's
//! `Commands.ShedConnectionsCommand` takes it: `POST <commandURL>/shed_connections` with the JSON
//! body `{"percentage": <0-100>}` and `Authorization: <scheme> <auth>` whose ids hold every
//! permission on `/` (401 without, 403 short of it). Each client connection is closed with
//! probability `percentage`/100, every one at 100 (core/conns.rs); the sessions live on and their
//! clients reconnect, to this member or another: the way to move load off a member. The answer
//! is ZooKeeper's, `{"connections_shed": <n>, "percentage_requested": <p>, "command":
//! "shed_connections", "error": null}`; a body without a percentage in 0..=100, or not JSON,
//! answers 400 with ZooKeeper's error text.

use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use super::admin_snapshot::{admin_caller, NOT_SERVING};
use super::{Request, Response};
use crate::config::Config;
use crate::msg::CoreMsg;

fn answer(status: u16, error: Option<&str>, shed: Option<(usize, i64)>) -> Response {
    let mut body = json!({ "command": "shed_connections", "error": error });
    if let Some((n, p)) = shed {
        body["connections_shed"] = json!(n);
        body["percentage_requested"] = json!(p);
    }
    Response::json(status, &body)
}

/// The percentage in `body`, as Jackson's `asInt` reads the field: a number (a fraction
/// truncated), a string holding an integer, anything else 0.
fn percentage(body: &[u8]) -> Result<i64, String> {
    let v: Value = if body.iter().all(u8::is_ascii_whitespace) {
        // Jackson reads an empty body as a missing node, without a field.
        Value::Null
    } else {
        serde_json::from_slice(body)
            .map_err(|e| format!("Invalid JSON or failed to read request body: {e}"))?
    };
    let Some(p) = v.get("percentage") else {
        return Err("Missing required field: percentage".into());
    };
    Ok(match p {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .unwrap_or(0),
        Value::String(s) => s.trim().parse().unwrap_or(0),
        Value::Bool(b) => i64::from(*b),
        _ => 0,
    })
}

/// `POST .../shed_connections`.
pub async fn handle(req: &Request, core: &mpsc::Sender<CoreMsg>, cfg: &Config) -> Response {
    if req.method != "POST" {
        return answer(
            405,
            Some("shed_connections takes a POST with {\"percentage\": <0-100>} as its body"),
            None,
        );
    }
    if let Err((status, why)) = admin_caller(req, core, cfg).await {
        return answer(status, Some(why), None);
    }
    let p = match percentage(&req.body) {
        Ok(p) => p,
        Err(e) => return answer(400, Some(&e), None),
    };
    if !(0..=100).contains(&p) {
        return answer(400, Some("Percentage must be between 0 and 100"), None);
    }
    if p == 0 {
        return answer(200, None, Some((0, 0)));
    }
    let (tx, rx) = oneshot::channel();
    let sent = core
        .send(CoreMsg::Shed {
            percentage: p as u8,
            reply: tx,
        })
        .await;
    match (sent, rx.await) {
        (Ok(()), Ok(n)) => answer(200, None, Some((n, p))),
        _ => answer(200, Some(NOT_SERVING), None),
    }
}

#[cfg(test)]
mod tests {
    use super::percentage;

    #[test]
    fn percentage_is_read_as_jacksons_as_int() {
        assert_eq!(percentage(br#"{"percentage": 50}"#), Ok(50));
        assert_eq!(percentage(br#"{"percentage": 50.9}"#), Ok(50));
        assert_eq!(percentage(br#"{"percentage": "30"}"#), Ok(30));
        assert_eq!(percentage(br#"{"percentage": "x"}"#), Ok(0));
        assert_eq!(percentage(br#"{"percentage": -1}"#), Ok(-1));
        assert_eq!(
            percentage(br#"{"other": 1}"#),
            Err("Missing required field: percentage".to_string())
        );
        assert_eq!(
            percentage(b""),
            Err("Missing required field: percentage".to_string())
        );
        assert!(percentage(b"{").unwrap_err().starts_with("Invalid JSON"));
    }
}
