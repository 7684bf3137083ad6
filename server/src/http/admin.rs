//! ZooKeeper 3.9's AdminServer: `GET <commandURL>` lists the commands as ZooKeeper's HTML
//! page of links does, `GET <commandURL>/<name>` answers a command's JSON with ZooKeeper's
//! field names and JSON types (`org.apache.zookeeper.server.admin.Commands`). Every answer
//! carries `command` and `error`; an unknown command, or one paddock cannot honour, answers
//! HTTP 200 with `error` saying why, as ZooKeeper answers an unknown command.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::config::Config;
use crate::fourlw::{full_version, LatencyStats, Mode, Parts, ServerView};
use crate::msg::ViewReset;

/// The commands ZooKeeper 3.9.5 lists, and 3.10's `shed_connections`, with their short names
/// (ZooKeeper's aliases, mostly the four-letter words). The list page shows the primary names.
pub const COMMANDS: &[(&str, &[&str])] = &[
    ("configuration", &["conf", "config"]),
    ("connection_stat_reset", &["crst"]),
    ("connections", &["cons"]),
    ("dirs", &[]),
    ("dump", &[]),
    ("environment", &["env", "envi"]),
    ("get_trace_mask", &["gtmk"]),
    ("hash", &[]),
    ("initial_configuration", &["icfg"]),
    ("is_read_only", &["isro"]),
    ("last_snapshot", &["lsnp"]),
    ("leader", &["lead"]),
    ("monitor", &["mntr"]),
    ("observer_connection_stat_reset", &["orst"]),
    ("observers", &["obsr"]),
    ("restore", &["rest"]),
    ("ruok", &[]),
    ("server_stats", &["srvr"]),
    ("set_trace_mask", &["stmk"]),
    ("shed_connections", &["shed"]),
    ("snapshot", &["snap"]),
    ("stat_reset", &["srst"]),
    ("stats", &["stat"]),
    ("system_properties", &["sysp"]),
    ("voting_view", &[]),
    ("watch_summary", &["wchs"]),
    ("watches", &["wchc"]),
    ("watches_by_path", &["wchp"]),
    ("zabstate", &[]),
];

/// Commands answered only with an `error`, and why (DESIGN.md, "AdminServer commands").
const NOT_HONOURED: &[(&str, &str)] = &[(
    "system_properties",
    "not provided by paddock: it is not a JVM and has no Java system properties",
)];

/// The primary name of `name`, if it is a command or an alias.
pub fn resolve(name: &str) -> Option<&'static str> {
    COMMANDS
        .iter()
        .find(|(primary, aliases)| *primary == name || aliases.contains(&name))
        .map(|(primary, _)| *primary)
}

/// What a command resets before the view is taken.
pub fn reset_of(command: &str) -> ViewReset {
    match command {
        "stat_reset" => ViewReset::ServerStats,
        "connection_stat_reset" => ViewReset::ConnectionStats,
        _ => ViewReset::Nothing,
    }
}

/// The parts of the core's view a command prints (`fourlw::Parts`); `None` for the commands
/// answered from the config alone, which ask the core nothing.
pub fn parts_of(command: &str) -> Option<Parts> {
    if NOT_HONOURED.iter().any(|(c, _)| *c == command) {
        return None;
    }
    let none = Parts::NONE;
    let server_stats = Parts {
        summary: true,
        counts: true,
        dir_sizes: true,
        ..none
    };
    Some(match command {
        // Answered from the config, or (`snapshot`, `restore`: http/admin_snapshot.rs,
        // http/admin_restore.rs) by a message of its own to the core, never from a view.
        "ruok"
        | "initial_configuration"
        | "voting_view"
        | "observer_connection_stat_reset"
        | "snapshot"
        | "restore"
        | "shed_connections" => return None,
        // The view's own fields (`mode`, `is_serving`, `trace_mask`, `leader_id`) are enough;
        // the two resets happen before it is taken.
        "connection_stat_reset"
        | "stat_reset"
        | "get_trace_mask"
        | "is_read_only"
        | "leader"
        | "set_trace_mask"
        | "zabstate" => none,
        "last_snapshot" => Parts {
            last_snapshot: true,
            ..none
        },
        "configuration" => Parts {
            conf_lines: true,
            ..none
        },
        "connections" => Parts {
            connections: true,
            ..none
        },
        "dirs" => Parts {
            dir_sizes: true,
            ..none
        },
        "dump" => Parts {
            sessions: true,
            ..none
        },
        "environment" => Parts {
            environment: true,
            ..none
        },
        "hash" => Parts {
            digest_log: true,
            ..none
        },
        "monitor" => Parts::MONITOR,
        // The leader's observers are part of the summary's `leader`.
        "observers" => Parts {
            summary: true,
            ..none
        },
        "server_stats" => server_stats,
        "stats" => Parts {
            connections: true,
            ..server_stats
        },
        "watch_summary" => Parts {
            watch_summary: true,
            ..none
        },
        "watches" => Parts {
            watches_by_session: true,
            ..none
        },
        "watches_by_path" => Parts {
            watches_by_path: true,
            ..none
        },
        // `resolve` yields only the names above (server/tests/fourlw.rs compares each command's
        // answer from its parts with its answer from a full view).
        _ => none,
    })
}

/// ZooKeeper's command list page: one link per command.
pub fn list_page(command_url: &str) -> String {
    let links: Vec<String> = COMMANDS
        .iter()
        .map(|(c, _)| format!("<a href=\"{command_url}/{c}\">{c}</a>\n"))
        .collect();
    links.join("<br/>\n")
}

/// `set_trace_mask`'s `traceMask` argument from the query string, as ZooKeeper's
/// `SetTraceMaskCommand` reads it (a decimal long), or its error.
pub fn trace_mask_arg(query: &str) -> Result<i64, String> {
    let Some(arg) = query
        .split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
        .find(|(k, _)| *k == "traceMask")
        .map(|(_, v)| v)
    else {
        return Err("setTraceMask requires long traceMask argument".into());
    };
    arg.parse()
        .map_err(|_| format!("setTraceMask requires long traceMask argument, got {arg}"))
}

/// A command's answer that is only an error (HTTP 200, as ZooKeeper's).
pub fn with_error(command: &str, error: String) -> Value {
    with_status(Map::new(), command, Some(error))
}

/// The JSON of an unknown command.
pub fn unknown(name: &str) -> Value {
    json!({ "command": name, "error": format!("Unknown command: {name}") })
}

fn with_status(mut m: Map<String, Value>, command: &str, error: Option<String>) -> Value {
    m.insert("command".into(), json!(command));
    // A view command may have set its own error (`leader` on a standalone server).
    if error.is_some() || !m.contains_key("error") {
        m.insert("error".into(), error.map_or(Value::Null, Value::String));
    }
    Value::Object(m)
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Answers `command` (a primary name from `resolve`). `view` is `None` when the command does
/// not need one (`parts_of`) or the core did not answer.
pub fn answer(command: &str, view: Option<&ServerView>, cfg: &Arc<Config>) -> Value {
    if let Some((_, why)) = NOT_HONOURED.iter().find(|(c, _)| *c == command) {
        return with_status(Map::new(), command, Some((*why).to_string()));
    }
    let no_view = || with_status(Map::new(), command, Some("the server is stopping".into()));
    match command {
        "ruok" | "observer_connection_stat_reset" => with_status(Map::new(), command, None),
        // ZooKeeper's answer is the zoo.cfg text; paddock's masks secret values in it.
        "initial_configuration" => match &cfg.source {
            Some(path) => match std::fs::read_to_string(path) {
                Ok(text) => with_status(
                    obj(json!({ "initial_configuration": crate::redact::properties_text(&text) })),
                    command,
                    None,
                ),
                Err(e) => with_status(
                    Map::new(),
                    command,
                    Some(format!("cannot read {}: {e}", path.display())),
                ),
            },
            None => with_status(
                Map::new(),
                command,
                Some("no configuration file: the server runs on its embedded defaults".into()),
            ),
        },
        "voting_view" => {
            let mut current = Map::new();
            if cfg.is_distributed() {
                for s in &cfg.servers {
                    current.insert(s.id.to_string(), json!(s.to_string()));
                }
            }
            with_status(obj(json!({ "current_config": current })), command, None)
        }
        _ => match view {
            None => no_view(),
            Some(v) => with_status(view_command(command, v, cfg), command, None),
        },
    }
}

fn latency_fields(m: &mut Map<String, Value>, l: &LatencyStats, whole: bool) {
    if whole {
        m.insert("min_latency".into(), json!(l.min()));
        m.insert("avg_latency".into(), json!(l.avg_whole()));
        m.insert("max_latency".into(), json!(l.max()));
    } else {
        m.insert("avg_latency".into(), json!(l.avg()));
        m.insert("max_latency".into(), json!(l.max()));
        m.insert("min_latency".into(), json!(l.min()));
    }
}

/// One port's connections: `clientPort`'s, or `secureClientPort`'s (`secure`).
fn connections(v: &ServerView, brief: bool, secure: bool) -> Vec<Value> {
    v.connections
        .iter()
        .filter(|c| c.secure == secure)
        .map(|c| {
            let mut m = obj(json!({
                // InetSocketAddress without the leading slash, as Jackson prints it.
                "remote_socket_address": crate::fourlw::java_socket_addr(&c.remote)
                    .trim_start_matches('/'),
                "interest_ops": c.interest_ops,
                "outstanding_requests": c.queued,
                "packets_received": c.recved,
                "packets_sent": c.sent,
            }));
            if !brief && c.session_id != 0 {
                m.insert("session_id".into(), json!(c.session_id));
                m.insert("last_operation".into(), json!(c.last_op));
                m.insert("established".into(), json!(c.established_ms));
                m.insert("session_timeout".into(), json!(c.timeout_ms));
                m.insert("last_cxid".into(), json!(c.last_cxid));
                m.insert("last_zxid".into(), json!(c.last_zxid));
                m.insert("last_response_time".into(), json!(c.last_response_ms));
                m.insert("last_latency".into(), json!(c.last_latency_ms));
                latency_fields(&mut m, &c.latency, true);
            }
            Value::Object(m)
        })
        .collect()
}

fn buffer_stats(v: &ServerView) -> Value {
    json!({
        "last_buffer_size": v.last_client_response_size,
        "min_buffer_size": v.min_client_response_size,
        "max_buffer_size": v.max_client_response_size,
    })
}

fn server_stats(v: &ServerView) -> Map<String, Value> {
    let mut s = obj(json!({
        "packets_sent": v.packets_sent,
        "packets_received": v.packets_received,
        // paddock does not time fsyncs against fsync.warningthresholdms.
        "fsync_threshold_exceed_count": 0,
        "client_response_stats": buffer_stats(v),
        "uptime": v.uptime_ms,
        "data_dir_size": v.data_dir_size,
        "log_dir_size": v.log_dir_size,
        "provider_null": false,
        "last_processed_zxid": v.zxid,
        "outstanding_requests": v.outstanding_requests,
        "server_state": v.mode.as_str(),
    }));
    latency_fields(&mut s, &v.latency, false);
    s.insert(
        "num_alive_client_connections".into(),
        json!(v.connection_count),
    );
    s.insert("auth_failed_count".into(), json!(v.auth_failed_count));
    s.insert(
        "non_mtlsremote_conn_count".into(),
        json!(v.non_mtls_remote_conn_count),
    );
    s.insert(
        "non_mtlslocal_conn_count".into(),
        json!(v.non_mtls_local_conn_count),
    );
    if let (Mode::Leader, Some(l)) = (v.mode, &v.leader) {
        // Leader's ServerStats adds the proposal sizes (always -1: paddock does not measure them).
        s.insert(
            "proposal_stats".into(),
            json!({
                "last_buffer_size": l.last_proposal_size,
                "min_buffer_size": l.min_proposal_size,
                "max_buffer_size": l.max_proposal_size,
            }),
        );
    }
    s
}

fn snake(key: &str) -> String {
    let mut out = String::new();
    for ch in key.chars() {
        if ch.is_ascii_uppercase() {
            out.push('_');
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

/// `mntr`'s keys and values, as JSON numbers where they are numbers.
fn monitor(v: &ServerView) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("version".into(), json!(full_version()));
    m.insert("server_state".into(), json!(v.mode.as_str()));
    let text = crate::fourlw::render(
        wire::FourLetterWord::Mntr,
        v,
        &crate::config::FourLetterWhitelist::All,
    );
    for line in text.lines() {
        let Some((k, val)) = line.split_once('\t') else {
            continue;
        };
        let k = k.strip_prefix("zk_").unwrap_or(k);
        if k == "version" || k == "server_state" {
            continue;
        }
        let value = if let Ok(n) = val.parse::<i64>() {
            json!(n)
        } else if let Ok(x) = val.parse::<f64>() {
            json!(x)
        } else {
            json!(val)
        };
        m.insert(k.to_string(), value);
    }
    m
}

fn view_command(command: &str, v: &ServerView, cfg: &Config) -> Map<String, Value> {
    match command {
        "configuration" => {
            let mut m = Map::new();
            for (k, val) in &v.conf_lines {
                // ZooKeeper's ConfCommand has no secure_client_port and lists no membership.
                if k.starts_with("server.")
                    || k.starts_with("membership")
                    || k == "secureClientPort"
                {
                    continue;
                }
                let value = val.parse::<i64>().map_or_else(|_| json!(val), |n| json!(n));
                m.insert(snake(k), value);
            }
            m
        }
        "connections" => obj(json!({
            "connections": connections(v, false, false),
            "secure_connections": connections(v, false, true),
        })),
        "connection_stat_reset" | "stat_reset" => Map::new(),
        "dirs" => obj(json!({
            "datadir_size": v.data_dir_size,
            "logdir_size": v.log_dir_size,
        })),
        "dump" => {
            let mut expiry = Map::new();
            for b in &v.session_buckets {
                expiry.insert(b.expire_at_ms.to_string(), json!(b.sessions));
            }
            let mut eph = Map::new();
            for (sid, paths) in &v.ephemerals_by_session {
                eph.insert(sid.to_string(), json!(paths));
            }
            obj(json!({
                "expiry_time_to_session_ids": expiry,
                "session_id_to_ephemeral_paths": eph,
            }))
        }
        "environment" => {
            let mut m = Map::new();
            m.insert("zookeeper.version".into(), json!(full_version()));
            for (k, val) in &v.environment {
                m.insert(k.clone(), json!(val));
            }
            m
        }
        "get_trace_mask" | "set_trace_mask" => obj(json!({ "tracemask": v.trace_mask })),
        // ZooKeeper's `SnapshotInfo`: the zxid in hex without 0x, the time in seconds; -1 for
        // both (the zxid's hex is then 64 bits of ones) before any snapshot.
        "last_snapshot" => {
            let (zxid, ts) = v
                .last_snapshot
                .map_or((-1, -1), |s| (s.zxid, s.timestamp_s));
            obj(json!({ "zxid": format!("{:x}", zxid), "timestamp": ts }))
        }
        "hash" => obj(json!({
            "digests": v.digest_log.iter().map(|(zxid, digest)| json!({
                "zxid": zxid,
                "digest": digest,
            })).collect::<Vec<_>>(),
        })),
        "is_read_only" => obj(json!({ "read_only": v.mode == Mode::ReadOnly })),
        "leader" => {
            if v.mode == Mode::Standalone {
                // ZooKeeper's answer on a standalone server.
                return obj(json!({ "error": "server is not initialized" }));
            }
            let leader_id = v.leader_id;
            let leader_ip = cfg
                .servers
                .iter()
                .find(|s| s.id == leader_id)
                .map(|s| s.host.clone());
            obj(json!({
                "is_leader": v.mode == Mode::Leader,
                "leader_id": leader_id,
                "leader_ip": leader_ip,
            }))
        }
        "monitor" => monitor(v),
        // ZooKeeper's leader lists its observers' LearnerHandler info; paddock keeps no per-link
        // packet queues or counters, so those fields are 0. The address is the observer's
        // configured peer address (ZooKeeper prints the link's remote socket), `established` the
        // start of this leader's term, `last_zxid` the highest index replicated on it.
        "observers" => {
            let observers: Vec<Value> = v
                .leader
                .iter()
                .flat_map(|l| &l.observers)
                .map(|o| {
                    let addr = cfg
                        .servers
                        .iter()
                        .find(|s| s.id == o.sid)
                        .map_or(String::new(), |s| format!("/{}:{}", s.host, s.peer_port));
                    json!({
                        "remote_socket_address": addr,
                        "sid": o.sid,
                        "established": o.established_ms,
                        "queued_packets": 0,
                        "queued_packets_size": 0,
                        "packets_received": 0,
                        "packets_sent": 0,
                        "requests": 0,
                        "last_zxid": o.last_zxid,
                    })
                })
                .collect();
            obj(json!({
                "synced_observers": observers.len(),
                "observers": observers,
            }))
        }
        "server_stats" | "stats" => {
            let mut m = obj(json!({
                "version": full_version(),
                "read_only": v.mode == Mode::ReadOnly,
                "server_stats": server_stats(v),
                "client_response": buffer_stats(v),
                "node_count": v.node_count,
            }));
            if command == "stats" {
                m.insert("connections".into(), json!(connections(v, true, false)));
                m.insert(
                    "secure_connections".into(),
                    json!(connections(v, true, true)),
                );
            }
            m
        }
        "watch_summary" => obj(json!({
            "num_connections": v.watch_summary.connections,
            "num_paths": v.watch_summary.paths,
            "num_total_watches": v.watch_summary.total,
        })),
        "watches" => {
            let mut m = Map::new();
            for (sid, paths) in &v.watches_by_session {
                m.insert(sid.to_string(), json!(paths));
            }
            obj(json!({ "session_id_to_watched_paths": m }))
        }
        "watches_by_path" => {
            let mut m = Map::new();
            for (path, sids) in &v.watches_by_path {
                m.insert(path.clone(), json!(sids));
            }
            obj(json!({ "path_to_session_ids": m }))
        }
        "zabstate" => {
            let voting = matches!(v.mode, Mode::Leader | Mode::Follower);
            let state = match v.mode {
                Mode::Standalone => "",
                _ if v.is_serving => "broadcast",
                _ => "election",
            };
            obj(json!({ "voting": voting, "zabstate": state }))
        }
        // `resolve` yields only the names above.
        _ => Map::new(),
    }
}
