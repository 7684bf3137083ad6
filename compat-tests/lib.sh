# Shared by every compat-tests/<suite>/run.sh: source it, then call compat_init <suite>.
#
# The contract of a suite's run.sh (compat-tests/run.sh relies on it):
#   - runnable alone, from any directory; starts every server it needs on free loopback ports and stops
#     them on exit (compat_cleanup runs from the EXIT trap, also on failure);
#   - its last stdout line is its table row, `<suite> | <passed> | <failed> | <skipped>`, printed by report;
#   - every skipped test (and every known failure, which counts as skipped: it ran and failed the way its
#     KNOWN_FAILURES file says) is explained by a `report_skip <count> <reason>` line before the row;
#   - exit status 0 only if tests ran and none failed unexpectedly.
#
# Functions:
#   compat_init SUITE            sets ROOT, COMPAT_WORK (a temp dir, kept if KEEP_WORK=1) and the EXIT trap
#   compat_args ARGS...          the options every suite takes: --against-zookeeper sets TARGET=zookeeper
#                                (else paddock) and names the row <suite>@zookeeper; `--` ends the options,
#                                what follows is PASS_ARGS (for the client's own runner); a flag named in
#                                COMPAT_EXTRA_FLAGS (e.g. "--full") sets FLAGS[--full]=1; anything else exits 2
#   compat_paddock_bin           prints the paddock binary: $PADDOCK_BIN, or a debug build made now
#   free_port                    prints a free loopback TCP port
#   ruok PORT                    prints the server's answer to `ruok` (empty if none)
#   start_paddock NAME PORT DIR [serve args...]
#                                starts `paddock serve` in the background (log: $COMPAT_WORK/NAME.log),
#                                waits until it answers imok, records its pid (PADDOCK_PIDS[NAME]);
#                                returns 1 (log tail on stderr) if it does not come up within 60 s
#   stop_paddock NAME [SIGNAL]   SIGTERM (or SIGNAL, e.g. KILL) and wait for it to exit
#   start_paddock_ensemble N PREFIX [serve args...]
#                                starts an N-member paddock ensemble on free loopback ports: member i is named
#                                PREFIXi (log $COMPAT_WORK/PREFIXi.log, zoo.cfg with server.1..N lines and myid
#                                in $COMPAT_WORK/PREFIXi/), stopped by compat_cleanup like start_paddock's;
#                                waits until every member serves (srvr says Mode: leader or follower) and sets
#                                ENSEMBLE_PORTS (client port of member i at index i-1), ENSEMBLE_CONNECT
#                                (host:port,... of all) and ENSEMBLE_LEADER (the leader's member number)
#                                ENSEMBLE_EXTRA_CFG: zoo.cfg lines (each ending in a newline) added to every member's
#   paddock_mode PORT            prints the member's Mode from srvr (leader, follower, observer, standalone;
#                                empty while it does not serve)
#   start_zookeeper NAME PORT    starts Apache ZooKeeper 3.9 (scripts/zookeeper.sh) with data in
#                                $COMPAT_WORK/NAME; ZK_JVMFLAGS passes through. Stopped by compat_cleanup.
#   member_start I               starts member I of an ensemble the suite writes itself: zoo.cfg in
#                                $COMPAT_WORK/mI, log server.log there, pid in its pid file; ZooKeeper 3.9.5's
#                                QuorumPeerMain when TARGET=zookeeper (classpath in MEMBER_CP), else paddock
#                                (MEMBER_BIN)
#   member_stop I                SIGTERM to member I, SIGKILL after 10 s (nothing if it never started)
#   member_wait_serving SECS I...
#                                waits until each member I serves (srvr Mode leader or follower, its client port
#                                in ${ports[I-1]}), failing the suite with its log's tail after SECS in all
#   report PASSED FAILED SKIPPED prints the header and the suite's row
#   report_skip COUNT REASON     prints `<suite>: skipped COUNT: REASON`
#   report_ops COMPARED MISMATCHES
#                                prints `<suite>: operations: COMPARED compared, MISMATCHES mismatches` for a
#                                suite that also compares operations (b2b): operations are not tests, so they
#                                never go into the row; run.sh and scripts/test.sh count them apart
#   compat_fail MESSAGE          prints MESSAGE, the row `0 | 1 | 0`, and exits 1
#   compat_junit_counts XML...   prints "passed failed skipped" summed over JUnit XML reports (pytest's,
#                                surefire's); a report that is missing or unreadable counts as one failure
#   compat_retry_flaky RESULTS.json KNOWN_FAILURES RETRY.json RERUN [--harness-only]
#                                for the listed-flaky (`~`) tests that failed in RESULTS.json, calls
#                                `RERUN RETRY.json ID...` (the suite's function that runs exactly those tests
#                                once more and writes their results to RETRY.json); a no-op when none failed
#   compat_judge RESULTS.json KNOWN_FAILURES [--whole] [--harness-only] [--retried RETRY.json]
#                                judges a client's own suite against its KNOWN_FAILURES (known_failures.py
#                                says how): prints a verdict per test, a `<suite>: retried ID: OUTCOME` line
#                                per flaky test run again, a report_skip line per reason, and sets
#                                JUDGED_PASSED, JUDGED_FAILED and JUDGED_SKIPPED
# shellcheck shell=bash

COMPAT_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$COMPAT_LIB_DIR/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/paddock-target}"
declare -gA PADDOCK_PIDS=()
COMPAT_ZK_DIRS=()
COMPAT_SUITE=""
COMPAT_WORK=""

compat_init() { # suite
    COMPAT_SUITE=$1
    COMPAT_WORK="$(mktemp -d "${TMPDIR:-/tmp}/paddock-$1.XXXXXX")"
    trap compat_cleanup EXIT
}

# A suite with cleanup of its own calls this from its own EXIT trap, last. Such a trap must `set +e`
# first: under `set -e`, re-raising the status with `(exit $rc)` ends the trap before this runs.
compat_cleanup() {
    local rc=$? name dir
    for name in "${!PADDOCK_PIDS[@]}"; do
        stop_paddock "$name" 2>/dev/null || true
    done
    for dir in "${COMPAT_ZK_DIRS[@]}"; do
        [[ -f "$dir/zk.pid" ]] && bash "$ROOT/scripts/zookeeper.sh" stop "$dir" >/dev/null 2>&1 || true
    done
    if [[ -n "$COMPAT_WORK" ]]; then
        if [[ -n "${KEEP_WORK:-}" ]]; then
            echo "$COMPAT_SUITE: kept $COMPAT_WORK" >&2
        else
            rm -rf "$COMPAT_WORK"
        fi
    fi
    return $rc
}

compat_args() {
    TARGET=paddock
    PASS_ARGS=()
    declare -gA FLAGS=()
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --against-zookeeper) TARGET=zookeeper ;;
            --) shift; PASS_ARGS=("$@"); break ;;
            *)
                if [[ " ${COMPAT_EXTRA_FLAGS:-} " == *" $1 "* ]]; then
                    FLAGS[$1]=1
                else
                    echo "$0: unknown option '$1' (see the header of $0)" >&2
                    exit 2
                fi
                ;;
        esac
        shift
    done
    [[ "$TARGET" == paddock ]] || COMPAT_SUITE="$COMPAT_SUITE@zookeeper"
}

compat_paddock_bin() {
    if [[ -n "${PADDOCK_BIN:-}" ]]; then
        echo "$PADDOCK_BIN"
        return
    fi
    (cd "$ROOT" && cargo build -q -p paddock) >&2 || return 1
    echo "$CARGO_TARGET_DIR/debug/paddock"
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

ruok() { # port
    timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$1"' && printf ruok >&3 && cat <&3' 2>/dev/null || true
}

start_paddock() { # name port data-dir [serve args...]
    local name=$1 port=$2 dir=$3 bin pid deadline
    shift 3
    bin="$(compat_paddock_bin)" || return 1
    [[ -x "$bin" ]] || { echo "$COMPAT_SUITE: no paddock binary at $bin" >&2; return 1; }
    mkdir -p "$dir"
    "$bin" serve --port "$port" --data-dir "$dir" "$@" >>"$COMPAT_WORK/$name.log" 2>&1 </dev/null &
    pid=$!
    PADDOCK_PIDS[$name]=$pid
    deadline=$((SECONDS + 60))
    until [[ "$(ruok "$port")" == imok ]]; do
        if ! kill -0 "$pid" 2>/dev/null || ((SECONDS >= deadline)); then
            echo "$COMPAT_SUITE: paddock '$name' did not answer ruok on 127.0.0.1:$port; last log lines:" >&2
            tail -n 30 "$COMPAT_WORK/$name.log" >&2 || true
            return 1
        fi
        sleep 0.1
    done
}

stop_paddock() { # name [signal]
    local name=$1 sig=${2:-TERM} pid
    pid=${PADDOCK_PIDS[$name]:-}
    [[ -n "$pid" ]] || return 0
    unset "PADDOCK_PIDS[$name]"
    kill -0 "$pid" 2>/dev/null || return 0
    # One block with stderr closed: bash reports a job killed by a signal ("Killed") as soon as it reaps
    # it, which would land in the middle of the suite's output.
    {
        kill -s "$sig" "$pid" || true
        for _ in $(seq 1 100); do kill -0 "$pid" || break; sleep 0.1; done
        kill -9 "$pid" || true
        wait "$pid" || true
    } 2>/dev/null
}

member_start() { # i
    local dir="$COMPAT_WORK/m$1"
    if [[ "$TARGET" == zookeeper ]]; then
        java -Xmx192m -Dzookeeper.log.dir="$dir" -cp "$MEMBER_CP" org.apache.zookeeper.server.quorum.QuorumPeerMain \
            "$dir/zoo.cfg" >>"$dir/server.log" 2>&1 </dev/null &
    else
        "$MEMBER_BIN" serve --config "$dir/zoo.cfg" >>"$dir/server.log" 2>&1 </dev/null &
    fi
    echo $! >"$dir/pid"
}

member_stop() { # i
    local pid
    [[ -f "$COMPAT_WORK/m$1/pid" ]] || return 0
    pid="$(cat "$COMPAT_WORK/m$1/pid")"
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
}

member_wait_serving() { # seconds i...
    local i mode deadline=$((SECONDS + $1))
    shift
    for i in "$@"; do
        until mode="$(paddock_mode "${ports[i - 1]}")"; [[ "$mode" == leader || "$mode" == follower ]]; do
            ((SECONDS < deadline)) || {
                tail -n 30 "$COMPAT_WORK/m$i/server.log" >&2
                compat_fail "member $i on port ${ports[i - 1]} did not serve"
            }
            sleep 0.5
        done
    done
}

paddock_mode() { # port
    timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$1"' && printf srvr >&3 && cat <&3' 2>/dev/null |
        sed -n 's/^Mode: //p' || true
}

start_paddock_ensemble() { # n prefix [serve args...]
    local n=$1 prefix=$2 i bin pid dir deadline mode servers="" leader
    shift 2
    bin="$(compat_paddock_bin)" || return 1
    ENSEMBLE_PORTS=()
    ENSEMBLE_CONNECT=""
    ENSEMBLE_LEADER=""
    for ((i = 1; i <= n; i++)); do
        ENSEMBLE_PORTS+=("$(free_port)")
        servers+="server.$i=127.0.0.1:$(free_port):$(free_port);${ENSEMBLE_PORTS[i - 1]}"$'\n'
        ENSEMBLE_CONNECT+="${ENSEMBLE_CONNECT:+,}127.0.0.1:${ENSEMBLE_PORTS[i - 1]}"
    done
    for ((i = 1; i <= n; i++)); do
        dir="$COMPAT_WORK/$prefix$i"
        mkdir -p "$dir/data"
        echo "$i" >"$dir/data/myid"
        printf 'tickTime=2000\ninitLimit=5\nsyncLimit=2\ndataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\n%s%s' \
            "$dir/data" "${ENSEMBLE_PORTS[i - 1]}" "${ENSEMBLE_EXTRA_CFG:-}" "$servers" >"$dir/zoo.cfg"
        "$bin" serve --config "$dir/zoo.cfg" "$@" >>"$COMPAT_WORK/$prefix$i.log" 2>&1 </dev/null &
        PADDOCK_PIDS[$prefix$i]=$!
    done
    deadline=$((SECONDS + 60))
    for ((i = 1; i <= n; i++)); do
        pid=${PADDOCK_PIDS[$prefix$i]}
        until mode="$(paddock_mode "${ENSEMBLE_PORTS[i - 1]}")"; [[ "$mode" == leader || "$mode" == follower ]]; do
            if ! kill -0 "$pid" 2>/dev/null || ((SECONDS >= deadline)); then
                echo "$COMPAT_SUITE: ensemble member '$prefix$i' does not serve on 127.0.0.1:${ENSEMBLE_PORTS[i - 1]}; last log lines:" >&2
                tail -n 30 "$COMPAT_WORK/$prefix$i.log" >&2 || true
                return 1
            fi
            sleep 0.2
        done
        [[ "$mode" == leader ]] && leader=$i
    done
    [[ -n "${leader:-}" ]] || { echo "$COMPAT_SUITE: no member of the ensemble says it leads" >&2; return 1; }
    ENSEMBLE_LEADER=$leader
}

start_zookeeper() { # name port
    local dir="$COMPAT_WORK/$1"
    mkdir -p "$dir"
    COMPAT_ZK_DIRS+=("$dir")
    bash "$ROOT/scripts/zookeeper.sh" start "$2" "$dir" >/dev/null
}

report() { # passed failed skipped
    printf 'suite | passed | failed | skipped\n%s | %d | %d | %d\n' "$COMPAT_SUITE" "$1" "$2" "$3"
}

report_skip() { # count reason
    printf '%s: skipped %d: %s\n' "$COMPAT_SUITE" "$1" "$2"
}

report_ops() { # compared mismatches
    printf '%s: operations: %d compared, %d mismatches\n' "$COMPAT_SUITE" "$1" "$2"
}

compat_fail() { # message
    echo "$COMPAT_SUITE: $1" >&2
    report 0 1 0
    exit 1
}

compat_retry_flaky() { # results.json known-failures retry.json rerun-function [--harness-only]
    local results=$1 known=$2 retry=$3 rerun=$4 ids
    shift 4
    rm -f "$retry"
    mapfile -t ids < <(python3 "$COMPAT_LIB_DIR/known_failures.py" "$results" "$known" --flaky-failed "$@")
    ((${#ids[@]} > 0)) || return 0
    echo "$COMPAT_SUITE: running again ${#ids[@]} listed-flaky test(s) that failed: ${ids[*]}"
    "$rerun" "$retry" "${ids[@]}" || true
    # No second result (the re-run died) leaves those tests failed: the judge sees them not run again.
    [[ -f "$retry" ]] || echo '{}' >"$retry"
}

compat_judge() { # results.json known-failures [--whole] [--harness-only] [--retried retry.json]
    local out="$COMPAT_WORK/judged.txt" count reason tid outcome
    JUDGED_PASSED=0 JUDGED_FAILED=1 JUDGED_SKIPPED=0
    if ! python3 "$COMPAT_LIB_DIR/known_failures.py" "$@" >"$out"; then
        echo "$COMPAT_SUITE: could not judge the results in $1" >&2
        return 0
    fi
    grep -v -e '^SKIP ' -e '^SUMMARY ' -e '^RETRIED ' "$out" || true
    while IFS=$'\t' read -r tid outcome; do
        echo "$COMPAT_SUITE: retried ${tid#RETRIED }: $outcome"
    done < <(grep '^RETRIED ' "$out")
    while IFS=$'\t' read -r count reason; do
        report_skip "${count#SKIP }" "$reason"
    done < <(grep '^SKIP ' "$out")
    read -r _ JUDGED_PASSED JUDGED_FAILED JUDGED_SKIPPED < <(grep '^SUMMARY ' "$out")
}

compat_junit_counts() { # report.xml...
    python3 - "$@" <<'PY'
import sys, xml.etree.ElementTree as ET
passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        failed += 1
        continue
    for suite in [root] if root.tag == "testsuite" else root.findall("testsuite"):
        bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skip = int(suite.get("skipped", 0))
        passed += int(suite.get("tests", 0)) - bad - skip
        failed += bad
        skipped += skip
print(passed, failed, skipped)
PY
}
