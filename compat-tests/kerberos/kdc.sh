#!/usr/bin/env bash
# A throw-away MIT Kerberos realm on loopback, for the Kerberos tests: Debian's krb5-kdc, a database and
# key tables made with kdb5_util and kadmin.local in DIR, the KDC on 127.0.0.1:PORT. Nothing outside DIR is
# written (KRB5_CONFIG and KRB5_KDC_PROFILE point into it), and `stop` leaves no process behind.
#
#   kdc.sh install                        installs krb5-kdc, krb5-admin-server and krb5-user if missing
#   kdc.sh start DIR REALM PORT           writes DIR/krb5.conf and DIR/kdc.conf, creates the realm, starts krb5kdc
#   kdc.sh keytab DIR KEYTAB PRINCIPAL... creates each principal (random key) unless it exists, and adds its
#                                         current keys to KEYTAB (without re-keying it, so a principal can be
#                                         in several tables)
#   kdc.sh stop DIR                       stops the KDC started in DIR
#
# Clients and servers use it with KRB5_CONFIG=DIR/krb5.conf (MIT) or -Djava.security.krb5.conf=DIR/krb5.conf.
set -euo pipefail

die() { echo "kdc.sh: $*" >&2; exit 1; }

env_for() { export KRB5_CONFIG="$1/krb5.conf" KRB5_KDC_PROFILE="$1/kdc.conf"; }

case "${1:-}" in
install)
    missing=()
    for p in krb5-kdc krb5-admin-server krb5-user; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if ((${#missing[@]})); then
        echo "kdc.sh: installing ${missing[*]}" >&2
        SUDO=()
        [[ "$(id -u)" == 0 ]] || SUDO=(sudo)
        "${SUDO[@]}" apt-get update -qq >&2
        # The packages' debconf questions (default realm, servers) are answered by our own files.
        DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq "${missing[@]}" >&2
    fi
    # Debian starts the system's KDC after install (it fails without a realm, or serves one we do not
    # use); ours runs from its own files on its own port either way.
    ;;
start)
    dir=$2 realm=$3 port=$4
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    cat >"$dir/krb5.conf" <<CONF
[libdefaults]
    default_realm = $realm
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    ticket_lifetime = 1h
    renew_lifetime = 1d
    forwardable = true
    udp_preference_limit = 1
    permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
    default_tkt_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
    default_tgs_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
[realms]
    $realm = {
        kdc = 127.0.0.1:$port
    }
[domain_realm]
    localhost = $realm
CONF
    cat >"$dir/kdc.conf" <<CONF
[kdcdefaults]
    kdc_listen = 127.0.0.1:$port
    kdc_tcp_listen = 127.0.0.1:$port
[realms]
    $realm = {
        database_name = $dir/principal
        key_stash_file = $dir/stash
        acl_file = $dir/kadm5.acl
        max_life = 1h
        max_renewable_life = 1d
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }
[logging]
    kdc = FILE:$dir/kdc.log
CONF
    : >"$dir/kadm5.acl"
    env_for "$dir"
    kdb5_util create -s -r "$realm" -P "kdc-master-$RANDOM$RANDOM" >"$dir/kdb5_util.log" 2>&1 \
        || die "kdb5_util create failed: $(tail -3 "$dir/kdb5_util.log")"
    krb5kdc -P "$dir/kdc.pid" -r "$realm" || die "krb5kdc did not start: $(tail -3 "$dir/kdc.log" 2>/dev/null)"
    for _ in $(seq 50); do
        [[ -s "$dir/kdc.pid" ]] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && exit 0
        sleep 0.1
    done
    die "the KDC does not answer on 127.0.0.1:$port"
    ;;
keytab)
    dir=$2 keytab=$3
    shift 3
    env_for "$dir"
    # kadmin.local -q exits 0 whatever the query did: its output tells.
    for p in "$@"; do
        if ! kadmin.local -q "getprinc $p" 2>&1 | grep -q "^Principal: "; then
            kadmin.local -q "addprinc -randkey $p" >>"$dir/kadmin.log" 2>&1
            kadmin.local -q "getprinc $p" 2>&1 | grep -q "^Principal: " || die "addprinc $p failed"
        fi
        kadmin.local -q "ktadd -norandkey -k $keytab $p" >>"$dir/kadmin.log" 2>&1
        klist -k "$keytab" 2>/dev/null | grep -q " $p@" || die "ktadd $p to $keytab failed"
    done
    chmod 600 "$keytab"
    ;;
stop)
    dir=$2
    if [[ -s "$dir/kdc.pid" ]]; then
        pid="$(<"$dir/kdc.pid")"
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$dir/kdc.pid"
    fi
    ;;
*)
    sed -n '2,12p' "$0" >&2
    exit 2
    ;;
esac
