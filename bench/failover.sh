#!/usr/bin/env bash
# Failover time of a 3-member paddock and a 3-member Apache ZooKeeper 3.9 on this machine, from the
# same kind of zoo.cfg (scripts/ensemble.sh: tickTime=2000, initLimit=5, syncLimit=2).
#
#   bench/failover.sh [--rounds R] [--clients C] [--no-build] [--only paddock|zookeeper] [--quorum-tls]
#                     [--out DIR]
#
# Per round and server kind: a write load through the two followers (paddock-bench --workload
# failover, C writers, default 8), kill -9 of the leader, and the time from the kill to the first
# acknowledged write issued after it, through a surviving member; then the killed member is
# restarted (scripts/ensemble.sh start) and the ensemble is healthy again before the next round.
# Rounds alternate between the kinds (default 20 each). Then once per kind: SIGSTOP of the leader
# instead (silent to its peers and clients, as a partition that isolates it without a TCP reset),
# the same time measured, then SIGCONT and the ensemble healthy again.
# --quorum-tls: both kinds' ensembles with quorum TLS (scripts/ensemble.sh --tls: sslQuorum=true, PEM
# stores; a restarted member rejoins over TLS), so the new leader's election and the survivors'
# reconnections pay for their handshakes; the table's rows then read paddock-tls and zookeeper-tls.
# Prints median and worst per kind; every report is kept in bench/results/failover-<timestamp>/.
# Environment: CARGO_TARGET_DIR, PADDOCK_BIN and PADDOCK_BENCH (binaries to use instead of the release build).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/paddock-target}"
ROUNDS=20 CLIENTS=8 BUILD=1 OUT="" KINDS=(paddock zookeeper) TLS=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rounds) ROUNDS="$2"; shift ;;
        --clients) CLIENTS="$2"; shift ;;
        --no-build) BUILD=0 ;;
        --only) KINDS=("$2"); shift ;;
        --quorum-tls) TLS=1 ;;
        --out) OUT="$2"; shift ;;
        -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "${BASH_SOURCE[0]}" >&2; exit 0 ;;
        *) echo "failover.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
log() { echo "failover.sh: $*" >&2; }
die() { echo "failover.sh: error: $*" >&2; exit 2; }

if [[ $BUILD -eq 1 ]]; then
    cargo build --release --locked -p paddock -p paddock-bench >&2 || die "the release build failed"
fi
BENCH="${PADDOCK_BENCH:-$CARGO_TARGET_DIR/release/paddock-bench}"
export PADDOCK_BIN="${PADDOCK_BIN:-$CARGO_TARGET_DIR/release/paddock}"
[[ -x "$BENCH" && -x "$PADDOCK_BIN" ]] || die "no release binaries in $CARGO_TARGET_DIR/release (run without --no-build)"
OUT="${OUT:-$ROOT/bench/results/failover-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/paddock-failover.XXXXXX")"
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
cleanup() {
    for k in "${KINDS[@]}"; do bash scripts/ensemble.sh stop --dir "$WORK/$k" >/dev/null 2>&1 || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

flag() { # the ensemble.sh flags of a kind
    [[ "$1" != zookeeper ]] || echo --zookeeper
    [[ $TLS -eq 0 ]] || echo --tls
}
# The label a kind's reports and rows carry: paddock or zookeeper, with -tls under --quorum-tls.
label() { echo "$1$([[ $TLS -eq 0 ]] || echo -tls)"; }
for k in "${KINDS[@]}"; do
    log "[$k] starting a 3-member ensemble$([[ $TLS -eq 0 ]] || echo " with quorum TLS")"
    # shellcheck disable=SC2046
    bash scripts/ensemble.sh start 3 --dir "$WORK/$k" $(flag "$k") >/dev/null 2>>"$OUT/ensemble.log" ||
        die "$k ensemble did not start (see $OUT/ensemble.log)"
done

fo_ms() { # the failover_ms of a report, or "none"
    python3 -c 'import json,sys; f=json.loads(open(sys.argv[1]).readline())["failover"]["failover_ms"]; print("none" if f is None else round(f))' "$1" 2>/dev/null || echo "?"
}

# one_round <kind> <signal> <json>: signal the leader under load, measure, make the ensemble whole.
one_round() {
    local k="$1" sig="$2" json="$3" st leader pid hosts
    st="$(bash scripts/ensemble.sh status --dir "$WORK/$k")" || die "$k ensemble is not healthy: $st"
    leader="$(awk '$5 == "leader" {print $1}' <<<"$st")"
    pid="$(awk '$5 == "leader" {print $4}' <<<"$st")"
    hosts="$(awk '$5 != "leader" {print $2}' <<<"$st" | paste -sd,)"
    "$BENCH" --workload failover --hosts "$hosts" --kill-pid "$pid" --signal "$sig" --clients "$CLIENTS" \
        --duration-secs 60 --label "$(label "$k")" --json "$json" 2>>"$OUT/bench.log" ||
        log "[$k] the failover run reported a failure (see $OUT/bench.log)"
    [[ "$sig" == stop ]] && kill -CONT "$pid" 2>/dev/null
    log "[$k] $sig of $leader: $(fo_ms "$json") ms"
    # shellcheck disable=SC2046
    bash scripts/ensemble.sh start 3 --dir "$WORK/$k" $(flag "$k") >/dev/null 2>>"$OUT/ensemble.log" ||
        die "$k ensemble did not recover after round $json (see $OUT/ensemble.log)"
}

for r in $(seq 1 "$ROUNDS"); do
    for k in "${KINDS[@]}"; do one_round "$k" kill "$OUT/$k-kill-r$r.json"; done
done
for k in "${KINDS[@]}"; do one_round "$k" stop "$OUT/$k-stop.json"; done
printf '{"loadavg_start":"%s","loadavg_end":"%s","rounds":%s,"clients":%s,"quorum_tls":%s}\n' \
    "$LOAD_START" "$(cut -d' ' -f1-3 /proc/loadavg)" "$ROUNDS" "$CLIENTS" "$([[ $TLS -eq 1 ]] && echo true || echo false)" \
    >"$OUT/params.json"

python3 - "$OUT" "$TLS" "${KINDS[@]}" <<'EOF' | tee "$OUT/table.txt"
import glob, json, os, statistics, sys
out, tls, kinds = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
suffix = "-tls" if tls else ""
def ms(path):
    with open(path) as f:
        return json.loads(f.readline())["failover"]["failover_ms"]
rows = [("server", "kill -9 rounds", "median ms", "worst ms", "best ms", "SIGSTOP ms")]
med = {}
for k in kinds:
    vals = [ms(p) for p in glob.glob(os.path.join(out, f"{k}-kill-r*.json"))]
    got = [v for v in vals if v is not None]
    stop = ms(os.path.join(out, f"{k}-stop.json")) if os.path.exists(os.path.join(out, f"{k}-stop.json")) else None
    med[k] = statistics.median(got) if got else None
    rows.append((k + suffix, f"{len(got)} of {len(vals)}", f"{med[k]:.0f}" if got else "-",
                 f"{max(got):.0f}" if got else "-", f"{min(got):.0f}" if got else "-",
                 f"{stop:.0f}" if stop is not None else "-"))
w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
for i, r in enumerate(rows):
    print(" | ".join(c.ljust(w[j]) for j, c in enumerate(r)).rstrip())
    if i == 0:
        print("-+-".join("-" * x for x in w))
if med.get("paddock") and med.get("zookeeper"):
    r = med["paddock"] / med["zookeeper"]
    print(f"median ratio paddock{suffix}/zookeeper{suffix}: {r:.2f} (target <= 0.5: {'ok' if r <= 0.5 else 'MISS'})")
if tls:
    print("-tls: every ensemble's quorum links on TLS (sslQuorum=true, PEM stores from scripts/ensemble.sh --tls); "
          "clients in plaintext")
print(f"load average {json.load(open(os.path.join(out, 'params.json')))}")
EOF
