#!/usr/bin/env bash
# go-zookeeper/zk v1.0.4's own test suite against paddock (docs/compat.md §5).
#
#   compat-tests/gozk/run.sh                  build paddock (debug) if needed, run every test
#   compat-tests/gozk/run.sh -run 'Lock|Multi'  extra `go test` flags are passed on (a filtered run still
#                                             checks known failures only among the tests that ran)
#
# No --against-zookeeper: go-zookeeper v1.0.4's harness waits for its servers with `srvr` and a pattern
# that wants the build date as MM/DD/YYYY, and ZooKeeper 3.9.5 answers "built on 2026-02-11 20:18 UTC", so
# every test that starts a server fails its start against 3.9.5 (tried, 7 Dec 2026; paddock answers in the
# older format). Upstream runs these tests against older ZooKeeper releases.
#
# The module's tests start their own servers through $ZOOKEEPER_BIN_PATH/zkServer.sh; shim/zkServer.sh execs
# paddock with the generated zoo.cfg. Each top-level test is reported as PASS/FAIL/SKIP. Tests listed in
# KNOWN_FAILURES (reconfig on the 3-member ensemble, a race) may fail without failing this script; the
# script fails if any other test fails, if a test never reported (panic, timeout), or if a known failure
# passes (then the list is stale and must be edited). An entry marked `~` is a flaky test: when it fails it
# runs once more, alone, and fails the suite if it fails again; every such retry is named in the output
# (`gozk: retried ...`) and the reason says whose race it is (compat-tests/known_failures.py).
#
# Ends with the row `gozk | passed | failed | skipped` (compat-tests/lib.sh): `failed` counts unexpected
# failures; `skipped` counts the module's own skips plus the known failures (they ran, and failed the way
# KNOWN_FAILURES says), each group explained by a `skipped N: reason` line.
#
# Env: PADDOCK_BIN (skip the build), CARGO_TARGET_DIR (default ~/.cache/paddock-target),
#      GOZK_LOG (where to keep the full `go test -json` output; default the work dir, kept with KEEP_WORK=1).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$COMPAT_LIB_DIR/gozk"
compat_init gozk

command -v go >/dev/null || compat_fail "no 'go' on PATH"

BIN="$(compat_paddock_bin)" || compat_fail "could not build paddock"
[[ -x "$BIN" ]] || compat_fail "no paddock binary at $BIN"
export PADDOCK_BIN="$BIN"
export ZOOKEEPER_BIN_PATH="$HERE/shim"
# The two reconfig tests skip without ZK_VERSION; paddock speaks 3.9.4.
export ZK_VERSION="${ZK_VERSION:-3.9.4}"
# Verbose tests copy every server log line into the test output; keep paddock to warnings and errors.
export RUST_LOG="${RUST_LOG:-warn}"
export NO_COLOR=1

LOG="${GOZK_LOG:-$COMPAT_WORK/gotest.jsonl}"
cd "$HERE"
go mod download github.com/go-zookeeper/zk
# The full list, so that tests that never report (a panic ends the test binary) count as failures.
mapfile -t ALL < <(go test -list '.*' github.com/go-zookeeper/zk | grep -E '^(Test|Example)' || true)

set +e
go test -count=1 -timeout 900s -json "$@" github.com/go-zookeeper/zk >"$LOG" 2>&1
rc=$?
set -e
echo "gozk: go test exited $rc; full output in $LOG"

# go test -json -> {test: [status, message]} for compat_judge; a listed test that never reported (a panic
# ends the test binary) is "noreport" (only in a whole run: with a filter, the tests named in the rest).
to_results() { # log out "extra args" expected-tests...
    python3 - "$@" <<'EOF'
import json, sys

log, out, extra_args, *all_tests = sys.argv[1:]
result, output = {}, {}
for raw in open(log):
    try:
        ev = json.loads(raw)
    except ValueError:
        continue
    test = ev.get("Test")
    if not test or "/" in test:
        continue
    if ev.get("Action") in ("pass", "fail", "skip"):
        result[test] = ev["Action"]
    elif ev.get("Action") == "output":
        output.setdefault(test, []).append(ev.get("Output", ""))
if not extra_args.strip():
    for t in all_tests:
        result.setdefault(t, "noreport")

def why(test):
    lines = [l.strip() for l in output.get(test, []) if "_test.go" in l or "panic" in l or "Error" in l]
    return " / ".join(lines[-3:])[:400] or "no reason printed"

json.dump({t: [r, "" if r == "pass" else why(t)] for t, r in result.items()}, open(out, "w"))
EOF
}
to_results "$LOG" "$COMPAT_WORK/results.json" "$*" "${ALL[@]}"

# A listed-flaky test that failed runs once more, alone (compat_retry_flaky); failing twice fails the suite.
rerun() { # retry.json test...
    local out=$1
    shift
    local pattern
    pattern="^($(IFS='|'; echo "$*"))\$"
    go test -count=1 -timeout 300s -json -run "$pattern" github.com/go-zookeeper/zk >"$COMPAT_WORK/retry.jsonl" 2>&1
    to_results "$COMPAT_WORK/retry.jsonl" "$out" "" "$@"
}
compat_retry_flaky "$COMPAT_WORK/results.json" "$HERE/KNOWN_FAILURES" "$COMPAT_WORK/retry.json" rerun
whole=()
[[ $# -gt 0 ]] || whole+=(--whole)
[[ ! -f "$COMPAT_WORK/retry.json" ]] || whole+=(--retried "$COMPAT_WORK/retry.json")
compat_judge "$COMPAT_WORK/results.json" "$HERE/KNOWN_FAILURES" "${whole[@]}"
passed=$JUDGED_PASSED failed=$JUDGED_FAILED skipped=$JUDGED_SKIPPED
if ((passed + failed == 0)); then
    echo "$COMPAT_SUITE: no test reported" >&2
    failed=1
fi
report "$passed" "$failed" "$skipped"
((failed == 0))
