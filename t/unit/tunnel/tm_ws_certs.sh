#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test_tm_ws's certificates, made at test time in DIR with the openssl
# command: ca.pem (a CA), server.pem/server.key (signed by it, for
# 127.0.0.1 and localhost), other-ca.pem (another CA, never signing),
# wrongname.pem/.key (signed by ca.pem for other.invalid only).
set -e
d=$1
cd "$d"
q() { "$@" >/dev/null 2>&1; }
q openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout ca.key -out ca.pem -days 2 -subj /CN=tm-test-ca \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=keyCertSign
q openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout other-ca.key -out other-ca.pem -days 2 -subj /CN=tm-other-ca \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=keyCertSign
q openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout server.key -out server.csr -subj /CN=tm-test-server
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > ext.cnf
q openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
  -out server.pem -days 2 -extfile ext.cnf
test -s server.pem
# wrongname.pem: signed by ca.pem, but for another name only.
q openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout wrongname.key -out wrongname.csr -subj /CN=other.invalid
printf 'subjectAltName=DNS:other.invalid\nextendedKeyUsage=serverAuth\n' > ext2.cnf
q openssl x509 -req -in wrongname.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
  -out wrongname.pem -days 2 -extfile ext2.cnf
test -s wrongname.pem
