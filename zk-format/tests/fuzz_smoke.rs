//! The fuzz targets' bodies on stable Rust, over the real ZooKeeper files in tests/data and
//! mutations of them (bytes flipped, cut, spliced), with a fixed-seed generator: what
//! `cargo fuzz` explores at length (zk-format/fuzz/README.md), checked on every test run.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

#[path = "../fuzz/harness.rs"]
mod harness;

use std::collections::HashMap;

use harness::Outcome;

/// xorshift64*: a fixed sequence, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    match rng.below(4) {
        0 => {
            for _ in 0..1 + rng.below(4) {
                if !v.is_empty() {
                    let i = rng.below(v.len());
                    v[i] ^= 1 << rng.below(8);
                }
            }
        }
        1 => v.truncate(rng.below(v.len() + 1)),
        2 => {
            // An i32 somewhere set to a large or negative length.
            if v.len() > 4 {
                let i = rng.below(v.len() - 4);
                let n = [0x7fff_ffffu32, 0xffff_ffff, 0x8000_0000, 0x0010_0000][rng.below(4)];
                v[i..i + 4].copy_from_slice(&n.to_be_bytes());
            }
        }
        _ => {
            let a = rng.below(v.len() + 1);
            let b = rng.below(v.len() + 1);
            let (lo, hi) = (a.min(b), a.max(b));
            let piece = v[lo..hi].to_vec();
            let at = rng.below(v.len() + 1);
            v.splice(at..at, piece);
        }
    }
    v
}

fn seeds(kind: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for dir in ["raw", "gz", "snappy"] {
        let d = manifest_dir()
            .join("tests/data")
            .join(dir)
            .join("version-2");
        for e in std::fs::read_dir(d).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(kind) {
                let bytes = std::fs::read(e.path()).unwrap();
                let codec = if name.ends_with(".gz") {
                    1u8
                } else if name.ends_with(".snappy") {
                    2
                } else {
                    0
                };
                let mut v = if kind == "snapshot" {
                    vec![codec]
                } else {
                    Vec::new()
                };
                v.extend_from_slice(&bytes);
                out.push(v);
            }
        }
    }
    out
}

fn run(kind: &str, target: fn(&[u8]) -> Outcome, rounds: usize) -> HashMap<Outcome, usize> {
    let seeds = seeds(kind);
    assert!(!seeds.is_empty());
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut tally = HashMap::new();
    for s in &seeds {
        assert_eq!(target(s), Outcome::Decoded, "a real {kind} decodes");
    }
    for _ in 0..rounds {
        let s = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, s);
        *tally.entry(target(&input)).or_default() += 1;
    }
    tally
}

#[test]
fn snapshot_reader_survives_mutated_zookeeper_snapshots() {
    let t = run("snapshot", harness::snapshot_reader, 1500);
    assert!(t.get(&Outcome::Refused).copied().unwrap_or(0) > 0, "{t:?}");
}

#[test]
fn log_reader_survives_mutated_zookeeper_logs() {
    let t = run("log", harness::log_reader, 3000);
    // Mutations past a log's last record leave it readable: both outcomes occur.
    assert!(t.get(&Outcome::Decoded).copied().unwrap_or(0) > 0, "{t:?}");
    assert!(t.get(&Outcome::Refused).copied().unwrap_or(0) > 0, "{t:?}");
}

/// The package directory of the `cargo test` run, read at run time: a test binary that cargo reuses
/// from a build in another checkout (same target dir, same sources) still reads this checkout's files.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}
