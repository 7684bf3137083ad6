#!/usr/bin/env bash
# Back-to-back runs of seeded random op sequences against Apache ZooKeeper 3.9 and paddock (see README.md).
#
#   compat-tests/b2b/run.sh [--standalone] [--ops N] [--seed S] [--seq-len L] [--exclude op,op] [--shrink-budget SECS]
#
# Starts ZooKeeper (standalone) and a 3-member paddock ensemble on free loopback ports with temp data dirs
# (plus one ZooKeeper and one paddock with the x509 provider instead of SASL's, for acl_schemes.py);
# besides the fixed corpus (--seed, --ops) it compares a block from a fresh seed (b2b.py --fresh-ops), printed
# with the command that replays it;
# b2b.py talks to a follower of that ensemble (--standalone: one paddock server instead), runs compat-tests/b2b/b2b.py, stops them,
# prints `b2b: operations: N compared, M mismatches` and the row `b2b | passed | failed | skipped`, which
# counts sequences (tests), not operations (compat-tests/lib.sh).
# Exit status is non-zero on any mismatch. PADDOCK_BIN overrides the binary (no build then);
# KEEP_WORK=1 keeps the temp dir with both server logs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$COMPAT_LIB_DIR/b2b"
compat_init b2b

PY="$ROOT/.venv/bin/python"
[[ -x "$PY" ]] || PY="$(command -v python3)"

# Container and TTL cleanup are timer driven and cannot be compared in lockstep: both servers get a
# check interval of a day, so no container is ever reaped during a run (TTLs used are an hour).
NO_REAP_MS=86400000
# ZooKeeper gets a super user so that b2b.py can read its state (to resolve "the k-th child" and
# "the current version") without ACLs getting in the way; the ops compared never use it.
SUPER_DIGEST="$(cd "$HERE" && "$PY" -c 'import zkwire; print(zkwire.digest_id("super:adminpw"))')"

# Quotas (b2b.py's setQuota/delQuota ops) are enforced on both sides, so hard limits give QuotaExceeded.
# SASL: both servers read the same JAAS Server section (DIGEST-MD5 users u1, u2) and register the SASL
# provider, without which ZooKeeper refuses every sasl ACL id.
JAAS="$COMPAT_WORK/jaas.conf"
cat >"$JAAS" <<'EOF'
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_u1="p1"
    user_u2="p2";
};
EOF
SASL_PROVIDER=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
X509_PROVIDER=org.apache.zookeeper.server.auth.X509AuthenticationProvider
ZK_PORT="$(free_port)"
ZK_JVMFLAGS="-Dznode.container.checkIntervalMs=$NO_REAP_MS -Dzookeeper.DigestAuthenticationProvider.superDigest=$SUPER_DIGEST \
-Dzookeeper.enforceQuota=true -Djava.security.auth.login.config=$JAAS -Dzookeeper.authProvider.1=$SASL_PROVIDER" \
    start_zookeeper zk "$ZK_PORT" || compat_fail "ZooKeeper did not start"
# paddock's side: a follower of a 3-member paddock ensemble (every write forwarded to the leader, reads and
# watches served by the follower), or with --standalone one server alone.
ARGS=()
MODE=follower
for a in "$@"; do
    if [[ "$a" == --standalone ]]; then MODE=standalone; else ARGS+=("$a"); fi
done
PADDOCK_FLAGS=(--extended-types --max-client-cnxns 0 -D "znode.container.checkIntervalMs=$NO_REAP_MS"
    -D zookeeper.enforceQuota=true -D "java.security.auth.login.config=$JAAS" -D "zookeeper.authProvider.1=$SASL_PROVIDER")
if [[ "$MODE" == standalone ]]; then
    PD_PORT="$(free_port)"
    start_paddock paddock "$PD_PORT" "$COMPAT_WORK/paddock" "${PADDOCK_FLAGS[@]}" || compat_fail "paddock did not start"
else
    start_paddock_ensemble 3 member "${PADDOCK_FLAGS[@]}" || compat_fail "the 3-member paddock ensemble did not start"
    follower=$((ENSEMBLE_LEADER % 3 + 1))
    PD_PORT=${ENSEMBLE_PORTS[follower - 1]}
    echo "run.sh: paddock's side is member $follower, a follower (the leader is member $ENSEMBLE_LEADER)"
    # ZooKeeper's side is standalone: its /zookeeper/config is empty, the member's lists the ensemble.
    ARGS=(--no-config-node "${ARGS[@]}")
fi

# A second pair, configured alike with the x509 provider and without the SASL one (ZooKeeper refuses an
# ACL id whose scheme has no provider): acl_schemes.py runs against both pairs after the sequences.
ZK2_PORT="$(free_port)"
ZK_JVMFLAGS="-Dzookeeper.authProvider.1=$X509_PROVIDER" start_zookeeper zk-x509 "$ZK2_PORT" \
    || compat_fail "the second ZooKeeper did not start"
PD2_PORT="$(free_port)"
start_paddock paddock-x509 "$PD2_PORT" "$COMPAT_WORK/paddock-x509" -D "zookeeper.authProvider.1=$X509_PROVIDER" \
    || compat_fail "the second paddock did not start"

set +e
(cd "$HERE" && "$PY" -u b2b.py --zk "127.0.0.1:$ZK_PORT" --paddock "127.0.0.1:$PD_PORT" \
    --counts-file "$COMPAT_WORK/counts" "${ARGS[@]}")
rc=$?
set -e
# The row counts sequences (each one test: equal from its first op to its last); the operations compared
# are a separate line (report_ops), never added to the tests.
if [[ -f "$COMPAT_WORK/counts" ]]; then
    read -r passed failed ops_compared ops_mismatched ops_not_run <"$COMPAT_WORK/counts"
else
    passed=0 failed=1 ops_compared=0 ops_mismatched=0 ops_not_run=0
fi
if [[ $rc -ne 0 && $failed -eq 0 ]]; then failed=1; fi
# ACL ids of schemes with and without a provider (sasl yes/x509 no on the first pair, the reverse on the
# second), each case one test: equal replies on both servers, and the expected one.
for pair in "$ZK_PORT $PD_PORT yes no" "$ZK2_PORT $PD2_PORT no yes"; do
    read -r zp pp sasl x509 <<<"$pair"
    (cd "$HERE" && "$PY" -u acl_schemes.py --zk "127.0.0.1:$zp" --paddock "127.0.0.1:$pp" --sasl "$sasl" \
        --x509 "$x509") | tee "$COMPAT_WORK/acl_schemes.out" || true
    if read -r ok bad < <(sed -n 's/^acl_schemes: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' \
        "$COMPAT_WORK/acl_schemes.out"); then
        passed=$((passed + ok)) failed=$((failed + bad))
    else
        failed=$((failed + 1))
    fi
done
((failed == 0)) || rc=1
for name in "${!PADDOCK_PIDS[@]}"; do
    if ! kill -0 "${PADDOCK_PIDS[$name]}" 2>/dev/null; then
        echo "run.sh: paddock '$name' exited during the run; last log lines:" >&2
        tail -n 30 "$COMPAT_WORK/$name.log" >&2 || true
    fi
done
if ((ops_not_run > 0)); then
    echo "b2b: $ops_not_run operations not run: the rest of each sequence after its mismatch"
fi
report_ops "$ops_compared" "$ops_mismatched"
report "$passed" "$failed" 0
exit $rc
