#!/usr/bin/env bash
# kazoo 2.11.0's own test suite (kazoo.tests, 493 tests) against paddock, "Recipe B" of docs/compat.md §1:
# kazoo's harness launches the server itself, and shim/java (first on PATH) execs paddock with the zoo.cfg
# the harness wrote, so tests that stop and restart cluster[0] really stop and restart paddock.
# ZOOKEEPER_CLUSTER_SIZE=3 (KAZOO_CLUSTER_SIZE overrides): every member is a real paddock ensemble member.
#
#   compat-tests/kazoo-suite/run.sh                       build paddock (debug) if needed, run everything
#   compat-tests/kazoo-suite/run.sh -k test_lock -x       extra arguments go to pytest (a filtered run
#                                                         checks known failures only among tests that ran)
#
# Tests listed in KNOWN_FAILURES may fail without failing this script. It fails when any other test fails
# or errors, and when a listed test passes (the list must stay true). An entry marked `~` is a race in
# kazoo's own test: when it fails it runs once more, alone, and fails the suite if it fails again (each
# retry is named: `kazoo-suite: retried ...`). Every skip is printed with its reason.
# Ends with the row `kazoo-suite | passed | failed | skipped` (compat-tests/lib.sh): `failed` counts the
# unexpected failures; `skipped` counts kazoo's own skips plus the known failures (they ran, and failed
# the way KNOWN_FAILURES says), each group explained by a `skipped N: reason` line.
#
# Env: PADDOCK_BIN (skip the build), CARGO_TARGET_DIR (default ~/.cache/paddock-target),
#      KAZOO_CLUSTER_SIZE (members the harness starts; default 3),
#      KAZOO_SUITE_WORK (keep junit.xml and pytest output there; default a temp dir, removed on exit
#      unless KEEP_WORK=1).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$COMPAT_LIB_DIR/kazoo-suite"
compat_init kazoo-suite

# The venv: the repository's .venv if it already holds everything kazoo's tests import (its harness needs
# pyjks and pyOpenSSL for the TLS material it always generates, gevent/eventlet for the handler variants,
# pure_sasl for test_sasl), otherwise our own, git-ignored, in this directory. pyOpenSSL >= 26.2 lacks
# X509.add_extensions, which the harness calls.
venv_ok() {
    [[ -x "$1/bin/python" ]] && "$1/bin/python" - <<'EOF' 2>/dev/null
import importlib.metadata as m, sys
need = ["pytest", "pytest-timeout", "gevent", "eventlet", "pyjks", "pure-sasl", "objgraph"]
ok = m.version("kazoo") == "2.11.0" and all(m.version(p) for p in need)
ok = ok and tuple(int(x) for x in m.version("pyOpenSSL").split(".")[:2]) < (26, 2)
sys.exit(0 if ok else 1)
EOF
}
VENV="$ROOT/.venv"
if ! venv_ok "$VENV"; then
    VENV="$HERE/.venv"
    if ! venv_ok "$VENV"; then
        echo "kazoo-suite: installing kazoo[test,sasl]==2.11.0 into $VENV" >&2
        [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
        "$VENV/bin/python" -m pip install -q --disable-pip-version-check "kazoo[test,sasl]==2.11.0" "pyOpenSSL<26.2"
    fi
fi
PY="$VENV/bin/python"
# kazoo's GSSAPI tests (TestSASLGSSAPIAuthentication) run only with a test realm (KRB5_TEST_ENV, which
# compat-tests/kerberos sets up) and the `kerberos` package, a C extension built against libkrb5-dev.
if [[ -n "${KRB5_TEST_ENV:-}" ]] && ! "$PY" -c 'import kerberos' 2>/dev/null; then
    "$PY" -m pip install -q --disable-pip-version-check "kerberos==1.3.1" >&2
fi

BIN="$(compat_paddock_bin)" || compat_fail "could not build paddock"
[[ -x "$BIN" ]] || compat_fail "no paddock binary at $BIN"

# The harness gives server i the ports offset+10i .. +4; pick an offset whose five ports are free, so that
# runs by other people on this machine do not collide. 2181 must stay free too: test_slow_connect assumes
# nothing listens there.
OFFSET="$("$PY" - <<'EOF'
import random, socket
for _ in range(200):
    base = random.randrange(20000, 29000, 10)
    try:
        socks = []
        for p in range(base, base + 5):
            s = socket.socket(); s.bind(("127.0.0.1", p)); socks.append(s)
    except OSError:
        continue
    finally:
        for s in socks: s.close()
    print(base); break
EOF
)"
if (exec 3<>/dev/tcp/127.0.0.1/2181) 2>/dev/null; then
    echo "kazoo-suite: warning: something listens on 127.0.0.1:2181; test_utils::test_slow_connect will fail" >&2
fi

WORK="${KAZOO_SUITE_WORK:-$COMPAT_WORK}"
# Three real paddock members by default (the harness writes server.N lines and myid); 1 for standalone.
CLUSTER_SIZE="${KAZOO_CLUSTER_SIZE:-3}"
mkdir -p "$WORK"
# Every server the harness starts records "PID folder" here (shim/java). kazoo stops them and removes their
# folders itself, but not when pytest is killed (its timeout, ^C): then this trap does, so a failed run
# leaves no server and no folder behind (KEEP_WORK=1 keeps the folders).
export KAZOO_SHIM_PIDS="$WORK/shim-pids"
: >"$KAZOO_SHIM_PIDS"
stop_left_servers() {
    local pid dir left=() dirs=() i
    while read -r pid dir; do
        [[ "$pid" =~ ^[0-9]+$ ]] || continue
        [[ -d "$dir" && "$dir" == "${TMPDIR:-/tmp}"/* ]] && dirs+=("$dir")
        tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q "serve --config" && left+=("$pid")
    done <"$KAZOO_SHIM_PIDS"
    if ((${#left[@]})); then
        echo "kazoo-suite: stopping ${#left[@]} server(s) the harness left running" >&2
        kill -TERM "${left[@]}" 2>/dev/null
        for i in $(seq 1 100); do
            kill -0 "${left[@]}" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "${left[@]}" 2>/dev/null || true
    fi
    if ((${#dirs[@]})) && [[ -z "${KEEP_WORK:-}" ]]; then
        rm -rf "${dirs[@]}"
    fi
}
kazoo_suite_cleanup() {
    local rc=$?
    set +e # else (exit rc) would end the trap before compat_cleanup
    stop_left_servers
    (exit "$rc")
    compat_cleanup
}
trap kazoo_suite_cleanup EXIT

# One pytest run of kazoo's tests (ARGS: pytest's selection), its junit report in JUNIT, output in OUT.
run_pytest() { # junit.xml out args...
    local junit=$1 out=$2
    shift 2
    PATH="$HERE/shim:$PATH" PADDOCK_BIN="$BIN" \
        ZOOKEEPER_VERSION=3.9.4 ZOOKEEPER_CLASSPATH=paddock ZOOKEEPER_CLUSTER_SIZE="$CLUSTER_SIZE" ZOOKEEPER_PORT_OFFSET="$OFFSET" \
        CI=true NO_COLOR=1 PYTHONUNBUFFERED=1 \
        timeout 1200 "$PY" -m pytest --pyargs -q -rfEs --timeout=120 -p no:cacheprovider \
        -W ignore::DeprecationWarning --junitxml="$junit" "$@" >"$out" 2>&1
}

# junit.xml -> {test id: [status, message]} for compat_judge; EXPECTED ids that are not in the report are
# "noreport" (a re-run that died).
to_results() { # junit.xml results.json expected...
    "$PY" - "$@" <<'EOF'
import json, sys, xml.etree.ElementTree as ET

junit, out, *expected = sys.argv[1:]
results = {}
try:
    root = ET.parse(junit).getroot()
except (OSError, ET.ParseError) as e:
    print(f"kazoo-suite: no junit report ({e})", file=sys.stderr)
    root = ET.Element("none")
for case in root.iter("testcase"):
    # --pyargs makes classnames start with the site-packages path; keep what follows "kazoo.tests.".
    cls = case.get("classname", "")
    cls = cls[cls.find("kazoo.tests.") + len("kazoo.tests."):] if "kazoo.tests." in cls else cls
    tid = f"{cls}::{case.get('name')}"
    bad = case.find("failure") if case.find("failure") is not None else case.find("error")
    skip = case.find("skipped")
    if bad is not None:
        msg = (bad.get("message") or bad.tag).splitlines()
        results[tid] = ["fail", (msg[0] if msg else bad.tag)[:300]]
    elif skip is not None:
        results[tid] = ["skip", skip.get("message") or ""]
    else:
        results[tid] = ["pass", ""]
for tid in expected:
    results.setdefault(tid, ["noreport", ""])
json.dump(results, open(out, "w"))
EOF
}

set +e
run_pytest "$WORK/junit.xml" "$WORK/pytest.out" kazoo.tests "$@"
rc=$?
set -e
# kazoo's connection threads log reconnect chatter outside pytest's capture; show only pytest's verdicts.
grep -E '^(FAILED|ERROR|SKIPPED)|^(=+ )?[0-9]+ (passed|failed|error|skipped)' "$WORK/pytest.out" || tail -n 20 "$WORK/pytest.out"
echo "kazoo-suite: pytest exited $rc; junit and output in $WORK"
to_results "$WORK/junit.xml" "$WORK/results.json"

# A listed-flaky test that failed runs once more, alone (compat_retry_flaky); failing twice fails the suite.
# Its id `test_sasl.Class::test` is the node `kazoo.tests.test_sasl::Class::test` for --pyargs.
rerun() { # retry.json id...
    local out=$1 id nodes=()
    shift
    for id in "$@"; do
        nodes+=("kazoo.tests.${id%%.*}::${id#*.}")
    done
    run_pytest "$WORK/retry.xml" "$WORK/retry.out" "${nodes[@]}"
    grep -E '^(FAILED|ERROR)|^(=+ )?[0-9]+ (passed|failed|error)' "$WORK/retry.out" || tail -n 20 "$WORK/retry.out"
    to_results "$WORK/retry.xml" "$out" "$@"
}
compat_retry_flaky "$WORK/results.json" "$HERE/KNOWN_FAILURES" "$WORK/retry.json" rerun
whole=()
[[ $# -gt 0 ]] || whole=(--whole)
[[ ! -f "$WORK/retry.json" ]] || whole+=(--retried "$WORK/retry.json")
compat_judge "$WORK/results.json" "$HERE/KNOWN_FAILURES" "${whole[@]}"
passed=$JUDGED_PASSED failed=$JUDGED_FAILED skipped=$JUDGED_SKIPPED
# A pytest that died (timeout, crash) without failures in its report has not passed; nor has a run of nothing.
if [[ $rc -ne 0 && $rc -ne 1 ]] || ((passed + failed == 0)); then
    echo "kazoo-suite: pytest exit status $rc (interrupted, internal error or no tests collected)" >&2
    ((failed > 0)) || failed=1
fi
report "$passed" "$failed" "$skipped"
((failed == 0))
