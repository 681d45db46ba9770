#!/usr/bin/env bash
# Throwaway test certificates (never for production): gen_certs.sh DIR writes
#   ca.pem ca.key                 a CA
#   server.pem server.key         signed by ca, subjectAltName IP:127.0.0.1
#   server2.pem server2.key       same, another key and serial (reload tests)
#   client.pem client.key         a client certificate signed by ca
#   rogue-ca.pem rogue.pem rogue.key   a client certificate of another CA
#   rogue-node.pem rogue-node.key      a node certificate (as server) of it
# EC P-256 keys, valid 2 days. Used by tests/unit/test_tls.c and tests/security.
set -euo pipefail
d=$1
mkdir -p "$d"
cd "$d"
ossl() { openssl "$@" 2>/dev/null; }
key() { ossl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
ca() { # name cn
    key "$1.key"
    ossl req -x509 -new -key "$1.key" -subj "/CN=$2" -days 2 -sha256 \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
        -out "$1.pem"
}
leaf() { # name cn ca ext
    key "$1.key"
    ossl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
    printf '%s\n' "$4" > "$1.ext"
    ossl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -days 2 \
        -sha256 -extfile "$1.ext" -out "$1.pem"
    rm -f "$1.csr" "$1.ext"
}
ca ca "raftns test CA"
ca rogue-ca "rogue CA"
srv_ext='subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth,clientAuth
basicConstraints=CA:FALSE'
leaf server "raftns test server" ca "$srv_ext"
leaf server2 "raftns test server 2" ca "$srv_ext"
cli_ext='extendedKeyUsage=clientAuth
basicConstraints=CA:FALSE'
leaf client "raftns test client" ca "$cli_ext"
leaf rogue "rogue client" rogue-ca "$cli_ext"
leaf rogue-node "rogue node" rogue-ca "$srv_ext"
rm -f ./*.srl
