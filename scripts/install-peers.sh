#!/usr/bin/env bash
# Installs the third-party peers and load tools that `quiclab interop` and `quiclab load` drive.
# Idempotent; run as root on Debian 12. Built artifacts go under $QUICLAB_PEERS
# (default /opt/quiclab-peers), never into the repository:
#   bin/quicgo-server bin/quicgo-client   quic-go HTTP/3 peers built from peers/quic-go
#   bin/vegeta bin/oha                    load generators (pinned)
#   aioquic-venv/                         aioquic + the demo server's dependencies (pinned)
#   aioquic-examples/                     http3_server.py / http3_client.py from aioquic's sdist
#   VERSIONS                              one "name version" line per installed component
#
# Usage: install-peers.sh [--all | --interop | --load-tools | --check | COMPONENT...]
#   (no argument)  = --interop: everything the test suite needs (crates/cli/tests/interop.rs)
#   --interop      debian aioquic quic-go
#   --load-tools   debian vegeta oha (oha compiles for several minutes)
#   --all          every component
#   --check        only run the loopback smoke tests of what is installed
#   COMPONENT      one of: debian aioquic quic-go vegeta oha
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${QUICLAB_PEERS:-/opt/quiclab-peers}
BIN=$PREFIX/bin

# Pinned versions: change here, nowhere else.
AIOQUIC_VERSION=1.7.2
STARLETTE_VERSION=0.47.3
JINJA2_VERSION=3.1.6
WSPROTO_VERSION=1.2.0
VEGETA_VERSION=v12.12.0
OHA_VERSION=1.16.0
DEBIAN_PACKAGES=(chromium nghttp2-client ngtcp2-client ngtcp2-server nginx wrk ethtool iproute2
    python3-venv ca-certificates)

# A fresh shell may not have Go's default install location on PATH.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
    export PATH="$PATH:/usr/local/go/bin"
fi

log() { printf 'install-peers: %s\n' "$*"; }
die() { printf 'install-peers: error: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (apt-get and $PREFIX need it)"
mkdir -p "$BIN"
touch "$PREFIX/VERSIONS"

# Replaces the line of one component in VERSIONS (so re-runs do not accumulate lines).
record_version() {
    local name=$1 version=$2 tmp
    tmp=$(mktemp)
    grep -v "^$name " "$PREFIX/VERSIONS" >"$tmp" || true
    printf '%s %s\n' "$name" "$version" >>"$tmp"
    sort -o "$PREFIX/VERSIONS" "$tmp"
    rm -f "$tmp"
}

recorded_version() { awk -v n="$1" '$1 == n { print $2 }' "$PREFIX/VERSIONS"; }

install_debian() {
    local missing=()
    for p in "${DEBIAN_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "apt-get install ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        # Keep package scripts from starting nginx's system service: quiclab runs nginx with its
        # own prefix and config, and a system nginx would hold port 80/443 for nothing.
        local policy=/usr/sbin/policy-rc.d created_policy=0
        if [ ! -e $policy ]; then
            printf '#!/bin/sh\nexit 101\n' >$policy && chmod +x $policy && created_policy=1
        fi
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
        [ $created_policy -eq 1 ] && rm -f $policy
    fi
    # Stop and disable the system nginx in case it was started before (or by another script).
    if command -v systemctl >/dev/null 2>&1 && systemctl is-system-running >/dev/null 2>&1; then
        systemctl disable --now nginx >/dev/null 2>&1 || true
    elif [ -f /run/nginx.pid ]; then
        /usr/sbin/nginx -s quit >/dev/null 2>&1 || true
    fi
    record_version chromium "$(dpkg-query -W -f='${Version}' chromium)"
    record_version nghttp2-client "$(dpkg-query -W -f='${Version}' nghttp2-client)"
    record_version ngtcp2 "$(dpkg-query -W -f='${Version}' ngtcp2-client)"
    record_version nginx "$(dpkg-query -W -f='${Version}' nginx)"
    record_version wrk "$(dpkg-query -W -f='${Version}' wrk)"
}

install_aioquic() {
    local venv=$PREFIX/aioquic-venv examples=$PREFIX/aioquic-examples
    if [ "$(recorded_version aioquic)" = "$AIOQUIC_VERSION" ] && [ -x "$venv/bin/python" ] &&
        [ -f "$examples/http3_server.py" ]; then
        log "aioquic $AIOQUIC_VERSION already installed"
        return
    fi
    log "aioquic $AIOQUIC_VERSION into $venv"
    # Debian's python3 with python3-venv: independent of whatever python3 is first on PATH.
    local py=/usr/bin/python3
    [ -x $py ] || py=$(command -v python3)
    rm -rf "$venv"
    "$py" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check \
        "aioquic==$AIOQUIC_VERSION" "starlette==$STARLETTE_VERSION" "jinja2==$JINJA2_VERSION" \
        "wsproto==$WSPROTO_VERSION"
    # The example scripts ship only in the sdist.
    local tmp
    tmp=$(mktemp -d)
    "$venv/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: \
        "aioquic==$AIOQUIC_VERSION" -d "$tmp"
    tar -xzf "$tmp/aioquic-$AIOQUIC_VERSION.tar.gz" -C "$tmp"
    rm -rf "$examples"
    cp -r "$tmp/aioquic-$AIOQUIC_VERSION/examples" "$examples"
    rm -rf "$tmp"
    record_version aioquic "$AIOQUIC_VERSION"
}

install_quic_go() {
    command -v go >/dev/null 2>&1 || die "quic-go peers need the Go toolchain (go) on PATH"
    local want
    want=$(awk '$1 == "github.com/quic-go/quic-go" { print $2 }' "$REPO/peers/quic-go/go.sum" | head -1)
    # Rebuild when the sources changed: the stamp is a hash of the module's files.
    local stamp
    stamp=$(cat "$REPO"/peers/quic-go/go.mod "$REPO"/peers/quic-go/go.sum \
        "$REPO"/peers/quic-go/*/main.go | sha256sum | cut -c1-12)
    if [ "$(recorded_version quic-go-peers)" = "$stamp" ] && [ -x "$BIN/quicgo-server" ] &&
        [ -x "$BIN/quicgo-client" ]; then
        log "quic-go peers already built"
        return
    fi
    log "building quic-go peers ($want)"
    (cd "$REPO/peers/quic-go" &&
        go build -mod=readonly -trimpath -o "$BIN/quicgo-server" ./server &&
        go build -mod=readonly -trimpath -o "$BIN/quicgo-client" ./client)
    record_version quic-go "$want"
    record_version quic-go-peers "$stamp"
}

install_vegeta() {
    command -v go >/dev/null 2>&1 || die "vegeta needs the Go toolchain (go) on PATH"
    if [ "$(recorded_version vegeta)" = "$VEGETA_VERSION" ] && [ -x "$BIN/vegeta" ]; then
        log "vegeta $VEGETA_VERSION already installed"
        return
    fi
    log "building vegeta $VEGETA_VERSION"
    # A throw-away module: `go install ...@latest` is refused by the proxy, a pinned require works.
    local tmp
    tmp=$(mktemp -d)
    # -mod=mod lets the build record the go.sum entries of vegeta's main package.
    (cd "$tmp" &&
        go mod init quiclab/vegeta-build >/dev/null 2>&1 &&
        go get "github.com/tsenart/vegeta/v12@$VEGETA_VERSION" >/dev/null 2>&1 &&
        go build -mod=mod -trimpath -o "$BIN/vegeta" github.com/tsenart/vegeta/v12)
    rm -rf "$tmp"
    record_version vegeta "$VEGETA_VERSION"
}

install_oha() {
    if [ "$(recorded_version oha)" = "$OHA_VERSION" ] && [ -x "$BIN/oha" ]; then
        log "oha $OHA_VERSION already installed"
        return
    fi
    command -v cargo >/dev/null 2>&1 || die "oha needs cargo on PATH"
    log "cargo install oha $OHA_VERSION --features http3 (several minutes)"
    local tmp
    tmp=$(mktemp -d)
    CARGO_TARGET_DIR=$tmp cargo install -q --locked --root "$PREFIX" --features http3 \
        --version "$OHA_VERSION" oha
    rm -rf "$tmp"
    record_version oha "$OHA_VERSION"
}

# --- loopback smoke tests: each starts a server on 127.0.0.1, downloads 100 kB, stops it ---------

SMOKE_PIDS=()
cleanup_smoke() { for p in "${SMOKE_PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; }
trap cleanup_smoke EXIT

# Waits until the given UDP/TCP port is bound (at most ~5 s).
wait_port() {
    local proto=$1 port=$2
    for _ in $(seq 50); do
        ss -Hln"${proto:0:1}" "sport = :$port" | grep -q . && return 0
        sleep 0.1
    done
    return 1
}

smoke() {
    local certs=$REPO/certs ok=1
    if [ -x "$BIN/quicgo-server" ]; then
        "$BIN/quicgo-server" -listen 127.0.0.1:24433 -cert "$certs/server-chain.pem" \
            -key "$certs/server.key" >/dev/null 2>&1 &
        SMOKE_PIDS+=($!)
        wait_port udp 24433 || { log "smoke: quicgo-server did not bind"; ok=0; }
        if "$BIN/quicgo-client" -ca "$certs/ca.pem" https://localhost:24433/100000 |
            grep -q '"bytes":100000'; then
            log "smoke: quic-go client <-> quic-go server ok"
        else
            log "smoke: quic-go download FAILED"; ok=0
        fi
        if [ -x "$PREFIX/aioquic-venv/bin/python" ]; then
            local out
            out=$(mktemp -d)
            if "$PREFIX/aioquic-venv/bin/python" "$PREFIX/aioquic-examples/http3_client.py" \
                --insecure --output-dir "$out" https://localhost:24433/100000 \
                >/dev/null 2>&1 && [ "$(stat -c %s "$out/100000")" = 100000 ]; then
                log "smoke: aioquic client -> quic-go server ok"
            else
                log "smoke: aioquic client FAILED"; ok=0
            fi
            rm -rf "$out"
        fi
    fi
    # Each tool's own "print your version" switch (wrk has none that exits 0: presence only).
    local check
    for check in "chromium --version" "h2load --version" "gtlsclient -h" "gtlsserver -h" \
        "nginx -v" "$BIN/vegeta -version" "$BIN/oha --version"; do
        local tool=${check%% *}
        command -v "$tool" >/dev/null 2>&1 || continue
        $check >/dev/null 2>&1 || { log "smoke: '$check' failed"; ok=0; }
    done
    cleanup_smoke
    SMOKE_PIDS=()
    [ $ok -eq 1 ] || die "smoke tests failed"
    log "installed versions ($PREFIX/VERSIONS):"
    sed 's/^/  /' "$PREFIX/VERSIONS"
}

# --- argument handling --------------------------------------------------------------------------

components=()
check_only=0
[ $# -eq 0 ] && set -- --interop
for arg in "$@"; do
    case $arg in
        --interop) components+=(debian aioquic quic-go) ;;
        --load-tools) components+=(debian vegeta oha) ;;
        --all) components+=(debian aioquic quic-go vegeta oha) ;;
        --check) check_only=1 ;;
        debian | aioquic | quic-go | vegeta | oha) components+=("$arg") ;;
        -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
        *) die "unknown component '$arg' (try --help)" ;;
    esac
done

if [ $check_only -eq 0 ]; then
    done_list=" "
    for c in "${components[@]}"; do
        case $done_list in *" $c "*) continue ;; esac
        done_list+="$c "
        case $c in
            debian) install_debian ;;
            aioquic) install_aioquic ;;
            quic-go) install_quic_go ;;
            vegeta) install_vegeta ;;
            oha) install_oha ;;
        esac
    done
fi
smoke
