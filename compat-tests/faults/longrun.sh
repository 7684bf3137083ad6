#!/usr/bin/env bash
# The long run (issue 9): run.sh over and over in segments, seeds BASE+1, BASE+2, ..., every nemesis and
# workload, until a number of segments or a clock time; then one table over all segments
# (`faults summarize`). Segments keep each history, and so the checkers' memory, bounded; the same seeds
# for two targets give them the same nemesis schedules.
#
#   compat-tests/faults/longrun.sh --target paddock|zookeeper --nodes 3|5 [--slot S] [--out DIR]
#       [--segments K | --until HH:MM] [--segment-time SECONDS] [--seed-base BASE] [-- RUN.SH ARGS...]
#
# Defaults: --segments 10, --segment-time 900, --seed-base 1000, --out /tmp/paddock-faults/long-<target>-n<N>,
# and `--hold 3s --quiet 2s --quorum-tls` passed to run.sh (the CI run's holds, more cycles an hour, and its
# quorum TLS) unless run.sh args are given. With --until, a segment starts only if it can end (its time
# plus 3 minutes) before then. Every nemesis includes the disk ones: each segment runs its members under
# the power-loss shim and on loop-mounted disks of their own, set up and removed by its run.sh.
# A segment that passes keeps its history, timeline and member logs, not the members' data or the shim's
# copies of it (disk); one that fails keeps everything. Exit status 1 if any segment found a violation or
# gave no verdict.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

TARGET=paddock NODES=3 SLOT=0 OUT="" SEGMENTS=10 UNTIL="" SEGTIME=900 BASE=1000
RUNARGS=(--hold 3s --quiet 2s --quorum-tls)
while [[ $# -gt 0 ]]; do
    case "$1" in
        --target) TARGET=$2; shift ;;
        --nodes) NODES=$2; shift ;;
        --slot) SLOT=$2; shift ;;
        --out) OUT=$2; shift ;;
        --segments) SEGMENTS=$2; shift ;;
        --until) UNTIL=$2; shift ;;
        --segment-time) SEGTIME=$2; shift ;;
        --seed-base) BASE=$2; shift ;;
        --) shift; RUNARGS=("$@"); break ;;
        -h | --help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "longrun.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ "$SEGMENTS" =~ ^[0-9]+$ && "$SEGTIME" =~ ^[0-9]+$ && "$BASE" =~ ^[0-9]+$ ]] \
    || { echo "longrun.sh: --segments, --segment-time and --seed-base are numbers" >&2; exit 2; }
end=""
if [[ -n "$UNTIL" ]]; then
    end=$(date -d "$UNTIL" +%s) || { echo "longrun.sh: --until '$UNTIL' is not a time" >&2; exit 2; }
    SEGMENTS=100000
fi
OUT="${OUT:-/tmp/paddock-faults/long-$TARGET-n$NODES}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
(cd "$HERE" && go build -o "$OUT/faults" .) || { echo "longrun.sh: the driver does not build" >&2; exit 2; }

dirs=()
for i in $(seq 1 "$SEGMENTS"); do
    if [[ -n "$end" ]] && (( $(date +%s) + SEGTIME + 180 > end )); then break; fi
    seed=$((BASE + i)) dir="$OUT/seg-$i-s$((BASE + i))"
    echo "longrun: $(date -u +%H:%M:%S) segment $i, seed $seed -> $dir"
    if "$HERE/run.sh" --target "$TARGET" --nodes "$NODES" --slot "$SLOT" --time "$SEGTIME" --nemesis all \
        --workload all --seed "$seed" --out "$dir" "${RUNARGS[@]}" >"$dir.log" 2>&1; then
        rm -rf "$dir"/n*/data "$dir"/n*/shadow
    fi
    tail -n 1 "$dir.log"
    dirs+=("$dir")
done
[[ ${#dirs[@]} -gt 0 ]] || { echo "longrun.sh: no time for a single segment" >&2; exit 2; }
"$OUT/faults" summarize "${dirs[@]}" | tee "$OUT/summary.txt"
