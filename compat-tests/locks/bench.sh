#!/usr/bin/env bash
# Lock measurements (issue 10), not part of the test command: uncontended acquire latency (p50/p99 of N
# acquire calls, each followed by a release, one session) and contended hand-offs per second (K
# contenders, each its own session, looping acquire+release for S seconds), for the recipes crate's
# Lock (recipes/examples/lock_bench.rs) and Curator 5.9's InterProcessMutex (java/CuratorSide), each
# against paddock and Apache ZooKeeper 3.9.5, in one run on this machine. Prints a Markdown table.
#
#   compat-tests/locks/bench.sh [--n N (default 500)] [--contenders K (8)] [--secs S (10)]
#                               [--server-bin PATH (a paddock binary to use instead of a release build)]
#
# Release builds of paddock and lock_bench ($CARGO_TARGET_DIR/release). Both servers run with their
# defaults (tickTime 2000), data in a temp dir. A shared, busy machine drifts: compare rows of one run, not across runs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
N=500 K=8 S=10 SERVER_BIN=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --n) N=$2; shift ;;
        --contenders) K=$2; shift ;;
        --secs) S=$2; shift ;;
        --server-bin) SERVER_BIN=$2; shift ;;
        *) echo "bench.sh: unknown option '$1' (see the header of $0)" >&2; exit 2 ;;
    esac
    shift
done
compat_init locks-bench
# Two builds: a target flag (--example) would restrict both packages to that target.
if [[ -z "$SERVER_BIN" ]]; then
    (cd "$ROOT" && cargo build -q --release --locked -p paddock) || { echo "bench.sh: release build failed" >&2; exit 1; }
    SERVER_BIN="$CARGO_TARGET_DIR/release/paddock"
fi
(cd "$ROOT" && cargo build -q --release --locked -p paddock-recipes --example lock_bench) ||
    { echo "bench.sh: release build failed" >&2; exit 1; }
export PADDOCK_BIN="$SERVER_BIN"
RB="$CARGO_TARGET_DIR/release/examples/lock_bench"
JT="$HERE/java/target"
SRC="$HERE/java/src/main/java/dev/paddock/locks/CuratorSide.java"
mkdir -p "$JT"
if [[ ! "$JT/cp.txt" -nt "$HERE/java/pom.xml" ]]; then
    (cd "$HERE/java" && mvn -q -B dependency:build-classpath -Dmdep.outputFile="$JT/cp.txt") >&2
fi
if [[ ! "$JT/classes/dev/paddock/locks/CuratorSide.class" -nt "$SRC" ]]; then
    rm -rf "$JT/classes"
    javac -d "$JT/classes" -cp "$(cat "$JT/cp.txt")" "$SRC"
fi
JCP="$JT/classes:$(cat "$JT/cp.txt")"

rows=()
for target in paddock zookeeper; do
    port="$(free_port)"
    if [[ $target == zookeeper ]]; then
        start_zookeeper zk "$port" >&2
    else
        start_paddock paddock "$port" "$COMPAT_WORK/data" --max-client-cnxns 0
    fi
    servers="127.0.0.1:$port"
    for client in recipes curator; do
        echo "bench.sh: $client against $target" >&2
        if [[ $client == recipes ]]; then
            u=$("$RB" --servers "$servers" --path "/bench/u-$client" uncontended "$N")
            c=$("$RB" --servers "$servers" --path "/bench/c-$client" contended "$K" "$S")
        else
            u=$(java -cp "$JCP" dev.paddock.locks.CuratorSide "$servers" bench-uncontended "/bench/u-$client" "$N")
            c=$(java -cp "$JCP" dev.paddock.locks.CuratorSide "$servers" bench-contended "/bench/c-$client" "$K" "$S")
        fi
        read -r _ p50 _ p99 <<<"$u"
        read -r _ hps <<<"$c"
        rows+=("| $client | $target | $((p50 / 1000)).$(printf '%03d' $((p50 % 1000))) | $((p99 / 1000)).$(printf '%03d' $((p99 % 1000))) | $hps |")
    done
    if [[ $target == zookeeper ]]; then
        for dir in "${COMPAT_ZK_DIRS[@]}"; do bash "$ROOT/scripts/zookeeper.sh" stop "$dir" >/dev/null 2>&1 || true; done
        COMPAT_ZK_DIRS=()
    else
        stop_paddock paddock
    fi
done
echo "| client | server | uncontended acquire p50 (ms) | p99 (ms) | hand-offs/s, $K contenders |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo "($N uncontended acquires; ${S} s contended; paddock binary $PADDOCK_BIN; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))"
