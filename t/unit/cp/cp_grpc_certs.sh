#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The control plane transport tests' certificates, made at test time in
# DIR with the openssl command: ca.pem (a CA), server.pem/.key (signed by
# it, for IP 127.0.0.1 and localhost), worker.pem/.key (a client
# certificate with URI SAN spiffe://example.org/prod/worker/w1), w2.pem/.key
# (the same for worker w2), other.pem/.key (a client certificate with the
# w1 id signed by another CA, other-ca.pem), checker.pem/.key (a checker's
# client certificate, spiffe://example.org/prod/checker/k1). Keys are mode
# 0600. And
# echo-mtls.ini: t/lib/cp_echo_server's mTLS configuration with server.pem.
set -e
d=$1
cd "$d"
umask 077
q() { "$@" >/dev/null 2>&1; }
ca() {
  q openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$1.key" -out "$1.pem" -days 2 -subj "/CN=$2" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=keyCertSign
}
# leaf NAME CA SAN EKU
leaf() {
  q openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$1.key" -out "$1.csr" -subj "/CN=cp-test-$1"
  printf 'subjectAltName=%s\nextendedKeyUsage=%s\n' "$3" "$4" > "$1.cnf"
  q openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" \
    -CAcreateserial -out "$1.pem" -days 2 -extfile "$1.cnf"
  test -s "$1.pem"
}
ca ca cp-test-ca
ca other-ca cp-other-ca
leaf server ca 'IP:127.0.0.1,DNS:localhost' serverAuth
leaf worker ca 'URI:spiffe://example.org/prod/worker/w1' clientAuth
leaf w2 ca 'URI:spiffe://example.org/prod/worker/w2' clientAuth
leaf other other-ca 'URI:spiffe://example.org/prod/worker/w1' clientAuth
leaf checker ca 'URI:spiffe://example.org/prod/checker/k1' clientAuth
chmod 0644 ./*.pem
printf '[cp_echo]\nlisten = 127.0.0.1:0\ntls.mode = mtls\ntls.cert_file = %s\ntls.key_file = %s\ntls.ca_file = %s\n' \
  "$PWD/server.pem" "$PWD/server.key" "$PWD/ca.pem" >echo-mtls.ini
