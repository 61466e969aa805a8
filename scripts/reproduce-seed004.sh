#!/usr/bin/env bash
# Seed 004 (Qi et al., "Performance Analysis of QUIC-UDP Protocol Under High Load") with quiclab:
# an 11,000-byte page requested at constant rates of 50-1000 req/s over HTTP/1.1 + TLS, HTTP/2 and
# HTTP/3, against quiclab's own server (all three), quic-go's and ngtcp2's HTTP/3 servers (the seed
# compared two QUIC implementations, gQUIC and IETF QUIC; no gQUIC stack runs here, so we compare
# three IETF QUIC servers: quinn, quic-go and ngtcp2, each loaded by quiclab's HTTP/3 client), on
# loopback.
# Then one request per protocol, unloaded, with its latency and the packets it took (from a pcap),
# and the paper's Tables 1-4 beside ours (`quiclab load paper`, into OUT_DIR/paper.md).
#
# Usage: bash scripts/reproduce-seed004.sh [--emu] [OUT_DIR] [DURATION]   (defaults: out/seed004, 10s)
# SINGLE_ONLY=1 skips the sweeps and redoes only the single-request table.
# Pools open connections eagerly (`--pool-growth eager`: one per request that finds none free, as
# browsers do), as when docs/studies/seed004.md's tables were measured; the load tester's default
# (patient) opens fewer and queues briefly instead.
#
# --emu (root): the same sweeps through the emulator instead of loopback, on seed 004's path
# (scenarios/studies/seed004/path.toml: 100 Mbit/s, 20 ms round trip) at 0% and 1% random loss:
# `quiclab load sweep --via` puts each server in a server namespace behind the forwarder and the
# load generator in a client namespace. Each sweep runs with two pools: `single` (up to 256
# HTTP/1.1 connections, ONE HTTP/2 and ONE HTTP/3 connection: the configuration of
# docs/studies/seed004.md's emulator tables, where one QUIC connection collapses at 1% loss) and
# `default` (the load tester's defaults: 64 HTTP/1.1, 4 HTTP/2 and HTTP/3 connections). Writes
# OUT_DIR/emu-loss{0,1}/{single,default}/{quiclab,quic-go,ngtcp2}/h{1.1,2,3}/table.md (+ emulator.json:
# the path and each attack's bottleneck counters), OUT_DIR/emu-summary.md (both pools side by
# side) and OUT_DIR/emu-single.md (one request on a new connection, median of 11, per protocol
# and loss). SERVERS="quiclab quic-go ngtcp2 nginx" adds nginx (HTTP/1.1 and HTTP/2); POOLS="single"
# runs one pool; RATES overrides the request rates. A request not answered within TIMEOUT
# (default 5s here: at 1% loss one connection cannot carry the higher rates, and a 30 s limit
# would make every such point last 40 s) counts as failed.
set -euo pipefail
cd "$(dirname "$0")/.."
emu=
if [ "${1:-}" = "--emu" ]; then emu=1; shift; fi
out=${1:-out/seed004}
duration=${2:-10s}
rates=${RATES:-50,100,150,200,250,300,350,400,600,800,1000}
peers=${QUICLAB_PEERS:-/opt/quiclab-peers}
q=${QUICLAB_BIN:-target/release/quiclab}
[ -n "${QUICLAB_BIN:-}" ] || cargo build --release --locked -q -p quiclab
mkdir -p "$out"

# Background processes to stop on exit (servers, captures), whatever part of the script made them.
pids=()

# One request to URL over HTTP/$http on a new connection, captured on interface IFACE (inside
# namespace NS, or the host's when NS is empty) with capture filter FILTER into PCAP. Prints
# "packets bytes largest-frame" of the capture.
capture_request() {
    local ns=$1 iface=$2 filter=$3 url=$4 http=$5 pcap=$6
    local run=()
    [ -n "$ns" ] && run=(ip netns exec "$ns")
    "${run[@]}" tshark -q -i "$iface" -f "$filter" -w "$pcap" >/dev/null 2>&1 &
    local tpid=$!
    pids+=("$tpid")
    sleep 2
    # HTTP/3 starts at 1200-byte datagrams and probes upwards, as the load tester does (quic-go
    # drops Initials above 1452 bytes).
    local quic_args=()
    [ "$http" = 3 ] && quic_args=(--mtu 1228 --mtu-discovery)
    "${run[@]}" "$q" get "$url" --http "$http" --json "${quic_args[@]}" >/dev/null
    sleep 0.5
    kill "$tpid" 2>/dev/null || true
    wait "$tpid" 2>/dev/null || true
    tshark -r "$pcap" -T fields -e frame.len 2>/dev/null |
        awk '{n++; s+=$1; if ($1>m) m=$1} END {print n+0, s+0, m+0}'
}

# The seed's Table 1 on a real 1500-byte-MTU path: a client and a server namespace joined by one
# veth pair (no emulated delay), segmentation and receive offloads off so that a capture shows the
# packets as they would cross a wire (on loopback the 11 kB response is one 64 kB segment). One
# request per protocol on a new connection, set-up and close included, captured on the client's
# end. Needs root; the namespaces and processes it makes are removed even when it fails.
table1_netns() {
    local out=$1 tag="qs4t$$" ns_c ns_s
    ns_c="$tag-c"
    ns_s="$tag-s"
    local tmpd
    tmpd=$(mktemp -d)
    # shellcheck disable=SC2317  # called by the trap
    netns_cleanup() {
        for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
        for p in "${pids[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
        pids=()
        ip netns del "$ns_c" 2>/dev/null || true
        ip netns del "$ns_s" 2>/dev/null || true
        rm -rf "$tmpd"
    }
    # EXIT, not RETURN: under `set -e` a failing command leaves the script without returning.
    trap netns_cleanup EXIT
    ip netns add "$ns_c"
    ip netns add "$ns_s"
    ip link add "${tag}c" netns "$ns_c" type veth peer name "${tag}s" netns "$ns_s"
    ip -n "$ns_c" addr add 10.99.2.2/24 dev "${tag}c"
    ip -n "$ns_s" addr add 10.99.2.1/24 dev "${tag}s"
    for end in "$ns_c:${tag}c" "$ns_s:${tag}s"; do
        IFS=: read -r ns dev <<<"$end"
        ip -n "$ns" link set lo up
        ip -n "$ns" link set "$dev" mtu 1500 up
        ip netns exec "$ns" ethtool -K "$dev" tso off gso off gro off tx-udp-segmentation off >/dev/null 2>&1 ||
            ip netns exec "$ns" ethtool -K "$dev" tso off gso off gro off >/dev/null
    done
    ip netns exec "$ns_s" "$q" serve --listen 10.99.2.1:4433 --ready-file "$tmpd/ready" --quiet &
    pids+=($!)
    for _ in $(seq 100); do [ -s "$tmpd/ready" ] && break; sleep 0.1; done
    ip netns exec "$ns_s" "$peers/bin/quicgo-server" -listen 10.99.2.1:4434 -cert certs/server-chain.pem \
        -key certs/server.key >"$tmpd/quicgo.log" 2>&1 &
    pids+=($!)
    mkdir -p "$tmpd/docroot"
    head -c 11000 /dev/zero >"$tmpd/docroot/11000"
    ip netns exec "$ns_s" gtlsserver -q -d "$tmpd/docroot" 10.99.2.1 4435 certs/server.key certs/server-chain.pem \
        >"$tmpd/ngtcp2.log" 2>&1 &
    pids+=($!)
    sleep 1
    local md="$out/single-mtu1500.md" csv="$out/single-mtu1500.csv"
    {
        echo "| server | HTTP | packets (one request), median of 5 [min-max] | bytes on the wire, median of 5 | largest frame (bytes) |"
        echo "|---|---|---:|---:|---:|"
    } >"$md"
    echo 'server,HTTP,packets (one request),bytes on the wire,largest frame (bytes)' >"$csv"
    for spec in "quiclab:4433:1.1" "quiclab:4433:2" "quiclab:4433:3" "quic-go:4434:3" "ngtcp2:4435:3"; do
        IFS=: read -r name p http <<<"$spec"
        # Five requests, each captured alone: ACK timing and the close vary by a few packets.
        local counts=""
        for i in 1 2 3 4 5; do
            counts+="$(capture_request "$ns_c" "${tag}c" "host 10.99.2.1 and port $p" \
                "https://10.99.2.1:$p/11000" "$http" "$tmpd/$name-$http-$i.pcap")"$'\n'
        done
        read -r packets range bytes largest < <(printf '%s' "$counts" | python3 -c '
import statistics, sys
rows = [list(map(int, l.split())) for l in sys.stdin if l.strip()]
n = [r[0] for r in rows]
print(int(statistics.median(n)), f"{min(n)}-{max(n)}", int(statistics.median(r[1] for r in rows)), max(r[2] for r in rows))')
        echo "| $name | $http | $packets [$range] | $bytes | $largest |" >>"$md"
        echo "$name,$http,$packets,$bytes,$largest" >>"$csv"
    done
    netns_cleanup
    trap - EXIT
    echo "== one request on a 1500-byte-MTU namespace pair ($md)"
    cat "$md"
}

if [ -n "$emu" ]; then
    table1_netns "$out"
    [ -n "${TABLE1_ONLY:-}" ] && exit 0
    path=scenarios/studies/seed004/path.toml
    servers=${SERVERS:-quiclab quic-go ngtcp2}
    timeout=${TIMEOUT:-5s}
    single="$out/emu-single.md"
    {
        echo "| server | HTTP | loss | latency, median of 11 (ms, new connection incl. handshake) |"
        echo "|---|---|---:|---:|"
    } >"$single"
    for loss in 0 1; do
        for server in $servers; do
            case $server in
                quic-go | ngtcp2) versions=3 ;;
                nginx) versions=1.1,2 ;;
                *) versions=1.1,2,3 ;;
            esac
            for pool in ${POOLS:-single default}; do
                for http in ${versions//,/ }; do
                    conns=()
                    if [ "$pool" = single ]; then
                        if [ "$http" = 1.1 ]; then conns=(--connections 256); else conns=(--connections 1); fi
                    fi
                    echo "== through the emulator, $loss% loss: $server, HTTP/$http, $pool pool, at $rates req/s, $duration each"
                    $q load sweep --via "$path" --set "link.loss=$loss%" --server "$server" --size 11000 \
                        --rates "$rates" --duration "$duration" --http "$http" --timeout "$timeout" \
                        --pool-growth eager "${conns[@]}" --out "$out/emu-loss$loss/$pool/$server/h$http"
                done
            done
            # One request at a time, each on a new connection (the seed's Table 1, latency only).
            for http in ${versions//,/ }; do
                f="$out/emu-loss$loss/single-request-$server-h$http.jsonl"
                $q load attack --via "$path" --set "link.loss=$loss%" --server "$server" --size 11000 \
                    --http "$http" --rate 2/s --requests 11 --new-connection-per-request --output "$f"
                ms=$($q load report --type json "$f" |
                    python3 -c 'import json,sys; print("%.3f" % json.load(sys.stdin)["latency_ms"]["p50"])')
                echo "| $server | $http | $loss% | $ms |" >>"$single"
            done
        done
    done
    echo "== single request through the emulator"
    cat "$single"
    # One compact table per loss rate: mean latency (success %) per rate, protocol/server and pool.
    python3 - "$out" $servers <<'PY' | tee "$out/emu-summary.md"
import csv, glob, os, sys
out, servers = sys.argv[1], sys.argv[2:]
for loss in ("0", "1"):
    cols, cells, rates = [], {}, []
    tables = [
        (pool, server, path)
        for pool in ("single", "default")
        for server in servers
        for path in sorted(glob.glob(os.path.join(out, f"emu-loss{loss}", pool, server, "h*", "table.csv")))
    ]
    for pool, server, path in tables:
        for row in csv.DictReader(open(path)):
            col = f"{server} HTTP/{row['http']} ({pool})"
            if col not in cols:
                cols.append(col)
            rate = float(row["rate_per_s"])
            if rate not in rates:
                rates.append(rate)
            cells[(rate, col)] = "%.1f (%s%%)" % (float(row["mean_latency_ms"]), row["success_pct"])
    if not cols:
        continue
    print(f"\n{loss}% loss: mean latency, ms (success %)\n")
    print("| rate (req/s) | " + " | ".join(cols) + " |")
    print("|---:|" + "---:|" * len(cols))
    for r in sorted(rates):
        print(f"| {r:g} | " + " | ".join(cells.get((r, c), "–") for c in cols) + " |")
PY
    exit 0
fi
tmp=$(mktemp -d)
cleanup() {
    for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT

wait_file() { for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done; echo "timeout waiting for $1" >&2; exit 1; }

# quiclab serve on an ephemeral loopback port (TCP and UDP share the number).
$q serve --listen 127.0.0.1:0 --ready-file "$tmp/ready" --quiet &
pids+=($!)
wait_file "$tmp/ready"
port=$(sed 's/.*://' "$tmp/ready")
# quic-go's HTTP/3 server on the next free port we pick.
gport=$((port + 1))
"$peers/bin/quicgo-server" -listen "127.0.0.1:$gport" -cert certs/server-chain.pem -key certs/server.key \
    >"$tmp/quicgo.log" 2>&1 &
pids+=($!)
# ngtcp2's HTTP/3 server (GnuTLS example program) on the port after, serving the page from a docroot.
nport=$((port + 2))
mkdir -p "$tmp/docroot"
head -c 11000 /dev/zero >"$tmp/docroot/11000"
gtlsserver -q -d "$tmp/docroot" 127.0.0.1 "$nport" certs/server.key certs/server-chain.pem >"$tmp/ngtcp2.log" 2>&1 &
pids+=($!)
sleep 1

if [ -z "${SINGLE_ONLY:-}" ]; then
echo "== quiclab serve: HTTP/1.1, HTTP/2, HTTP/3 at $rates req/s, $duration each"
$q load sweep --rates "$rates" --duration "$duration" --http 1.1,2,3 --pool-growth eager --out "$out/quiclab" \
    "https://localhost:$port/11000"
echo "== quic-go server: HTTP/3"
$q load sweep --rates "$rates" --duration "$duration" --http 3 --pool-growth eager --out "$out/quic-go" \
    "https://localhost:$gport/11000"
echo "== ngtcp2 server: HTTP/3"
$q load sweep --rates "$rates" --duration "$duration" --http 3 --pool-growth eager --out "$out/ngtcp2" \
    "https://localhost:$nport/11000"
fi

# One unloaded request per protocol: latency from `quiclab get`, packets from a loopback capture.
# single.csv holds the same table for `quiclab load paper` (its headers are the metric names).
single="$out/single.md"
single_csv="$out/single.csv"
{
    echo "| server | HTTP | latency, median of 11 (ms, new connection incl. handshake) | packets (one request) | bytes on the wire |"
    echo "|---|---|---:|---:|---:|"
} >"$single"
echo 'server,HTTP,"latency, median of 11 (ms, new connection incl. handshake)",packets (one request),bytes on the wire' >"$single_csv"
for spec in "quiclab:$port:1.1" "quiclab:$port:2" "quiclab:$port:3" "quic-go:$gport:3" "ngtcp2:$nport:3"; do
    IFS=: read -r name p http <<<"$spec"
    read -r packets bytes _ < <(capture_request "" lo "port $p" "https://localhost:$p/11000" "$http" \
        "$tmp/single-$name-$http.pcap")
    quic_args=()
    [ "$http" = 3 ] && quic_args=(--mtu 1228 --mtu-discovery)
    # Latency: the median of 11 more requests, each on a new connection (one is too noisy).
    ms=$(for _ in $(seq 11); do
        $q get "https://localhost:$p/11000" --http "$http" --json "${quic_args[@]}" |
            python3 -c 'import json,sys; print("%.3f" % (json.load(sys.stdin)["total_s"] * 1000))'
    done | sort -n | sed -n 6p)
    echo "| $name | $http | $ms | $packets | $bytes |" >>"$single"
    echo "$name,$http,$ms,$packets,$bytes" >>"$single_csv"
done
echo "== single request"
cat "$single"
if [ -z "${SINGLE_ONLY:-}" ]; then
    echo "== the paper's numbers beside ours ($out/paper.md)"
    $q load paper scenarios/studies/seed004/paper.toml "$out"
fi
