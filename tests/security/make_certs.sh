#!/usr/bin/env bash
# Makes the certificates of the TLS tests in DIR with openssl:
#   ca.pem / ca.key              the CA of the servers and the trusted clients
#   server.pem / server.key      CN=graphstore-server, for 127.0.0.1 and localhost (also the
#                                client certificate servers present to their peers)
#   trainer-a.pem / .key         client CN=trainer-a, signed by the CA
#   trainer-b.pem / .key         client CN=trainer-b, signed by the CA
#   expired.pem / .key           client CN=expired, signed by the CA, valid in 2020 only
#   other-ca.pem                 an unrelated CA
#   rogue.pem / .key             client CN=trainer-a, signed by the unrelated CA
#   other-server.pem / .key      a server certificate signed by the unrelated CA
set -euo pipefail
dir=${1:?usage: make_certs.sh DIR}
mkdir -p "$dir"
cd "$dir"

ca() {  # name
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.pem" -days 30 \
    -subj "/CN=$1" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null
}

leaf() {  # name cn ca extensions
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2" 2>/dev/null
  printf '%s\n' "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -out "$1.pem" -days 30 \
    -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

ca ca
ca other-ca
server_ext="subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
client_ext="extendedKeyUsage=clientAuth"
leaf server graphstore-server ca "$server_ext"
leaf other-server graphstore-server other-ca "$server_ext"
leaf trainer-a trainer-a ca "$client_ext"
leaf trainer-b trainer-b ca "$client_ext"
leaf rogue trainer-a other-ca "$client_ext"

# An expired client certificate: `openssl ca` can set the validity period in the past.
mkdir -p ca-db
: > ca-db/index.txt
echo 1000 > ca-db/serial
cat > ca-db/ca.cnf <<CNF
[ ca ]
default_ca = test
[ test ]
database = $PWD/ca-db/index.txt
serial = $PWD/ca-db/serial
new_certs_dir = $PWD/ca-db
default_md = sha256
policy = anything
unique_subject = no
[ anything ]
commonName = supplied
[ client ]
extendedKeyUsage = clientAuth
CNF
openssl req -newkey rsa:2048 -nodes -keyout expired.key -out expired.csr -subj "/CN=expired" 2>/dev/null
openssl ca -batch -config ca-db/ca.cnf -cert ca.pem -keyfile ca.key -in expired.csr -out expired.pem \
  -startdate 20200101000000Z -enddate 20200102000000Z -extensions client -notext 2>/dev/null
rm -f expired.csr
ls "$dir"/*.pem > /dev/null
