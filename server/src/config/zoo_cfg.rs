//! zoo.cfg as text: Java properties split into entries, each carrying its origin, and the
//! values' forms (numbers as Java's `Integer.decode` reads them, ZooKeeper's booleans, addresses).

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use super::{Entry, Origin};

/// Splits Java properties text into entries: `#`/`!` comments, `key=value`, `key: value` or
/// `key value`, whitespace around both trimmed, a trailing backslash continuing the line.
/// Escapes inside keys and values are not interpreted (zoo.cfg files do not use them).
pub fn parse_properties(text: &str, file: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((idx, raw)) = lines.next() {
        let mut logical = raw.trim_start().to_string();
        if logical.is_empty() || logical.starts_with('#') || logical.starts_with('!') {
            continue;
        }
        while ends_with_continuation(&logical) {
            logical.pop();
            match lines.next() {
                Some((_, next)) => logical.push_str(next.trim_start()),
                None => break,
            }
        }
        let key_end = logical
            .find(|c: char| c == '=' || c == ':' || c.is_whitespace())
            .unwrap_or(logical.len());
        let key = logical[..key_end].to_string();
        let mut rest = logical[key_end..].trim_start();
        if let Some(r) = rest.strip_prefix('=').or_else(|| rest.strip_prefix(':')) {
            rest = r;
        }
        out.push(Entry {
            key,
            value: rest.trim().to_string(),
            origin: Origin::Line {
                file: file.to_path_buf(),
                line: idx + 1,
            },
        });
    }
    out
}

fn ends_with_continuation(s: &str) -> bool {
    s.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1
}

pub(super) fn parse_num<T: std::str::FromStr>(v: &str) -> Result<T, String> {
    v.parse::<T>()
        .map_err(|_| format!("{v:?} is not a valid non-negative number"))
}

pub(super) fn parse_positive(v: &str) -> Result<u32, String> {
    match v.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{v:?} is not a positive number")),
    }
}

pub(super) fn parse_timeout(v: &str) -> Result<u32, String> {
    // ZooKeeper stores -1 for "derive from tickTime"; a config never needs to write it.
    parse_num(v)
}

/// `Integer.decode` as used by `Integer.getInteger("jute.maxbuffer")`: decimal, `0x`/`#` hex.
pub(super) fn parse_java_int(v: &str) -> Result<usize, String> {
    let parsed = if let Some(h) = v
        .strip_prefix("0x")
        .or_else(|| v.strip_prefix("0X"))
        .or_else(|| v.strip_prefix('#'))
    {
        usize::from_str_radix(h, 16).ok()
    } else {
        v.parse::<usize>().ok()
    };
    match parsed {
        Some(n) if n <= i32::MAX as usize => Ok(n),
        _ => Err(format!("{v:?} is not a valid positive 32-bit integer")),
    }
}

/// Java's `Boolean.parseBoolean` is lenient (anything but "true" is false); ZooKeeper's own
/// `parseBoolean` rejects other words, and so do we, so a typo cannot silently disable a
/// setting. `skipACL` uses yes/no, so those are accepted too.
pub(super) fn parse_bool(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" => Ok(true),
        "false" | "no" => Ok(false),
        _ => Err(format!("{v:?} is not a boolean (true/false)")),
    }
}

pub(super) fn parse_ip(v: &str) -> Result<IpAddr, String> {
    if v.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    v.trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .map_err(|_| {
            format!("{v:?} is not an IP address (host names other than localhost are not resolved)")
        })
}

/// An IP address, `localhost`, or a host name resolved now (a client address on a server line,
/// such as `;zoo1:2181` in a compose file, names this server's own address).
pub(super) fn resolve_host(v: &str) -> Result<IpAddr, String> {
    if let Ok(ip) = parse_ip(v) {
        return Ok(ip);
    }
    use std::net::ToSocketAddrs;
    match (v, 0u16).to_socket_addrs() {
        Ok(mut addrs) => addrs
            .next()
            .map(|a| a.ip())
            .ok_or_else(|| format!("host name {v:?} resolves to no address")),
        Err(e) => Err(format!("host name {v:?} does not resolve: {e}")),
    }
}

pub(super) fn non_empty_path(v: &str) -> Result<PathBuf, String> {
    if v.is_empty() {
        Err("empty path".into())
    } else {
        Ok(PathBuf::from(v))
    }
}
