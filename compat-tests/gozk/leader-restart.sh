#!/usr/bin/env bash
# Shows TestIntegration_DNSHostProviderReconnect's race against any server: leader-restart/main.go, run
# RUNS times against a 3-member ensemble (scripts/ensemble.sh), counts Create's outcome by the mode of the
# member that was restarted. Not part of run.sh: the evidence behind that test's KNOWN_FAILURES entry.
#
#   compat-tests/gozk/leader-restart.sh [--zookeeper] [--runs N]    (default: paddock, 8 runs)
#
# PADDOCK_BIN picks the paddock binary (else scripts/ensemble.sh builds a release one).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
KIND=() RUNS=8 # KIND: (--zookeeper) or ()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --zookeeper) KIND=(--zookeeper) ;;
        --runs) RUNS=$2; shift ;;
        *) echo "leader-restart.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
    shift
done
W="$(mktemp -d "${TMPDIR:-/tmp}/paddock-leader-restart.XXXXXX")"
trap 'bash "$ROOT/scripts/ensemble.sh" stop --dir "$W/ens" --wipe >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
bash "$ROOT/scripts/ensemble.sh" start 3 "${KIND[@]}" --dir "$W/ens" >/dev/null 2>&1
# The timing of go-zookeeper's test servers (server_java_test.go): tickTime 500, initLimit 10, syncLimit 5.
bash "$ROOT/scripts/ensemble.sh" stop --dir "$W/ens" >/dev/null 2>&1
sed -i 's/^tickTime=.*/tickTime=500/; s/^initLimit=.*/initLimit=10/; s/^syncLimit=.*/syncLimit=5/' "$W"/ens/m*/zoo.cfg
HOSTS="$(bash "$ROOT/scripts/ensemble.sh" start 3 "${KIND[@]}" --dir "$W/ens" 2>/dev/null)"
(cd "$HERE" && go build -o "$W/leader-restart" ./leader-restart)
# RESTART PORT: the member's mode, then SIGKILL and a start in the background (as the test's Stop/Start).
cat >"$W/restart.sh" <<'SH'
#!/usr/bin/env bash
for k in 1 2 3; do
    grep -qx "clientPort=$1" "$W/ens/m$k/zoo.cfg" && break
done
mode=$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1; printf srvr >&3; cat <&3" | sed -n 's/^Mode: //p')
kill -9 "$(cat "$W/ens/m$k/server.pid")"
sleep 0.2
setsid bash "$ROOT/scripts/ensemble.sh" start 3 $KIND_FLAG --dir "$W/ens" >/dev/null 2>&1 &
echo "member $k was $mode"
SH
KIND_FLAG="${KIND[*]}"
export W ROOT KIND_FLAG
chmod +x "$W/restart.sh"
for ((i = 1; i <= RUNS; i++)); do
    line="$("$W/leader-restart" "$HOSTS" "$W/restart.sh" 2>/dev/null || true)"
    echo "run $i: $line"
    # Let the restarted member rejoin and an election settle before the next run.
    until bash "$ROOT/scripts/ensemble.sh" status --dir "$W/ens" >/dev/null 2>&1; do sleep 1; done
    sleep 2
done
