#!/usr/bin/env bash
# Runs a standalone paddock (release build): 127.0.0.1:2181 with data in ./data unless told otherwise.
#   scripts/serve.sh                         defaults
#   scripts/serve.sh --config zoo.cfg        clientPort, clientPortAddress, dataDir from a ZooKeeper config
#   scripts/serve.sh --port 2182 --data-dir /tmp/pd
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/paddock-target}"
bash scripts/install-deps.sh --debian-only
exec cargo run --release --locked -p paddock -- serve "$@"
