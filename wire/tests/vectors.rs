//! Byte-exact vectors: every frame in `tests/vectors/*.txt` must decode, and re-encoding the
//! decoded value must give back the very same bytes.
//!
//! File format (written by the capture tooling, and by hand for `handmade.txt`): `#` starts a
//! comment line; `C <hex>` is one whole client→server frame and `S <hex>` one whole
//! server→client frame, length prefix included, in capture order; `--- connection` starts the
//! next connection. Per connection the first C frame is a ConnectRequest and the first S frame
//! a ConnectResponse; later C frames are RequestHeader + request, later S frames ReplyHeader +
//! body, paired with their request by xid (-1 notification, -2 ping, -4 auth, -8 setWatches).
//! A connection whose first C bytes are a four-letter word carries plain text, not frames.
//!
//! The one lossy spot is allowed and counted: a null `ustring` (length -1) decodes as "" and
//! re-encodes as length 0. kazoo writes every empty string that way (`write_string` sends -1
//! for a falsy value); the meaning is the same to a server, and the field types are `String`.

use std::collections::HashMap;
use std::path::PathBuf;

use wire::frame::{self, Check, DEFAULT_MAX_FRAME};
use wire::{
    decode_connect_frame, decode_reply_frame, decode_request_frame, encode_connect_request,
    encode_connect_response, encode_notification, encode_reply, encode_request, xid,
    ConnectResponse, FourLetterWord, OpCode, Reader, Record, Response, WatcherEvent, Writer,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    C,
    S,
}

#[derive(Debug)]
struct Line {
    no: usize,
    dir: Dir,
    bytes: Vec<u8>,
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if digits.len() & 1 == 1 {
        return Err(format!("odd number of hex digits ({})", digits.len()));
    }
    digits
        .chunks(2)
        .map(|p| {
            let p = std::str::from_utf8(p).map_err(|e| e.to_string())?;
            u8::from_str_radix(p, 16).map_err(|e| format!("{p:?}: {e}"))
        })
        .collect()
}

/// Splits a vector file into connections of C/S lines.
fn parse(text: &str) -> Result<Vec<Vec<Line>>, String> {
    let mut conns = vec![Vec::new()];
    for (i, raw) in text.lines().enumerate() {
        let no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with("---") {
            if line.trim_start_matches('-').trim() != "connection" {
                return Err(format!("line {no}: unknown separator {line:?}"));
            }
            if !conns.last().unwrap().is_empty() {
                conns.push(Vec::new());
            }
            continue;
        }
        let (dir, hex) = match line.split_once(char::is_whitespace) {
            Some(("C", hex)) => (Dir::C, hex),
            Some(("S", hex)) => (Dir::S, hex),
            _ => {
                return Err(format!(
                    "line {no}: expected `C <hex>`, `S <hex>`, `# ...` or `--- connection`"
                ))
            }
        };
        let bytes = unhex(hex).map_err(|e| format!("line {no}: {e}"))?;
        conns.last_mut().unwrap().push(Line { no, dir, bytes });
    }
    conns.retain(|c| !c.is_empty());
    Ok(conns)
}

/// Compares original and re-encoded bytes. Equal is fine; otherwise the only difference
/// allowed is a 4-byte `ff ff ff ff` (null ustring) that came back as `00 00 00 00` (empty).
/// Returns how many such spots there were.
fn same_modulo_null_strings(orig: &[u8], re: &[u8]) -> Result<usize, String> {
    if orig.len() != re.len() {
        return Err(format!("length {} re-encoded as {}", orig.len(), re.len()));
    }
    let (mut i, mut nulls) = (0, 0);
    while i < orig.len() {
        if orig[i] == re[i] {
            i += 1;
        } else if orig.get(i..i + 4) == Some(&[0xff; 4][..])
            && re.get(i..i + 4) == Some(&[0; 4][..])
        {
            nulls += 1;
            i += 4;
        } else {
            return Err(format!(
                "first difference at byte {i}: {:02x} re-encoded as {:02x}",
                orig[i], re[i]
            ));
        }
    }
    Ok(nulls)
}

/// The body of one whole frame, or why the line is not exactly one frame.
fn body(l: &Line) -> Result<&[u8], String> {
    match frame::check(&l.bytes, DEFAULT_MAX_FRAME) {
        Ok(Check::Frame { len }) if len + 4 == l.bytes.len() => Ok(&l.bytes[4..]),
        Ok(Check::Frame { len }) => Err(format!(
            "frame says {len} bytes but the line holds {}",
            l.bytes.len() - 4
        )),
        other => Err(format!("not a whole frame: {other:?}")),
    }
}

#[derive(Default, Debug)]
struct Tally {
    frames: usize,
    connections: usize,
    four_letter: usize,
    nulls: usize,
    ops: HashMap<String, usize>,
}

fn reencoded(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut w = Writer::new();
    f(&mut w);
    w.into_inner()
}

fn check_connection(conn: &[Line], t: &mut Tally) -> Result<(), String> {
    t.connections += 1;
    let first_c = conn
        .iter()
        .find(|l| l.dir == Dir::C)
        .ok_or("connection has no client frame")?;
    if let Some(word) = first_c
        .bytes
        .get(..4)
        .and_then(|b| FourLetterWord::detect(b.try_into().unwrap()))
    {
        // stmk carries an 8-byte mask after the word; nothing else follows a word.
        let expect = if word == FourLetterWord::Stmk { 12 } else { 4 };
        if first_c.bytes.len() != expect {
            return Err(format!(
                "line {}: {} followed by {} bytes",
                first_c.no,
                word.as_str(),
                first_c.bytes.len() - 4
            ));
        }
        t.four_letter += 1;
        return Ok(());
    }

    let mut seen_connect_req = false;
    let mut seen_connect_resp = false;
    let mut pending: HashMap<i32, OpCode> = HashMap::new();
    for l in conn {
        let ctx = |e: String| format!("line {} ({:?}): {e}", l.no, l.dir);
        let b = body(l).map_err(ctx)?;
        let re = match (l.dir, seen_connect_req, seen_connect_resp) {
            (Dir::C, false, _) => {
                seen_connect_req = true;
                let req = decode_connect_frame(b).map_err(|e| ctx(e.to_string()))?;
                *t.ops.entry("connect".into()).or_default() += 1;
                reencoded(|w| encode_connect_request(w, &req))
            }
            (Dir::S, _, false) => {
                seen_connect_resp = true;
                let resp =
                    ConnectResponse::decode(&mut Reader::new(b)).map_err(|e| ctx(e.to_string()))?;
                reencoded(|w| encode_connect_response(w, &resp))
            }
            (Dir::C, true, _) => {
                let (h, req) =
                    decode_request_frame(b).map_err(|(h, e)| ctx(format!("{e} (header {h:?})")))?;
                pending.insert(h.xid, req.opcode());
                *t.ops.entry(format!("{:?}", req.opcode())).or_default() += 1;
                reencoded(|w| encode_request(w, &h, &req))
            }
            (Dir::S, _, true) => {
                let (h, rest) = decode_reply_frame(b).map_err(|e| ctx(e.to_string()))?;
                if h.xid == xid::NOTIFICATION {
                    if h.err != 0 {
                        return Err(ctx(format!("notification with err {}", h.err)));
                    }
                    let ev = WatcherEvent::decode(&mut Reader::new(rest))
                        .map_err(|e| ctx(e.to_string()))?;
                    *t.ops.entry("notification".into()).or_default() += 1;
                    reencoded(|w| encode_notification(w, h.zxid, &ev))
                } else {
                    let op = match h.xid {
                        xid::PING => OpCode::Ping,
                        xid::AUTH => OpCode::Auth,
                        xid::SET_WATCHES => *pending.get(&h.xid).unwrap_or(&OpCode::SetWatches),
                        x => *pending
                            .get(&x)
                            .ok_or_else(|| ctx(format!("reply xid {x} matches no request")))?,
                    };
                    // Error replies carry no body (multi excepted, and even a multi answered
                    // with MarshallingError has none).
                    let resp = if h.err != 0 && rest.is_empty() {
                        None
                    } else if h.err == 0 || matches!(op, OpCode::Multi | OpCode::MultiRead) {
                        Some(
                            Response::decode(op, rest)
                                .map_err(|e| ctx(format!("{e} decoding {op:?} reply")))?,
                        )
                    } else {
                        return Err(ctx(format!(
                            "{op:?} reply with err {} has a {}-byte body",
                            h.err,
                            rest.len()
                        )));
                    };
                    reencoded(|w| encode_reply(w, &h, resp.as_ref()))
                }
            }
        };
        t.nulls += same_modulo_null_strings(&l.bytes, &re).map_err(ctx)?;
        t.frames += 1;
    }
    if !seen_connect_req {
        return Err("connection has no ConnectRequest".into());
    }
    Ok(())
}

fn vector_files() -> Vec<PathBuf> {
    let dir = manifest_dir().join("tests/vectors");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_vector_frame_decodes_and_reencodes_to_the_same_bytes() {
    let files = vector_files();
    assert!(
        !files.is_empty(),
        "no tests/vectors/*.txt: this test must not pass vacuously"
    );
    let mut failures = Vec::new();
    let mut total = 0;
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).unwrap();
        let conns = match parse(&text) {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let mut t = Tally::default();
        for conn in &conns {
            if let Err(e) = check_connection(conn, &mut t) {
                failures.push(format!("{name}: {e}"));
            }
        }
        let mut ops: Vec<_> = t.ops.iter().collect();
        ops.sort();
        println!(
            "{name}: {} connections ({} four-letter), {} frames, {} null strings read as empty; {ops:?}",
            t.connections, t.four_letter, t.frames, t.nulls
        );
        assert!(t.frames > 0 || t.four_letter > 0, "{name} holds no frames");
        total += t.frames;
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(total > 0, "vector files hold no frames");
}

/// The hand-made file covers every request opcode a client sends and both handshake forms,
/// so the check above reaches every decoder even before captured vectors land.
#[test]
fn handmade_vectors_cover_every_client_opcode() {
    let path = manifest_dir().join("tests/vectors/handmade.txt");
    let conns = parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut t = Tally::default();
    for conn in &conns {
        check_connection(conn, &mut t).unwrap();
    }
    let client_ops = OpCode::ALL.iter().filter(|op| {
        !matches!(
            op,
            OpCode::Notification | OpCode::CreateSession | OpCode::Error | OpCode::DeleteContainer
        )
    });
    for op in client_ops {
        assert!(
            t.ops.contains_key(&format!("{op:?}")),
            "handmade.txt has no {op:?} request"
        );
    }
    assert_eq!(t.four_letter, 1);
    assert!(t.nulls > 0, "handmade.txt should exercise a null ustring");
}

#[test]
fn comparison_allows_only_null_strings_read_as_empty() {
    assert_eq!(same_modulo_null_strings(&[1, 2, 3], &[1, 2, 3]), Ok(0));
    assert_eq!(
        same_modulo_null_strings(&[9, 0xff, 0xff, 0xff, 0xff, 9], &[9, 0, 0, 0, 0, 9]),
        Ok(1)
    );
    assert!(same_modulo_null_strings(&[0, 0, 0, 0], &[0xff, 0xff, 0xff, 0xff]).is_err());
    assert!(same_modulo_null_strings(&[0xff, 0xff, 0xff, 0xff], &[0, 0, 0, 1]).is_err());
    assert!(same_modulo_null_strings(&[1, 2, 3], &[1, 2, 4]).is_err());
    assert!(same_modulo_null_strings(&[1, 2], &[1, 2, 3]).is_err());
}

#[test]
fn parser_splits_connections_and_rejects_unknown_lines() {
    let conns = parse("# c\nC 00000000\nS 00 00 00 00\n--- connection\nC 72756f6b\n").unwrap();
    assert_eq!(conns.len(), 2);
    assert_eq!(conns[0][1].dir, Dir::S);
    assert_eq!(conns[0][1].bytes, vec![0; 4]);
    assert!(parse("X 00\n").is_err());
    assert!(parse("C 0g\n").is_err());
    assert!(parse("C 000\n").is_err());
}

/// A frame whose re-encoding would differ (here a boolean byte of 2, read as true and
/// written back as 1) is reported, so the main check can fail.
#[test]
fn a_non_canonical_frame_is_caught() {
    let req = wire::ConnectRequest {
        timeout: 10000,
        passwd: Some(vec![0; 16]),
        read_only: Some(true),
        ..Default::default()
    };
    let mut bytes = reencoded(|w| encode_connect_request(w, &req));
    assert_eq!(bytes.len(), 49);
    bytes[48] = 2;
    let text: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let conns = parse(&format!("C {text}\n")).unwrap();
    let err = check_connection(&conns[0], &mut Tally::default()).unwrap_err();
    assert!(err.contains("first difference at byte 48"), "{err}");
}

/// The package directory of the `cargo test` run, read at run time: a test binary that cargo reuses
/// from a build in another checkout (same target dir, same sources) still reads this checkout's files.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}
