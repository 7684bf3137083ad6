#!/usr/bin/env bash
# THE test command: installs dependencies, builds the workspace from the committed Cargo.lock, runs every
# Rust test, then the compat suites (kazoo, and the Java clients when compat-tests/java exists) against a
# paddock each starts itself. Needs no running services
# (CI=true works): every server is started on a free loopback port and stopped on exit.
#
# Ends with one `<suite>: N passed, N failed` line per suite and `overall: N passed, N failed`; exits
# non-zero if any step failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/paddock-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

LOG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/paddock-test.XXXXXX")"
status=0
summary=()
total_passed=0
total_failed=0

note() { printf '\n==> %s\n' "$*"; }
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

note "compat smoke (compat-tests/run.sh)"
bash compat-tests/run.sh
compat_rc=$?
compat_passed=0
compat_failed=0
if [[ -f compat-tests/results.txt ]]; then
    # Row: `kazoo | <passed> | <failed> | <skipped>`
    read -r compat_passed compat_failed < <(awk -F'|' '
        $1 ~ /^ *kazoo *$/ { gsub(/ /, ""); p = $2; f = $3 }
        END { print p + 0, f + 0 }' compat-tests/results.txt)
fi
if [[ "$compat_rc" -ne 0 && "$compat_failed" -eq 0 ]]; then
    echo "test.sh: compat-tests/run.sh exited $compat_rc" >&2
    compat_failed=1
fi
record compat "$compat_passed" "$compat_failed"

# The other compat suites. Each runner ends with a `<row> | passed | failed | skipped` line and
# exits non-zero on any failure it does not list as known. kazoo-suite and gozk count their
# known failures (documented gaps, e.g. no ensemble yet, no SASL) in `failed` but exit 0 for
# them: those are reported on their own line, not as failures of this run.
known_total=0
run_suite() { # label row-name script [args...]
    local label=$1 row=$2 script=$3
    shift 3
    note "$label ($script)"
    bash "$script" "$@" 2>&1 | tee "$LOG_DIR/$label.log"
    local rc=${PIPESTATUS[0]} p f
    read -r p f < <(awk -F'|' -v row="$row" '
        { name = $1; gsub(/ /, "", name) }
        name == row && $2 ~ /[0-9]/ { gsub(/ /, ""); pp = $2; ff = $3 }
        END { print pp + 0, ff + 0 }' "$LOG_DIR/$label.log")
    if [[ "$rc" -eq 0 ]]; then
        if [[ "$f" -ne 0 ]]; then
            summary+=("$label: $f known failures (listed in its KNOWN_FAILURES)")
            known_total=$((known_total + f))
        fi
        f=0
    elif [[ "$f" -eq 0 ]]; then
        echo "test.sh: $script exited $rc" >&2
        f=1
    fi
    record "$label" "$p" "$f"
}

[[ -f compat-tests/java/run.sh ]] && run_suite java java compat-tests/java/run.sh
[[ -f compat-tests/b2b/run.sh ]] && run_suite b2b b2b compat-tests/b2b/run.sh
[[ -f compat-tests/kazoo-suite/run.sh ]] && run_suite kazoo-suite kazoo-suite compat-tests/kazoo-suite/run.sh
[[ -f compat-tests/gozk/run.sh ]] && run_suite gozk gozk compat-tests/gozk/run.sh

note "summary"
for line in "${summary[@]}"; do
    echo "$line"
done
echo "overall: $total_passed passed, $total_failed failed"
exit "$status"
