#!/usr/bin/env bash
# Builds paddock's image from docker/Dockerfile with the release binary built on the host.
#
#   docker/build-image.sh [--base IMAGE] [--tag TAG] [--bin PATH] [-- <docker build args>]
#
# --base   the FROM image (default debian:bookworm-slim; docker/base-image.sh builds paddock-base:bookworm
#          for machines without a registry); --tag default paddock:latest; --bin a paddock binary to ship
#          instead of `cargo build --release -p paddock`. The binary is stripped into a temporary context
#          together with the entrypoint and healthcheck.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
base="" tag=paddock:latest bin=""
extra=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --base) base=$2; shift ;;
        --tag) tag=$2; shift ;;
        --bin) bin=$2; shift ;;
        --) shift; extra=("$@"); break ;;
        *) echo "build-image.sh: unknown option '$1' (see the header of $0)" >&2; exit 2 ;;
    esac
    shift
done
if [[ -z "$bin" ]]; then
    (cd "$ROOT" && cargo build --release -q -p paddock)
    bin="${CARGO_TARGET_DIR:-$ROOT/target}/release/paddock"
fi
[[ -x "$bin" ]] || { echo "build-image.sh: no paddock binary at $bin" >&2; exit 1; }
ctx="$(mktemp -d "${TMPDIR:-/tmp}/paddock-image.XXXXXX")"
trap 'rm -rf "$ctx"' EXIT
cp "$HERE/Dockerfile" "$HERE/entrypoint.sh" "$HERE/healthcheck.sh" "$ctx/"
cp "$bin" "$ctx/paddock"
strip "$ctx/paddock" 2>/dev/null || true
args=(-t "$tag")
[[ -z "$base" ]] || args+=(--build-arg "BASE=$base")
docker build -q "${args[@]}" "${extra[@]}" "$ctx" >/dev/null
echo "build-image.sh: built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'))"
