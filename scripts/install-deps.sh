#!/usr/bin/env bash
# Installs what building and testing paddock needs; safe to run again (each step checks first).
#
#   scripts/install-deps.sh                 everything the tests need: build packages, a JDK, Maven and tmux
#                                           (compat-tests/java, scripts/zookeeper.sh), PostgreSQL 15
#                                           (compat-tests/locks), etcd 3.4 and Redis 7.0 (bench/locks),
#                                           and the Python venv
#   scripts/install-deps.sh --debian-only   only the Debian packages needed to build the server (serve.sh)
#   scripts/install-deps.sh --zookeeper     accepted for compatibility: the default already covers it
#
# The venv lives in .venv at the repository root (ignored by git) and holds kazoo 2.11.0, pytest and
# pytest-timeout, pinned so that every machine runs the same client.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WANT_VENV=1
WANT_JAVA=1
for arg in "$@"; do
    case "$arg" in
        --debian-only) WANT_VENV=0; WANT_JAVA=0 ;;
        --zookeeper) WANT_JAVA=1 ;;
        *) echo "install-deps.sh: unknown option '$arg'" >&2; exit 2 ;;
    esac
done

log() { echo "install-deps: $*" >&2; }

SUDO=()
if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null || { log "not root and no sudo: cannot install Debian packages"; exit 1; }
    SUDO=(sudo)
fi

# librocksdb-dev: the rocksdb crate links Debian's library (see .cargo/config.toml);
# libclang-dev: bindgen for librocksdb-sys; pkg-config and a C++ toolchain for the -sys build scripts;
# cmake for aws-lc-sys (rustls's crypto, quorum TLS); libkrb5-dev for libgssapi-sys (SASL GSSAPI:
# it links MIT Kerberos's libgssapi_krb5, bindgen reads its headers). The KDC packages are not here:
# compat-tests/kerberos installs them when it runs.
PACKAGES=(librocksdb-dev libclang-dev pkg-config build-essential cmake libkrb5-dev)
if [[ "$WANT_VENV" == 1 ]]; then
    PACKAGES+=(python3 python3-venv)
fi
if [[ "$WANT_JAVA" == 1 ]]; then
    # A JDK (not just a JRE): compat-tests/java compiles its tests. tmux drives zkCli interactively.
    PACKAGES+=(openjdk-17-jdk-headless maven tmux)
    # compat-tests/locks runs its fencing and example checks against a real PostgreSQL server.
    PACKAGES+=(postgresql)
    # bench/locks/run.sh (the lock shoot-out, and its smoke in scripts/test.sh) runs etcd 3.4 and Redis 7.0
    # beside paddock. Where systemd runs, the packages start their own services; the benchmark does not use
    # them (its servers have their own ports and data directories).
    PACKAGES+=(etcd-server redis-server)
fi

# A python3 from elsewhere (pyenv, say) that already has venv needs nothing from Debian.
python_ok() { command -v python3 >/dev/null && python3 -c 'import venv, ensurepip' 2>/dev/null; }
missing=()
for p in "${PACKAGES[@]}"; do
    if [[ "$p" == python3 || "$p" == python3-venv ]] && python_ok; then
        continue
    fi
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
    log "installing Debian packages: ${missing[*]}"
    "${SUDO[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ "$WANT_VENV" == 1 ]]; then
    VENV="$ROOT/.venv"
    PY_PKGS=("kazoo==2.11.0" "pytest" "pytest-timeout")
    if [[ ! -x "$VENV/bin/python" ]]; then
        log "creating $VENV"
        python3 -m venv "$VENV"
    fi
    if ! "$VENV/bin/python" - <<'EOF' 2>/dev/null; then
import importlib.metadata as m, sys
sys.exit(0 if m.version("kazoo") == "2.11.0" and m.version("pytest") and m.version("pytest-timeout") else 1)
EOF
        log "installing ${PY_PKGS[*]} into $VENV"
        "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${PY_PKGS[@]}"
    fi
fi
