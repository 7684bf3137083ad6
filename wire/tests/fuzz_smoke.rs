//! A stable-Rust stand-in for `cargo fuzz` (see `wire/fuzz/README.md`): the same target
//! functions, run over inputs made by a fixed-seed PRNG from the vector files' frames:
//! byte flips, interesting lengths written over 4-byte words, truncation, insertion,
//! splicing, and plain random bytes. Deterministic, so a failure replays exactly.

#[path = "../fuzz/harness.rs"]
mod harness;

use std::collections::HashSet;

use harness::Outcome;
use wire::OpCode;

/// xorshift64*: tiny, deterministic, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const INTERESTING: [i32; 10] = [-1, -2, 0, 1, 2, 8, 16, i32::MAX, i32::MIN, 0x000f_ffff];

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut v = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(4) {
        match rng.below(8) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = [0, 1, 0x7f, 0x80, 0xff][rng.below(5)];
            }
            2 if v.len() >= 4 => {
                // Lengths and counts sit on 4-byte words; hit them with edge values.
                let i = rng.below(v.len() - 3);
                let x = INTERESTING[rng.below(INTERESTING.len())];
                v[i..i + 4].copy_from_slice(&x.to_be_bytes());
            }
            3 => v.truncate(rng.below(v.len() + 1)),
            4 => {
                let i = rng.below(v.len() + 1);
                let n = 1 + rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                v.splice(i..i, bytes);
            }
            5 if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = 1 + rng.below((v.len() - i).min(8));
                v.drain(i..i + n);
            }
            6 => {
                let other = &seeds[rng.below(seeds.len())];
                let at = rng.below(v.len() + 1);
                let from = rng.below(other.len() + 1);
                v.truncate(at);
                v.extend_from_slice(&other[from..]);
            }
            _ => {
                let n = rng.below(64);
                v = (0..n).map(|_| rng.next() as u8).collect();
            }
        }
    }
    v
}

/// Frames of every vector file, by the target they seed: `(connect requests, later
/// requests, replies)`.
type Seeds = (Vec<Vec<u8>>, Vec<Vec<u8>>, Vec<Vec<u8>>);

fn seeds() -> Seeds {
    let dir = manifest_dir().join("tests/vectors");
    let (mut connect, mut requests, mut replies) = (Vec::new(), Vec::new(), Vec::new());
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    for p in paths
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
    {
        let mut first_c = true;
        for line in std::fs::read_to_string(p).unwrap().lines() {
            let line = line.trim();
            if line.starts_with("---") {
                first_c = true;
                continue;
            }
            let Some((dir, hex)) = line.split_once(' ') else {
                continue;
            };
            let hex: String = hex.split_whitespace().collect();
            let Some(bytes) = (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
                .collect()
            else {
                continue;
            };
            match dir {
                "C" if first_c => {
                    first_c = false;
                    connect.push(bytes);
                }
                "C" => requests.push(bytes),
                "S" => replies.push(bytes),
                _ => {}
            }
        }
    }
    (connect, requests, replies)
}

fn run(
    name: &str,
    n: usize,
    seed: u64,
    seeds: &[Vec<u8>],
    target: fn(&[u8]) -> Outcome,
) -> HashSet<Outcome> {
    assert!(!seeds.is_empty(), "{name}: no seed frames in tests/vectors");
    let mut rng = Rng(seed);
    let mut seen = HashSet::new();
    for s in seeds {
        seen.insert(target(s));
    }
    for _ in 0..n {
        let input = mutate(&mut rng, seeds);
        seen.insert(target(&input));
    }
    seen
}

#[test]
fn request_decoder_survives_200k_mutated_frames() {
    let (_, requests, _) = seeds();
    let seen = run(
        "request_decoder",
        200_000,
        0x5eed_0001,
        &requests,
        harness::request_decoder,
    );
    // Not vacuous: the run got past framing to bad bodies, and decoded every opcode the
    // seeds hold.
    for o in [
        Outcome::BadBody,
        Outcome::NoHeader,
        Outcome::NeedMore,
        Outcome::BadFrame,
    ] {
        assert!(seen.contains(&o), "never saw {o:?}");
    }
    for op in [
        OpCode::Create,
        OpCode::Multi,
        OpCode::MultiRead,
        OpCode::SetWatches2,
        OpCode::SetAcl,
        OpCode::Ping,
    ] {
        assert!(seen.contains(&Outcome::Decoded(op)), "never decoded {op:?}");
    }
}

#[test]
fn connect_decoder_survives_50k_mutated_handshakes() {
    let (connect, _, _) = seeds();
    let seen = run(
        "connect_decoder",
        50_000,
        0x5eed_0002,
        &connect,
        harness::connect_decoder,
    );
    for o in [
        Outcome::Decoded(OpCode::CreateSession),
        Outcome::BadBody,
        Outcome::NeedMore,
        Outcome::BadFrame,
    ] {
        assert!(seen.contains(&o), "never saw {o:?}");
    }
}

#[test]
fn response_decoder_survives_50k_mutated_replies() {
    let (_, _, replies) = seeds();
    let seen = run(
        "response_decoder",
        50_000,
        0x5eed_0003,
        &replies,
        harness::response_decoder,
    );
    assert!(seen.contains(&Outcome::Decoded(OpCode::Multi)), "{seen:?}");
    assert!(seen.contains(&Outcome::NoHeader), "{seen:?}");
}

/// The package directory of the `cargo test` run, read at run time: a test binary that cargo reuses
/// from a build in another checkout (same target dir, same sources) still reads this checkout's files.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}
