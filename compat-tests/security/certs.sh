#!/usr/bin/env bash
# Makes the certificates and stores of the quorum-security suite (compat-tests/security/run.sh), and of
# anyone who wants a local TLS ensemble on 127.0.0.1-3 (benchmarks, docs), or on other addresses (the fault
# suite, compat-tests/faults/run.sh, for its network namespaces):
#
#   compat-tests/security/certs.sh DIR              the security suite's set below, members on 127.0.0.1-3
#   compat-tests/security/certs.sh DIR ADDR...      an ensemble's set only: ca1, a member per ADDR, trust-ca1
#
# Every key is EC P-256, every certificate SHA-256, made by openssl at run time (nothing is checked in).
# DIR receives, for each certificate NAME:
#   NAME.crt  the certificate          NAME.key  its private key, PKCS#8, unencrypted (mode 0600)
#   NAME.pem  the PEM key store both servers read (ssl.quorum.keyStore.type=PEM): the certificate, its
#             issuing CA, then the PKCS#8 key; no password
#   NAME.p12  the PKCS12 key store (ssl.quorum.keyStore.type=PKCS12), password in DIR/password
# The certificates:
#   ca1, ca2, caX            three self-signed CAs: the ensemble's, the one it rotates to, a stranger's
#   m1 m2 m3                 members 1-3 from ca1: SAN IP:127.0.0.N only, EKU serverAuth+clientAuth
#   m1-ca2 m2-ca2 m3-ca2     the same members from ca2 (rotation)
#   m3-caX                   member 3's address from the stranger's CA
#   m3-expired               member 3's address from ca1, valid from 2020-01-01 to 2020-01-02
#   client                   CN=client from ca1, EKU clientAuth only, no SAN
# and for the client port (group client; every client certificate has EKU clientAuth only and no SAN unless
# said):
#   server, server-ca2       the client port's certificate from ca1 and from ca2 (rotation): SAN IP:127.0.0.1
#                            and DNS:localhost (ZooKeeper's Java client checks the name it resolves 127.0.0.1
#                            to), EKU serverAuth
#   ca1b                     a CA with ca1's subject and another key (ZOOKEEPER-4992: two CAs, one subject)
#   alice                    C=DE/O=Example, Inc./OU=dev/CN=alice smith from ca1 (a subject that needs escaping)
#   alice-ca1b               the same subject from ca1b
#   bob, zk-admin            CN=bob, CN=zk-admin (the x509 super user) from ca1
#   client-caX               CN=client from the stranger's CA
#   client-ip                CN=client-ip from ca1 with SAN IP:127.0.0.1 (ssl.clientHostnameVerification)
# Trust stores: trust-ca1, trust-ca2, trust-caX, trust-ca1+ca2, trust-ca1+caX and trust-ca1+ca1b, each as .pem (the CA certificates) and
# as .p12 (password in DIR/password). Java ignores a certificate in a PKCS12 file that lacks Oracle's
# trusted-key-usage attribute, which openssl 3.0 cannot write (3.2's -jdktrust can), so the .p12 trust
# stores are made by keytool when it is installed (openjdk); without it they are openssl's, which paddock
# reads and ZooKeeper does not. m1.jks is member 1's key store as JKS (keytool only), for the start-up
# refusal of a key store type paddock does not read.
# With ADDRs, only ca1, members m1 m2 ... (member N from ca1 with SAN IP:ADDR_N, or DNS:ADDR_N for a name,
# EKU serverAuth+clientAuth, as NAME.crt/.key/.pem/.p12 above) and trust-ca1 (.pem, .p12) are made, and
# every one of them is valid from a day before it was made (issued with `openssl ca`): a member whose wall
# clock is set back (the fault suite's clock-jump nemesis, up to 630 s) must still find its peers'
# certificates valid, else the jump would cut it off with a TLS failure, a fault the nemesis does not mean.
# Re-running on a DIR that holds DIR/.complete does nothing.
set -euo pipefail

DIR="${1:?usage: certs.sh DIR [ADDR...]}"
shift
ADDRS=("$@")
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
[[ -f "$DIR/.complete" ]] && exit 0
command -v openssl >/dev/null || { echo "certs.sh: openssl not found (apt-get install openssl)" >&2; exit 1; }
umask 077
cd "$DIR"
PASS=storepass1
echo "$PASS" >password

# ca_db: a fresh database for `openssl ca` in DIR/ca-db.
ca_db() {
    mkdir -p "ca-db"
    : >ca-db/index.txt
    cat >ca-db/ca.cnf <<EOF
[ca]
default_ca = past
[past]
database = $DIR/ca-db/index.txt
new_certs_dir = $DIR/ca-db
serial = $DIR/ca-db/serial
default_md = sha256
policy = any
copy_extensions = none
[any]
commonName = supplied
organizationName = optional
EOF
    openssl rand -hex 8 >ca-db/serial
}

# ca NAME CN [START END]: a self-signed CA; with START and END (YYYYMMDDhhmmssZ) it is self-signed by
# `openssl ca`, as leaf's certificates with dates are.
ca() {
    local start=${3:-} end=${4:-}
    if [[ -z "$start" ]]; then
        openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.crt" \
            -days 3650 -subj "/O=paddock tests/CN=$2" -sha256 \
            -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
        return
    fi
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.csr" \
        -subj "/O=paddock tests/CN=$2" 2>/dev/null
    printf '%b' "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\n" >"$1.ext"
    ca_db
    openssl ca -batch -selfsign -config ca-db/ca.cnf -keyfile "$1.key" -in "$1.csr" \
        -startdate "$start" -enddate "$end" -extfile "$1.ext" -notext -out "$1.crt" 2>/dev/null
    rm -f "$1.csr" "$1.ext"
}

# leaf NAME CA CN EXTENSIONS [START END]: a certificate signed by CA; with START and END (YYYYMMDDhhmmssZ)
# it is issued by `openssl ca`, the only openssl 3.0 command that takes a validity in the past. A CN that
# starts with / is the whole subject.
leaf() {
    local name=$1 issuer=$2 cn=$3 ext=$4 start=${5:-} end=${6:-} subj
    subj="/O=paddock tests/CN=$cn"
    [[ "$cn" == /* ]] && subj="$cn"
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$name.key" -out "$name.csr" \
        -subj "$subj" 2>/dev/null
    printf '%b' "$ext" >"$name.ext"
    if [[ -z "$start" ]]; then
        openssl x509 -req -in "$name.csr" -CA "$issuer.crt" -CAkey "$issuer.key" -CAcreateserial \
            -days 825 -sha256 -extfile "$name.ext" -out "$name.crt" 2>/dev/null
    else
        ca_db
        openssl ca -batch -config ca-db/ca.cnf -cert "$issuer.crt" -keyfile "$issuer.key" -in "$name.csr" \
            -startdate "$start" -enddate "$end" -extfile "$name.ext" -notext -out "$name.crt" 2>/dev/null
    fi
    rm -f "$name.csr" "$name.ext"
    cat "$name.crt" "$issuer.crt" "$name.key" >"$name.pem"
    openssl pkcs12 -export -in "$name.crt" -inkey "$name.key" -certfile "$issuer.crt" -name member \
        -passout "pass:$PASS" -out "$name.p12"
}

member_ext() { # N (SAN IP:127.0.0.N), or an address (IP:ADDR for an IPv4 address, DNS:ADDR for a name)
    local san="IP:127.0.0.$1"
    if [[ ! "$1" =~ ^[0-9]+$ ]]; then
        san="DNS:$1"
        [[ "$1" =~ ^[0-9]+(\.[0-9]+){3}$ ]] && san="IP:$1"
    fi
    echo "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyAgreement\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=$san\n"
}

# trust NAME CA...: trust-NAME.pem and trust-NAME.p12 holding the CAs.
trust() {
    local name=$1 c
    shift
    for c in "$@"; do cat "$c.crt"; done >"trust-$name.pem"
    rm -f "trust-$name.p12"
    if command -v keytool >/dev/null; then
        for c in "$@"; do
            keytool -importcert -noprompt -storetype PKCS12 -keystore "trust-$name.p12" -storepass "$PASS" \
                -alias "$c" -file "$c.crt" >/dev/null 2>&1
        done
    else
        openssl pkcs12 -export -nokeys -in "trust-$name.pem" -passout "pass:$PASS" -out "trust-$name.p12"
    fi
}

if [[ ${#ADDRS[@]} -gt 0 ]]; then
    # An ensemble's set only, valid from a day ago (see the top).
    from=$(date -u -d '1 day ago' +%Y%m%d%H%M%SZ)
    ca ca1 "paddock test CA 1" "$from" "$(date -u -d '3650 days' +%Y%m%d%H%M%SZ)"
    n=0
    for addr in "${ADDRS[@]}"; do
        n=$((n + 1))
        leaf "m$n" ca1 "member-$n" "$(member_ext "$addr")" "$from" "$(date -u -d '825 days' +%Y%m%d%H%M%SZ)"
    done
    trust ca1 ca1
    rm -rf ca-db ./*.srl
    chmod 600 ./*
    touch .complete
    exit 0
fi

ca ca1 "paddock test CA 1"
ca ca2 "paddock test CA 2"
ca caX "a stranger's CA"
for n in 1 2 3; do
    leaf "m$n" ca1 "member-$n" "$(member_ext "$n")"
    leaf "m$n-ca2" ca2 "member-$n" "$(member_ext "$n")"
done
leaf m3-caX caX member-3 "$(member_ext 3)"
leaf m3-expired ca1 member-3 "$(member_ext 3)" 20200101000000Z 20200102000000Z
client_ext="basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyAgreement\nextendedKeyUsage=clientAuth\n"
leaf client ca1 client "$client_ext"
server_ext="basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyAgreement\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
leaf server ca1 server "$server_ext"
leaf server-ca2 ca2 server "$server_ext"
ca ca1b "paddock test CA 1"
leaf alice ca1 "/C=DE/O=Example, Inc./OU=dev/CN=alice smith" "$client_ext"
leaf alice-ca1b ca1b "/C=DE/O=Example, Inc./OU=dev/CN=alice smith" "$client_ext"
leaf bob ca1 bob "$client_ext"
leaf zk-admin ca1 zk-admin "$client_ext"
leaf client-caX caX client "$client_ext"
leaf client-ip ca1 client-ip "${client_ext}subjectAltName=IP:127.0.0.1\n"

trust ca1 ca1
trust ca2 ca2
trust caX caX
trust ca1+ca2 ca1 ca2
trust ca1+caX ca1 caX
trust ca1+ca1b ca1 ca1b
if command -v keytool >/dev/null; then
    keytool -importkeystore -noprompt -srckeystore m1.p12 -srcstoretype PKCS12 -srcstorepass "$PASS" \
        -destkeystore m1.jks -deststoretype JKS -deststorepass "$PASS" >/dev/null 2>&1
fi
rm -rf ca-db ./*.srl
chmod 600 ./*
touch .complete
