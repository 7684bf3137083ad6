#!/usr/bin/env bash
# Builds a Debian 12 (bookworm) base image locally, for machines with no container registry:
# debootstrap --variant=minbase into a folder, then `docker import`. The root filesystem is cached as a
# tarball in ~/.cache/paddock/ and rebuilt only when missing; the image is imported only when the engine
# does not have it.
#
#   docker/base-image.sh paddock   -> image paddock-base:bookworm      (minbase + the libraries paddock
#                                     links: librocksdb7.8, libgssapi-krb5-2)
#   docker/base-image.sh jre       -> image paddock-base-jre:bookworm  (minbase + a headless JRE 17,
#                                     for the Apache ZooKeeper image the compose test can compare with)
#
# The Debian mirror is the one apt uses on this machine (DEBIAN_MIRROR overrides it).
set -euo pipefail

kind="${1:-paddock}"
case "$kind" in
    paddock) image=paddock-base:bookworm; include=librocksdb7.8,libgssapi-krb5-2 ;;
    jre) image=paddock-base-jre:bookworm; include=openjdk-17-jre-headless ;;
    *) echo "base-image.sh: unknown kind '$kind' (paddock or jre)" >&2; exit 2 ;;
esac
cache="${PADDOCK_CACHE:-$HOME/.cache/paddock}/docker-base"
tarball="$cache/$kind-bookworm.tar"

mirror() {
    [[ -n "${DEBIAN_MIRROR:-}" ]] && { echo "$DEBIAN_MIRROR"; return; }
    local m
    # deb822 sources (URIs: ...) first, then one-line sources (deb URL suite ...): the main archive.
    m="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ {print $2}' | grep -v security | head -n 1 || true)"
    [[ -n "$m" ]] || m="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
        | awk '$1 == "deb" && $3 ~ /^bookworm$/ {print $2}' | head -n 1 || true)"
    echo "${m:-http://deb.debian.org/debian}"
}

# The package list is recorded beside the cached tarball and as a label of the image: a cache or an
# image made from another list (one from before the list grew lacks a library the binary links) is
# made again rather than reused.
if [[ "$(docker image inspect -f '{{index .Config.Labels "paddock.include"}}' "$image" 2>/dev/null)" == "$include" ]]; then
    echo "base-image.sh: $image is already there"
    exit 0
fi
if [[ ! -s "$tarball" || "$(cat "$tarball.include" 2>/dev/null)" != "$include" ]]; then
    command -v debootstrap >/dev/null || { echo "base-image.sh: debootstrap not found (apt-get install debootstrap)" >&2; exit 1; }
    mkdir -p "$cache"
    root="$(mktemp -d "$cache/rootfs.XXXXXX")"
    trap 'rm -rf "$root"' EXIT
    start=$SECONDS
    echo "base-image.sh: debootstrap bookworm ($include) from $(mirror) into $root"
    debootstrap --variant=minbase --include="$include" bookworm "$root" "$(mirror)" >"$cache/$kind-debootstrap.log" 2>&1 \
        || { tail -n 20 "$cache/$kind-debootstrap.log" >&2; exit 1; }
    # What an image does not need: the package cache and lists, docs, man pages, locales.
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
        "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
    tar -C "$root" -cf "$tarball.tmp" .
    mv "$tarball.tmp" "$tarball"
    echo "$include" > "$tarball.include"
    echo "base-image.sh: root filesystem cached in $tarball ($(du -h "$tarball" | cut -f1), $((SECONDS - start)) s)"
fi
docker import --change "LABEL paddock.include=$include" "$tarball" "$image" >/dev/null
echo "base-image.sh: imported $image"
