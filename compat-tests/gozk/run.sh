#!/usr/bin/env bash
# go-zookeeper/zk v1.0.4's own test suite against paddock (compat-notes §5).
#
#   compat-tests/gozk/run.sh                  build paddock (debug) if needed, run every test
#   compat-tests/gozk/run.sh -run 'Lock|Multi'  extra `go test` flags are passed on (a filtered run still
#                                             checks known failures only among the tests that ran)
#
# The module's tests start their own servers through $ZOOKEEPER_BIN_PATH/zkServer.sh; shim/zkServer.sh execs
# paddock with the generated zoo.cfg. Each top-level test is reported as PASS/FAIL/SKIP. Tests listed in
# KNOWN_FAILURES (3-node ensembles: paddock has no ensemble yet) may fail without failing this script; the
# script fails if any other test fails, if a test never reported (panic, timeout), or if a known failure
# passes (then the list is stale and must be edited), except for entries marked `~` (races in the
# client's own tests, which may go either way).
#
# Ends with the row `gozk | passed | failed | skipped` (compat-tests/lib.sh): `failed` counts unexpected
# failures; `skipped` counts the module's own skips plus the known failures (they ran, and failed the way
# KNOWN_FAILURES says), each group explained by a `skipped N: reason` line.
#
# Env: PADDOCK_BIN (skip the build), CARGO_TARGET_DIR (default ~/.cache/paddock-target),
#      GOZK_LOG (where to keep the full `go test -json` output; default a temp file, path printed).
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

LOG="${GOZK_LOG:-$(mktemp "${TMPDIR:-/tmp}/paddock-gozk.XXXXXX.jsonl")}"
cd "$HERE"
go mod download github.com/go-zookeeper/zk
# The full list, so that tests that never report (a panic ends the test binary) count as failures.
mapfile -t ALL < <(go test -list '.*' github.com/go-zookeeper/zk | grep -E '^(Test|Example)' || true)

set +e
go test -count=1 -timeout 900s -json "$@" github.com/go-zookeeper/zk >"$LOG" 2>&1
rc=$?
set -e
echo "gozk: go test exited $rc; full output in $LOG"

python3 - "$LOG" "$HERE/KNOWN_FAILURES" "$*" "${ALL[@]}" <<'EOF'
import json, sys

log, known_path, extra_args, *all_tests = sys.argv[1:]
filtered = bool(extra_args.strip())
known, flaky = {}, set()
for line in open(known_path):
    line = line.split("#", 1)[0].strip()
    if line:
        name, _, reason = line.partition(" ")
        if name.startswith("~"):  # may fail or pass: a race in the client's own test, not a paddock gap
            name = name[1:]
            flaky.add(name)
        known[name] = reason.strip()

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

if not filtered:
    for t in all_tests:
        result.setdefault(t, "noreport")

def why(test):
    lines = [l.rstrip() for l in output.get(test, []) if "_test.go" in l or "panic" in l or "Error" in l]
    return " / ".join(l.strip() for l in lines[-3:])[:400]

passed = sorted(t for t, r in result.items() if r == "pass")
skipped = sorted(t for t, r in result.items() if r == "skip")
failed = sorted(t for t, r in result.items() if r in ("fail", "noreport"))
unexpected = [t for t in failed if t not in known]
known_failed = [t for t in failed if t in known]
stale = [t for t in passed if t in known and t not in flaky]

for t in sorted(result):
    print(f"  {result[t].upper():8} {t}")
for t in skipped:
    print(f"gozk: SKIP {t}: {why(t)}")
for t in known_failed:
    print(f"gozk: known failure {t}: {known[t]}")
for t in unexpected:
    state = "never reported (panic or timeout)" if result[t] == "noreport" else "FAILED"
    print(f"gozk: UNEXPECTED {t} {state}: {why(t)}")
for t in stale:
    print(f"gozk: STALE known failure {t} passed: remove it from KNOWN_FAILURES")
print(f"gozk: {len(passed)} passed, {len(failed)} failed ({len(known_failed)} known, "
      f"{len(unexpected)} unexpected), {len(skipped)} skipped, {len(stale)} stale known failures")
ok = not unexpected and not stale and bool(result)
groups = {}
for t in skipped:
    groups.setdefault(f"go-zookeeper skips it: {why(t) or 'no reason printed'}", []).append(t)
for t in known_failed:
    # Group by the gap ("paddock has no ensemble"), the part of the reason before its first colon.
    gap = known[t].split(":", 1)[0].removeprefix("known, ").removeprefix("flaky, ")
    groups.setdefault(f"ran and failed as listed in KNOWN_FAILURES: {gap}", []).append(t)
with open(log + ".summary", "w") as f:
    f.write(f"{len(passed)} {len(unexpected)} {len(skipped) + len(known_failed)} {int(ok)}\n")
    for reason, tests in groups.items():
        f.write(f"{len(tests)} {reason} ({', '.join(tests)})\n")
EOF
read -r passed failed skipped ok <"$LOG.summary"
while read -r count reason; do
    report_skip "$count" "$reason"
done < <(tail -n +2 "$LOG.summary")
rm -f "$LOG.summary"
[[ "$ok" == 1 || "$failed" -gt 0 ]] || failed=1
report "$passed" "$failed" "$skipped"
[[ "$ok" == 1 ]]
