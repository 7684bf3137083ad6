#!/usr/bin/env bash
# Stand-in for ZooKeeper's bin/zkServer.sh, used by go-zookeeper's tests through ZOOKEEPER_BIN_PATH
# (server_java_test.go: `zkServer.sh start-foreground <zoo.cfg>`, stopped by SIGKILL of the PID it started,
# so this script must `exec` paddock rather than run it as a child).
#
# SERVER_JVMFLAGS carries JVM system properties (-Dzookeeper.DigestAuthenticationProvider.superDigest=...,
# -Dzookeeper.extendedTypesEnabled=true, -Dzookeeper.emulate353TTLNodes=true). Each -Dkey=value becomes
# paddock's `-D key=value`; other JVM options are dropped. paddock logs and ignores keys it does not know.
#
# Needs PADDOCK_BIN (the paddock binary).
set -uo pipefail

: "${PADDOCK_BIN:?zkServer.sh shim: PADDOCK_BIN must name the paddock binary}"

if [[ "${1:-}" != start-foreground || -z "${2:-}" ]]; then
    echo "zkServer.sh shim: only 'start-foreground <zoo.cfg>' is supported (got: $*)" >&2
    exit 2
fi
cfg="$2"

props=()
# Word splitting is wanted here: SERVER_JVMFLAGS is a space-separated JVM command-line fragment.
# shellcheck disable=SC2086
for flag in ${SERVER_JVMFLAGS:-}; do
    case "$flag" in
        -D*) props+=(-D "${flag#-D}") ;;
        *) ;;
    esac
done

# A config with server.N lines (the 3-node tests) makes each process a real paddock ensemble member.
exec "$PADDOCK_BIN" serve --config "$cfg" "${props[@]}" </dev/null
