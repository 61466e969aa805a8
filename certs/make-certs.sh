#!/usr/bin/env bash
# Regenerates the test PKI used by `quiclab serve`, the emulator and the third-party peers:
# an ECDSA P-256 CA and a leaf (CA:FALSE, serverAuth) valid for localhost, 127.0.0.1, ::1,
# server.quiclab and the emulator's server addresses 10.99.2.1-16. ECDSA rather than Ed25519
# because Chromium and several QUIC peers reject Ed25519 certificates; a separate CA because
# rustls-based clients reject a self-signed leaf. The files are committed; rerun only to renew.
set -euo pipefail
cd "$(dirname "$0")"
san="DNS:localhost,DNS:server.quiclab,DNS:*.quiclab,IP:127.0.0.1,IP:::1"
for i in $(seq 1 16); do san="$san,IP:10.99.2.$i"; done
openssl ecparam -name prime256v1 -genkey -noout -out ca.key
openssl req -x509 -new -key ca.key -sha256 -days 36500 -subj "/CN=quiclab test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.pem
openssl ecparam -name prime256v1 -genkey -noout -out server.key.sec1
openssl pkcs8 -topk8 -nocrypt -in server.key.sec1 -out server.key && rm server.key.sec1
openssl req -new -key server.key -subj "/CN=server.quiclab" -out server.csr
cat > leaf.ext <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=$san
EXT
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 36500 -sha256 \
    -extfile leaf.ext -out server.pem
rm -f server.csr leaf.ext ca.srl
# server-chain.pem: leaf then CA, for servers that want the chain in one file (nginx, aioquic).
cat server.pem ca.pem > server-chain.pem
# Base64 SHA-256 of the leaf's SubjectPublicKeyInfo, for Chromium's --ignore-certificate-errors-spki-list.
openssl x509 -in server.pem -pubkey -noout | openssl pkey -pubin -outform der \
    | openssl dgst -sha256 -binary | base64 > server.spki
