#!/usr/bin/env bash
# THE test command: installs dependencies, builds the workspace from the committed Cargo.lock, runs every
# Rust test, then the whole compatibility suite (compat-tests/run.sh: real clients against servers each
# suite starts itself, and back-to-back runs against Apache ZooKeeper), then a smoke of bench/compare.sh
# (seconds per workload: it keeps the benchmark working, it measures nothing) and of the lock shoot-out
# (bench/locks/run.sh --smoke: paddock, etcd and Redis, with its kill -9 test). Needs no running services
# (CI=true works): every server is started on a free loopback port and stopped on exit.
#
# Ends with one `<suite>: N passed, N failed[, N skipped]` line per suite (tests: cargo's tests, a suite's
# checks or a client's own tests, b2b's sequences), the operations b2b compared (not tests: counted apart),
# every listed-flaky test that failed once and ran again, the reasons for skips, and
# `overall: N tests passed, N failed; N back-to-back operations compared, N mismatches`; exits non-zero
# if any step failed. Its logs (cargo's, the benchmark
# smoke's) go to a fresh folder under $TMPDIR, removed when everything passed (KEEP_WORK=1 keeps it) and
# kept, with its path printed, when anything failed: a passing run leaves nothing behind.
#
#   scripts/test.sh            everything (what CI runs)
#   scripts/test.sh --quick    the inner loop, a few minutes: build, cargo's tests, paddock's own kazoo suite
#                              and a short back-to-back run against ZooKeeper (2,000 ops and 500 from a
#                              fresh seed); no other suite, no benchmark smoke
set -uo pipefail

QUICK=0
for arg in "$@"; do
    case "$arg" in
        --quick) QUICK=1 ;;
        *) echo "test.sh: unknown option '$arg' (scripts/test.sh [--quick])" >&2; exit 2 ;;
    esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/paddock-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

LOG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/paddock-test.XXXXXX")"
status=0
summary=()
total_passed=0
total_failed=0
ops_compared=0
ops_mismatched=0
ops_lines=()
retried_lines=()

note() { printf '\n==> %s\n' "$*"; }
# 20000 -> 20,000
thousands() { sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta' <<<"$1"; }
# A suite's `<suite>: operations: N compared, M mismatches` line (compat-tests/lib.sh's report_ops): counted
# apart from the tests.
record_ops() { # line
    local line=$1 n m
    n="$(sed -n 's/.*: operations: \([0-9]*\) compared, \([0-9]*\) mismatches$/\1/p' <<<"$line")"
    m="$(sed -n 's/.*: operations: \([0-9]*\) compared, \([0-9]*\) mismatches$/\2/p' <<<"$line")"
    [[ -n "$n" && -n "$m" ]] || return 0
    ops_lines+=("${line#"${line%%[! ]*}"}")
    ops_compared=$((ops_compared + n))
    ops_mismatched=$((ops_mismatched + m))
    [[ "$m" -eq 0 ]] || status=1
}
record() { # suite passed failed
    summary+=("$1: $2 passed, $3 failed")
    total_passed=$((total_passed + $2))
    total_failed=$((total_failed + $3))
    [[ "$3" -eq 0 ]] || status=1
}

note "installing dependencies"
if ! bash scripts/install-deps.sh; then
    echo "test.sh: scripts/install-deps.sh failed" >&2
    record install-deps 0 1
fi

note "cargo build --workspace --locked"
if ! cargo build --workspace --locked; then
    echo "test.sh: the workspace does not build (or Cargo.lock is out of date)" >&2
    record build 0 1
fi

note "cargo test --workspace"
# Sums the `test result:` lines (one per unit, integration and doc test binary) of a cargo test log.
count_results() {
    awk '
        /^test result:/ {
            for (i = 1; i <= NF; i++) {
                if ($(i+1) ~ /^passed/) p += $i
                if ($(i+1) ~ /^failed/) f += $i
            }
        }
        END { print p + 0, f + 0 }' "$1"
}
cargo test --workspace --no-fail-fast 2>&1 | tee "$LOG_DIR/cargo-test.log"
cargo_rc=${PIPESTATUS[0]}
read -r cargo_passed cargo_failed < <(count_results "$LOG_DIR/cargo-test.log")
# Named again in the summary: a failed test, its panic line, and a test binary that died.
mapfile -t cargo_failures < <(grep -E '^test .* \.\.\. FAILED$|panicked at|^  process didn.t exit|Assertion .* failed' \
    "$LOG_DIR/cargo-test.log" | head -n 20)
if [[ "$cargo_rc" -ne 0 ]] && ! grep -q '^test result:' "$LOG_DIR/cargo-test.log"; then
    # One crate's tests not compiling stops the whole workspace run before any test runs. Run each
    # package alone so the others' results still count, and count each package that fails to build.
    echo "test.sh: the workspace tests did not build; running each package on its own" >&2
    cargo_passed=0
    cargo_failed=0
    for pkg in $(cargo metadata --no-deps --format-version 1 |
        python3 -c 'import json, sys; print(" ".join(p["name"] for p in json.load(sys.stdin)["packages"]))'); do
        note "cargo test -p $pkg"
        cargo test -p "$pkg" --no-fail-fast 2>&1 | tee "$LOG_DIR/cargo-test-$pkg.log"
        rc=${PIPESTATUS[0]}
        read -r p f < <(count_results "$LOG_DIR/cargo-test-$pkg.log")
        if [[ "$rc" -ne 0 && "$f" -eq 0 ]]; then
            echo "test.sh: cargo test -p $pkg exited $rc without a failed test (it did not build)" >&2
            f=1
        fi
        cargo_passed=$((cargo_passed + p))
        cargo_failed=$((cargo_failed + f))
    done
elif [[ "$cargo_rc" -ne 0 && "$cargo_failed" -eq 0 ]]; then
    echo "test.sh: cargo test exited $cargo_rc without a failed test" >&2
    cargo_failed=1
fi
record cargo "$cargo_passed" "$cargo_failed"

if [[ "$QUICK" -eq 1 ]]; then
    # The quick tier: two suites run directly (their last line is the lib.sh row), the b2b run short.
    for suite in "kazoo" "b2b --ops 2000"; do
        name="${suite%% *}" args="${suite#"$name"}"
        note "compat-tests/$name (quick)"
        # shellcheck disable=SC2086
        PADDOCK_BIN="$CARGO_TARGET_DIR/debug/paddock" bash "compat-tests/$name/run.sh" $args 2>&1 |
            tee "$LOG_DIR/$name.log"
        row="$(awk -F'|' 'NF == 4 && $2 ~ /^ *[0-9]+ *$/' "$LOG_DIR/$name.log" | tail -n1)"
        if [[ -z "$row" ]]; then
            echo "test.sh: compat-tests/$name printed no result row" >&2
            record "$name" 0 1
        else
            IFS='|' read -r _ p f _ <<<"$row"
            record "$name" "${p// /}" "${f// /}"
        fi
        ops_line="$(grep -E "^$name: operations: [0-9]+ compared, [0-9]+ mismatches\$" "$LOG_DIR/$name.log" | tail -n1)"
        [[ -z "$ops_line" ]] || record_ops "$ops_line"
        while IFS= read -r line; do
            retried_lines+=("$line")
        done < <(grep -E "^$name: retried " "$LOG_DIR/$name.log")
    done
else
    note "compatibility suite (compat-tests/run.sh)"
    # It builds nothing new (PADDOCK_BIN is the binary built above) and writes its table, with a reason for
    # every skip, to compat-tests/results.txt; every row of that table joins the summary here.
    rm -f compat-tests/results.txt
    PADDOCK_BIN="$CARGO_TARGET_DIR/debug/paddock" bash compat-tests/run.sh
    compat_rc=$?
    compat_rows=0
    if [[ -f compat-tests/results.txt ]]; then
        while IFS='|' read -r name p f s; do
            name="${name// /}"
            summary+=("$name: ${p// /} passed, ${f// /} failed, ${s// /} skipped")
            total_passed=$((total_passed + p))
            total_failed=$((total_failed + f))
            [[ "${f// /}" -eq 0 ]] || status=1
            compat_rows=$((compat_rows + 1))
        done < <(awk -F'|' 'NR > 1 && NF == 4 && $2 ~ /^ *[0-9]+ *$/' compat-tests/results.txt)
        while IFS= read -r line; do
            record_ops "$line"
        done < <(grep -E '^  [a-z0-9@-]+: operations: [0-9]+ compared, [0-9]+ mismatches$' compat-tests/results.txt)
        while IFS= read -r line; do
            retried_lines+=("${line#  }")
        done < <(grep -E '^  [a-z0-9@-]+: retried ' compat-tests/results.txt)
        skipped_lines="$(sed -n '/^\(failed\|skipped\), and why:/,$p' compat-tests/results.txt)"
    fi
    if [[ "$compat_rc" -ne 0 ]]; then
        status=1
        if [[ "$compat_rows" -eq 0 ]]; then
            echo "test.sh: compat-tests/run.sh exited $compat_rc with no table" >&2
            record compat 0 1
        fi
    fi

    note "benchmark smoke (bench/compare.sh --smoke)"
    # Not a benchmark: about a second per workload against paddock and ZooKeeper, pinned, to keep compare.sh
    # working; it starts and stops its own servers and passes when every run was correct and every cell of
    # its table was produced. The debug binaries built above are enough for that.
    if timeout 600 bash bench/compare.sh --smoke --bin-dir "$CARGO_TARGET_DIR/debug" --out "$LOG_DIR/bench-smoke" \
        >"$LOG_DIR/bench-smoke.log" 2>&1; then
        record bench-smoke 1 0
    else
        echo "test.sh: bench/compare.sh --smoke failed; its output:" >&2
        tail -n 40 "$LOG_DIR/bench-smoke.log" >&2
        record bench-smoke 0 1
    fi

    note "lock shoot-out smoke (bench/locks/run.sh --smoke)"
    # Not a benchmark either: 1 s per cell against paddock, etcd and Redis, and the kill -9 test, which must
    # find paddock's lock kept and the lock of a Redis without an AOF lost (about a minute).
    if timeout 600 bash bench/locks/run.sh --smoke --bin-dir "$CARGO_TARGET_DIR/debug" --out "$LOG_DIR/locks-smoke" \
        >"$LOG_DIR/locks-smoke.log" 2>&1; then
        record locks-smoke 1 0
    else
        echo "test.sh: bench/locks/run.sh --smoke failed; its output:" >&2
        tail -n 40 "$LOG_DIR/locks-smoke.log" >&2
        record locks-smoke 0 1
    fi
fi

note "summary"
for line in "${summary[@]}"; do
    echo "$line"
done
if [[ ${#cargo_failures[@]} -gt 0 ]]; then
    echo "cargo failures:"
    printf '  %s\n' "${cargo_failures[@]:0:20}"
fi
if [[ ${#ops_lines[@]} -gt 0 ]]; then
    echo "operations compared (not tests):"
    printf '  %s\n' "${ops_lines[@]}"
fi
if [[ ${#retried_lines[@]} -gt 0 ]]; then
    echo "retried (listed flaky, failed once, ran again):"
    printf '  %s\n' "${retried_lines[@]}"
fi
[[ -z "${skipped_lines:-}" ]] || echo "$skipped_lines"
echo "overall: $(thousands "$total_passed") tests passed, $(thousands "$total_failed") failed;" \
    "$(thousands "$ops_compared") back-to-back operations compared, $(thousands "$ops_mismatched") mismatches"
if [[ "$status" -eq 0 && -z "${KEEP_WORK:-}" ]]; then
    rm -rf "$LOG_DIR"
else
    echo "logs kept in $LOG_DIR"
fi
exit "$status"
