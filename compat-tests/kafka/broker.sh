#!/usr/bin/env bash
# Starts a Kafka broker of the kafka compat suite in the background and records its PID, so that run.sh's
# EXIT trap can kill it whoever started it (run.sh, or the checker program when it restarts a broker).
#
#   broker.sh NAME      (environment: KAFKA_WORK, the suite's work directory; NAME e.g. broker-0)
#
# Reads $KAFKA_WORK/NAME/server.properties and $KAFKA_WORK/classpath.txt; appends the broker's output
# to $KAFKA_WORK/NAME.log and writes its PID to $KAFKA_WORK/NAME.pid. Small heap and C1 only:
# two brokers, a checker and a server share 2 cores.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name=$1
: "${KAFKA_WORK:?KAFKA_WORK must name the suite work directory}"
echo "=== broker.sh start $(date '+%F %T.%3N')" >>"$KAFKA_WORK/$name.log"
# BROKER_JVM_FLAGS: the secured runs' JAAS and Kerberos settings (run.sh exports them, so a broker the
# checker restarts gets them too).
# shellcheck disable=SC2086
java -Xms64m -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 ${BROKER_JVM_FLAGS:-} \
    -Dlog4j.configuration="file:$HERE/log4j.properties" \
    -cp "$(cat "$KAFKA_WORK/classpath.txt")" kafka.Kafka "$KAFKA_WORK/$name/server.properties" \
    >>"$KAFKA_WORK/$name.log" 2>&1 </dev/null &
echo $! >"$KAFKA_WORK/$name.pid"
