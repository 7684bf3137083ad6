#!/usr/bin/env bash
# The compatibility suite, all of it, in one command (scripts/test.sh calls it; it also runs alone):
# installs what it needs, builds paddock once, runs every suite below against servers each suite starts
# on free loopback ports (and stops), and prints the table `suite | passed | failed | skipped` (tests) with a
# reason for every skip, every flaky test that was run again, and the operations the back-to-back suite
# compared (not tests: counted apart), to stdout and to compat-tests/results.txt.
#
#   compat-tests/run.sh                       every suite
#   compat-tests/run.sh --only kazoo,b2b      just those (names as in SUITES below)
#   compat-tests/run.sh --skip kafka          all but those
#
# A suite is compat-tests/<name>/run.sh following compat-tests/lib.sh's contract. Known failures (listed
# in a suite's KNOWN_FAILURES: features paddock does not have yet) count as skipped, with the reason.
# Exit status: 0 only if every suite ran tests and none failed. PADDOCK_BIN overrides the binary.
# The suites' logs go to a fresh folder under $TMPDIR; it is removed when every suite passed (KEEP_WORK=1
# keeps it) and kept, with its path printed, when one failed.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/paddock-target}"
RESULTS="$HERE/results.txt"

# Order: quick, broad checks first, so a broken server shows up in seconds; the long suites last.
SUITES=(kazoo reconfig-answers session-moved containers rolling-restart java c-client node rust-client locks b2b gozk docker metrics security kerberos migration kazoo-suite curator-recipes kafka kafka-mtls faults)
# A suite run with options of its own: name -> "directory options" (its row carries the name).
declare -A VARIANTS=([kafka-mtls]="kafka --secure mtls")
ONLY=""
SKIP=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --only) ONLY=",$2,"; shift ;;
        --skip) SKIP=",$2,"; shift ;;
        *) echo "run.sh: unknown option '$1' (see the header of $0)" >&2; exit 2 ;;
    esac
    shift
done

LOGS="$(mktemp -d "${TMPDIR:-/tmp}/paddock-compat.XXXXXX")"
status=0
rows=()
skips=()
fails=()
ops=()
retries=()

if ! bash "$ROOT/scripts/install-deps.sh"; then
    echo "run.sh: scripts/install-deps.sh failed" >&2
    status=1
fi
if [[ -z "${PADDOCK_BIN:-}" ]]; then
    (cd "$ROOT" && cargo build -q -p paddock) || { echo "run.sh: paddock does not build" >&2; exit 1; }
    export PADDOCK_BIN="$CARGO_TARGET_DIR/debug/paddock"
fi
echo "run.sh: paddock binary $PADDOCK_BIN; suite logs in $LOGS"

for suite in "${SUITES[@]}"; do
    [[ -z "$ONLY" || "$ONLY" == *",$suite,"* ]] || continue
    [[ "$SKIP" != *",$suite,"* ]] || continue
    read -r dir variant_args <<<"${VARIANTS[$suite]:-$suite}"
    script="$HERE/$dir/run.sh"
    if [[ ! -f "$script" ]]; then
        echo "run.sh: no $script" >&2
        rows+=("$suite | 0 | 1 | 0")
        status=1
        continue
    fi
    printf '\n==> %s (%s)\n' "$suite" "${script#"$ROOT"/}"
    start=$SECONDS
    # shellcheck disable=SC2086
    bash "$script" ${variant_args:-} 2>&1 | tee "$LOGS/$suite.log"
    rc=${PIPESTATUS[0]}
    # The row is the last line naming the suite with three numbers; the skip reasons precede it.
    row="$(grep -E "^$suite \\| [0-9]+ \\| [0-9]+ \\| [0-9]+\$" "$LOGS/$suite.log" | tail -n 1)"
    if [[ -z "$row" ]]; then
        echo "run.sh: $suite printed no result row (exit status $rc)" >&2
        row="$suite | 0 | 1 | 0"
    elif [[ $rc -ne 0 ]] && [[ "$(awk -F' [|] ' '{print $3}' <<<"$row")" == 0 ]]; then
        echo "run.sh: $suite exited $rc without a failed test" >&2
        row="$(awk -F' [|] ' -v OFS=' | ' '{$3 = 1; print}' <<<"$row")"
    fi
    [[ $rc -eq 0 ]] || status=1
    rows+=("$row")
    while IFS= read -r line; do
        skips+=("$line")
    done < <(grep -E "^$suite: skipped [0-9]+: " "$LOGS/$suite.log")
    # Operations compared (b2b) are not tests: their own section, never a row's count.
    while IFS= read -r line; do
        ops+=("$line")
    done < <(grep -E "^$suite: operations: [0-9]+ compared, [0-9]+ mismatches\$" "$LOGS/$suite.log" | tail -n 1)
    # Every listed-flaky test that failed and ran again (compat_judge's `retried` lines), pass or not.
    while IFS= read -r line; do
        retries+=("$line")
    done < <(grep -E "^$suite: retried " "$LOGS/$suite.log")
    # The judged failures (compat-tests/known_failures.py prints `FAIL <test>: <why>`), so that the
    # summary at the end of a long log names them.
    while IFS= read -r line; do
        fails+=("$suite: ${line:0:300}")
    done < <(grep -E "^FAIL " "$LOGS/$suite.log" | head -n 10)
    echo "run.sh: $suite took $((SECONDS - start)) s"
done

{
    printf '%-16s | %7s | %7s | %7s\n' suite passed failed skipped
    for row in "${rows[@]}"; do
        IFS='|' read -r name p f k <<<"$row"
        printf '%-16s | %7d | %7d | %7d\n' "${name// /}" "${p// /}" "${f// /}" "${k// /}"
    done
    if [[ ${#ops[@]} -gt 0 ]]; then
        echo
        echo "operations compared (not tests):"
        printf '  %s\n' "${ops[@]}"
    fi
    if [[ ${#retries[@]} -gt 0 ]]; then
        echo
        echo "retried (listed flaky, failed once, ran again):"
        printf '  %s\n' "${retries[@]}"
    fi
    if [[ ${#fails[@]} -gt 0 ]]; then
        echo
        echo "failed, and why:"
        printf '  %s\n' "${fails[@]}"
    fi
    if [[ ${#skips[@]} -gt 0 ]]; then
        echo
        echo "skipped, and why:"
        printf '  %s\n' "${skips[@]}"
    fi
} >"$RESULTS"
printf '\n==> compat summary (also in %s)\n' "${RESULTS#"$ROOT"/}"
cat "$RESULTS"
if [[ "$status" -eq 0 && -z "${KEEP_WORK:-}" ]]; then
    rm -rf "$LOGS"
else
    echo "run.sh: suite logs kept in $LOGS"
fi
exit "$status"
