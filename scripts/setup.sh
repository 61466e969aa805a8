#!/usr/bin/env bash
# Installs everything quiclab needs on a fresh Debian machine (idempotent; run as root or with sudo).
# The Rust toolchain itself must already be present (rustup); everything else comes from here.
set -euo pipefail

need_root() { if [ "$(id -u)" -ne 0 ]; then echo "sudo"; fi; }
SUDO=$(need_root)

if ! command -v cargo >/dev/null 2>&1; then
    echo "error: cargo not found. quiclab needs a Rust toolchain >= 1.88 (rustup)." >&2
    exit 1
fi

# tshark reads the simulator's pcap files in the test suite (decryption with the TLS key log).
if ! command -v tshark >/dev/null 2>&1; then
    echo "setup: installing tshark"
    export DEBIAN_FRONTEND=noninteractive
    echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq tshark >/dev/null
fi

# quiche (flow.stack = "quiche") builds its vendored BoringSSL with cmake and a C++ compiler,
# and generates BoringSSL's bindings with bindgen, which loads libclang.
if ! dpkg -s libclang-dev >/dev/null 2>&1 || ! command -v cmake >/dev/null 2>&1 \
    || ! command -v g++ >/dev/null 2>&1; then
    echo "setup: installing libclang-dev, cmake and g++ (quiche's BoringSSL)"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq libclang-dev cmake g++ >/dev/null
fi

# `quiclab plot` converts figures to PDF and PNG with the text in DejaVu Sans.
if [ ! -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then
    echo "setup: installing fonts-dejavu-core"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq fonts-dejavu-core >/dev/null
fi

# The emulator builds its namespaces and veth pairs with iproute2's `ip` (offloads are switched
# off through the ethtool ioctl directly, so no ethtool binary is needed).
if ! command -v ip >/dev/null 2>&1; then
    echo "setup: installing iproute2"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq iproute2 >/dev/null
fi

# The emulator's split-TCP PEP (flow.pep) diverts TCP to its relay with netfilter TPROXY rules
# loaded by `nft` inside the PEP's namespace.
if ! command -v nft >/dev/null 2>&1; then
    echo "setup: installing nftables"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq nftables >/dev/null
fi

# The test command checks formatting and lints (rustfmt, clippy): add them where rustup manages
# the toolchain and they are missing.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
        echo "setup: installing rustfmt and clippy"
        rustup component add rustfmt clippy
    else
        echo "error: cargo fmt and cargo clippy are needed (rustup component add rustfmt clippy)" >&2
        exit 1
    fi
fi

# Fetch crates once so later builds work offline and CI's build step is pure compilation.
cargo fetch --locked -q

# The Python package (quiclab + pandas, pyarrow, dask, ...) in .venv/: see scripts/python.sh.
bash "$(dirname "$0")/python.sh"
