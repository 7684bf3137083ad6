#!/usr/bin/env bash
# Apache Curator 5.9.0's own curator-recipes tests (the `tests` test-jar from Maven Central) against paddock.
# src/test/java shadows curator-test's TestingServer with a class that starts the real paddock binary as a
# separate process on a free port with its own data dir (restart() = SIGTERM + start on the same port and
# dir), and TestingCluster / TestingZooKeeperServer with ones that start N paddock processes as a real
# ensemble (zoo.cfg with server.N lines, myid; killServer = SIGKILL). Surefire scans the test-jar
# (dependenciesToScan); see README.md.
#
#   compat-tests/curator-recipes/run.sh                      the CI subset (CI_TESTS, 159 tests, about 9.5 min on 2 cores)
#   compat-tests/curator-recipes/run.sh --full               every test in the jar (293) and this directory's own (1); about 35 min
#   compat-tests/curator-recipes/run.sh --against-zookeeper  the same tests, TestingServer starting Apache
#                                                            ZooKeeper 3.9.5 (scripts/zookeeper.sh's jars)
#   compat-tests/curator-recipes/run.sh [...] -- <mvn args>  e.g. -- -Dtest=TestLeaderLatch (replaces the
#                                                            class list)
#
# KNOWN_FAILURES lists tests expected to fail (compat-tests/known_failures.py has the format). They count
# as skipped, with their reason. The run fails if any other test fails, or a listed (non-`~`) test passes.
# `~` marks a race in Curator's own test: when it fails it runs once more, alone, and fails the run if it
# fails again; each retry is named (`curator-recipes: retried ...`). Entries whose reason starts with
# `harness:` are limits of a separate-process TestingServer and are expected with --against-zookeeper too,
# as are the `~` races; the others are paddock's.
# Env: PADDOCK_BIN (no build then), KEEP_WORK=1 (keep the temp dir with server logs and surefire reports).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$HERE/../lib.sh"
compat_init curator-recipes

COMPAT_EXTRA_FLAGS="--full"
compat_args "$@"
FULL=${FLAGS[--full]:-0}
MVN_ARGS=("${PASS_ARGS[@]}")

command -v mvn >/dev/null || compat_fail "mvn not found (apt-get install maven)"
command -v java >/dev/null || compat_fail "java not found (apt-get install openjdk-17-jdk-headless)"

# Online resolution only when the offline build cannot compile and start surefire.
if ! (cd "$HERE" && mvn -q -B -o test -Dtest=NoSuchTest -Dsurefire.failIfNoSpecifiedTests=false) >/dev/null 2>&1; then
    echo "curator-recipes: resolving Maven dependencies online (first run)" >&2
    (cd "$HERE" && mvn -q -B dependency:go-offline &&
        mvn -q -B test -Dtest=NoSuchTest -Dsurefire.failIfNoSpecifiedTests=false) >&2 ||
        compat_fail "could not resolve the Maven dependencies"
fi

# The servers' data directories (InstanceSpec's temp dirs, one per TestingServer or cluster member) go under
# the work dir, so they are removed with it (or kept with KEEP_WORK=1) and follow TMPDIR.
mkdir -p "$COMPAT_WORK/tmp"
PROPS=(-Dpaddock.target="$TARGET" -Dpaddock.logDir="$COMPAT_WORK/server-logs" -Dpaddock.tmpDir="$COMPAT_WORK/tmp")
if [[ "$TARGET" == zookeeper ]]; then
    ZK_CP="$(bash "$ROOT/scripts/zookeeper.sh" classpath)" || compat_fail "no ZooKeeper jars (scripts/zookeeper.sh fetch)"
    PROPS+=(-Dpaddock.zkClasspath="$ZK_CP")
else
    BIN="$(compat_paddock_bin)" || compat_fail "could not build paddock"
    [[ -x "$BIN" ]] || compat_fail "no paddock binary at $BIN"
    PROPS+=(-Dpaddock.bin="$BIN")
fi

# The CI subset: CI_TESTS, one surefire pattern per line.
SELECT=()
if ((${#MVN_ARGS[@]} == 0)) && ((FULL == 0)); then
    SELECT=(-Dtest="$(grep -v '^\s*\(#\|$\)' "$HERE/CI_TESTS" | paste -sd,)")
fi

REPORTS="$COMPAT_WORK/surefire-reports"
started=$SECONDS
set +e
# Surefire's per-class line ("Tests run: N, Failures: ... -- in <class>") is echoed as each class ends, so a
# CI log shows progress; the per-test verdicts follow once the reports are read.
(cd "$HERE" && timeout 7200 mvn -B -o test -Dmaven.test.failure.ignore=true \
    -Dpaddock.reportsDir="$REPORTS" "${PROPS[@]}" "${SELECT[@]}" "${MVN_ARGS[@]}") 2>&1 |
    tee "$COMPAT_WORK/mvn.out" | sed -un 's/^\[[A-Z]*\] Tests run: \(.*\), Time elapsed: \([0-9.,]*\) s.* -- in org\.apache\.curator\.\(.*\)$/class \3: run \1 (\2 s)/p'
rc=${PIPESTATUS[0]}
set -e
echo "curator-recipes: mvn exited $rc after $((SECONDS - started)) s against $TARGET"
if [[ $rc -ne 0 ]]; then
    tail -n 40 "$COMPAT_WORK/mvn.out" >&2
fi

WHOLE=0
if ((FULL == 1)) && ((${#MVN_ARGS[@]} == 0)); then WHOLE=1; fi
# Surefire's reports -> {TestClass.method: [status, message]} for compat_judge; EXPECTED ids that are not
# reported are "noreport" (a re-run that died).
to_results() { # reports-dir results.json expected...
    python3 - "$@" <<'EOF'
import glob, json, os, sys, xml.etree.ElementTree as ET

reports, out, *expected = sys.argv[1:]
results = {}
for path in sorted(glob.glob(os.path.join(reports, "TEST-*.xml"))):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        results[f"surefire report {os.path.basename(path)}"] = ["fail", "unreadable"]
        continue
    for case in root.iter("testcase"):
        cls = case.get("classname", "").rsplit(".", 1)[-1]
        tid = f"{cls}.{case.get('name')}"
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        skip = case.find("skipped")
        if bad is not None:
            msg = (bad.get("message") or bad.get("type") or bad.tag).strip().splitlines()
            results[tid] = ["fail", (msg[0] if msg else bad.tag)[:300]]
        elif skip is not None:
            # @Disabled tests carry a message; aborted ones (TestingCluster) the exception as text.
            msg = (skip.get("message") or (skip.text or "").strip().split("\n", 1)[0] or "skipped").strip()
            msg = msg.removeprefix("org.opentest4j.TestAbortedException: ")
            if msg.endswith(" is @Disabled"):
                msg = "@Disabled in Curator's own source"
            results[tid] = ["skip", msg]
        else:
            results[tid] = ["pass", ""]
for tid in expected:
    results.setdefault(tid, ["noreport", ""])
json.dump(results, open(out, "w"))
EOF
}
to_results "$REPORTS" "$COMPAT_WORK/results.json"

# A listed-flaky test that failed runs once more, alone (compat_retry_flaky); failing twice fails the suite.
rerun() { # retry.json Class.method...
    local out=$1 id sel=()
    shift
    for id in "$@"; do
        sel+=("${id%%.*}#${id#*.}")
    done
    (cd "$HERE" && timeout 1800 mvn -B -o test -Dmaven.test.failure.ignore=true \
        -Dpaddock.reportsDir="$COMPAT_WORK/retry-reports" "${PROPS[@]}" -Dtest="$(IFS=,; echo "${sel[*]}")") \
        >"$COMPAT_WORK/mvn-retry.out" 2>&1
    grep -E 'Tests run:.*-- in ' "$COMPAT_WORK/mvn-retry.out" || tail -n 20 "$COMPAT_WORK/mvn-retry.out"
    to_results "$COMPAT_WORK/retry-reports" "$out" "$@"
}
retry_flags=()
[[ "$TARGET" != zookeeper ]] || retry_flags+=(--harness-only)
compat_retry_flaky "$COMPAT_WORK/results.json" "$HERE/KNOWN_FAILURES" "$COMPAT_WORK/retry.json" rerun "${retry_flags[@]}"
flags=()
((WHOLE == 0)) || flags+=(--whole)
[[ "$TARGET" != zookeeper ]] || flags+=(--harness-only)
[[ ! -f "$COMPAT_WORK/retry.json" ]] || flags+=(--retried "$COMPAT_WORK/retry.json")
compat_judge "$COMPAT_WORK/results.json" "$HERE/KNOWN_FAILURES" "${flags[@]}"
passed=$JUDGED_PASSED failed=$JUDGED_FAILED skipped=$JUDGED_SKIPPED
# A run that died (timeout, crash) before reporting anything has not passed.
if ((passed + failed + skipped == 0)); then failed=1; fi
if [[ $rc -ne 0 ]] && ((failed == 0)); then
    echo "curator-recipes: mvn failed without a failing test (exit $rc)" >&2
    failed=1
fi
report "$passed" "$failed" "$skipped"
((failed == 0))
