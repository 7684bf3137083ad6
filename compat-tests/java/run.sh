#!/usr/bin/env bash
# Java client compat suite: starts a server on a free loopback port with a fresh data dir, runs the Maven
# JUnit tests in compat-tests/java (Curator 5.9 recipes, zkCli 3.9.5 scripted and through tmux) against
# it with ZK_HOSTS=127.0.0.1:<port>, stops the server, and prints `java | passed | failed | skipped`
# (from the surefire reports) as its last line. Against paddock, a full run then runs the zkCli script
# tests again through a follower of a 3-member paddock ensemble (start_paddock_ensemble in lib.sh).
#
#   compat-tests/java/run.sh                        against paddock ($CARGO_TARGET_DIR/debug/paddock, built first)
#   compat-tests/java/run.sh --against-zookeeper    against Apache ZooKeeper 3.9 (scripts/zookeeper.sh): every
#                                                   test must pass there, which is what proves the test right
#   compat-tests/java/run.sh [...] -- <mvn args>    e.g. -- -Dtest=ZkCliScriptTest
#
# Both servers run with TTL nodes enabled, the same super digest (super:test), hard quotas enforced
# (zookeeper.enforceQuota=true), and a 1 s container/TTL check interval (ZooKeeper's default is 60 s), so
# the TTL and container tests finish quickly.
# Maven runs offline (-o) once the local repository holds the dependencies; the first run resolves them
# online (dependency:go-offline plus a no-test surefire run, which fetches the JUnit provider).
# PADDOCK_BIN overrides the binary (no build then). KEEP_WORK=1 keeps the temp dir (server log).
# Exit status: 0 only if tests ran and all passed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$COMPAT_LIB_DIR/java"
SUPER_DIGEST='super:D/InIHSb7yEEbrWz8b9l71RjZJU='
CHECK_MS=1000
compat_init java
compat_args "$@"

command -v mvn >/dev/null || compat_fail "mvn not found (scripts/install-deps.sh installs maven)"
command -v java >/dev/null || compat_fail "java not found (scripts/install-deps.sh installs openjdk-17-jdk-headless)"

# Online resolution only when the offline build cannot even compile and start surefire.
if ! (cd "$HERE" && mvn -q -B -o test -Dtest=NoSuchTest -Dsurefire.failIfNoSpecifiedTests=false) >/dev/null 2>&1; then
    echo "run.sh: resolving Maven dependencies online (first run)" >&2
    (cd "$HERE" && mvn -q -B dependency:go-offline && \
        mvn -q -B test -Dtest=NoSuchTest -Dsurefire.failIfNoSpecifiedTests=false) >&2
fi

PORT="$(free_port)"
if [[ "$TARGET" == zookeeper ]]; then
    ZK_JVMFLAGS="-Dznode.container.checkIntervalMs=$CHECK_MS -Dzookeeper.enforceQuota=true -Dzookeeper.DigestAuthenticationProvider.superDigest=$SUPER_DIGEST" \
        start_zookeeper zk "$PORT" || compat_fail "ZooKeeper did not start"
else
    start_paddock paddock "$PORT" "$COMPAT_WORK/data" --extended-types --super-digest "$SUPER_DIGEST" \
        -D "znode.container.checkIntervalMs=$CHECK_MS" -D zookeeper.enforceQuota=true ||
        compat_fail "paddock did not start"
fi

REPORTS="$HERE/target/surefire-reports"
rm -rf "$REPORTS"
set +e
(cd "$HERE" && ZK_HOSTS="127.0.0.1:$PORT" ZK_TARGET="$TARGET" mvn -q -B -o test "${PASS_ARGS[@]}")
rc=$?
set -e

shopt -s nullglob
reports=("$REPORTS"/TEST-*.xml)
shopt -u nullglob
read -r passed failed skipped < <(compat_junit_counts "${reports[@]}")

# The zkCli script tests once more, through a follower of a 3-member paddock ensemble (a full run only):
# every write forwarded to the leader, every read and watch served by the follower. syncAndConfigInStandalone
# is left out: it asserts the standalone (empty) `config`.
if [[ "$TARGET" == paddock && ${#PASS_ARGS[@]} -eq 0 ]]; then
    stop_paddock paddock
    start_paddock_ensemble 3 member --extended-types --super-digest "$SUPER_DIGEST" \
        -D "znode.container.checkIntervalMs=$CHECK_MS" -D zookeeper.enforceQuota=true ||
        compat_fail "the 3-member paddock ensemble did not start"
    follower=$((ENSEMBLE_LEADER % 3 + 1))
    echo "run.sh: zkCli script tests through member $follower (follower; leader is member $ENSEMBLE_LEADER)"
    mv "$REPORTS" "$COMPAT_WORK/reports-standalone"
    set +e
    (cd "$HERE" && ZK_HOSTS="127.0.0.1:${ENSEMBLE_PORTS[follower - 1]}" ZK_TARGET="$TARGET" mvn -q -B -o test \
        '-Dtest=ZkCliScriptTest,!ZkCliScriptTest#syncAndConfigInStandalone')
    frc=$?
    set -e
    shopt -s nullglob
    reports=("$REPORTS"/TEST-*.xml)
    shopt -u nullglob
    read -r fpassed ffailed fskipped < <(compat_junit_counts "${reports[@]}")
    if [[ $frc -ne 0 && $ffailed -eq 0 ]]; then ffailed=1; fi
    ((fpassed + ffailed > 0)) || { ffailed=1; frc=1; }
    echo "run.sh: through a follower: $fpassed passed, $ffailed failed, $fskipped skipped"
    if [[ $frc -ne 0 ]]; then
        echo "run.sh: member logs are $COMPAT_WORK/member{1,2,3}.log (KEEP_WORK=1 keeps them); last lines of the follower's:" >&2
        tail -n 30 "$COMPAT_WORK/member$follower.log" >&2 || true
        rc=$frc
    fi
    passed=$((passed + fpassed)) failed=$((failed + ffailed)) skipped=$((skipped + fskipped))
fi
# A run that failed before any test reported (compile error, server gone) has not passed.
if [[ $rc -ne 0 && $failed -eq 0 ]]; then failed=1; fi
if ((passed + failed == 0)); then failed=1; rc=1; fi
if [[ $rc -ne 0 && "$TARGET" == paddock ]]; then
    echo "run.sh: paddock log (last 30 lines):" >&2
    tail -n 30 "$COMPAT_WORK/paddock.log" >&2 || true
fi
((skipped == 0)) || report_skip "$skipped" "skipped by JUnit (see the surefire reports)"
report "$passed" "$failed" "$skipped"
[[ $rc -eq 0 ]]
