#!/usr/bin/env bash
# quiclab's Python environment (idempotent): a virtual environment in .venv/ with the pinned
# packages of python/requirements.txt, and the quiclab package (python/quiclab plus the native
# module built from crates/py by maturin) installed into it in editable mode. Afterwards
# `.venv/bin/python -c "import quiclab"` works. Called by scripts/setup.sh.
#
#   bash scripts/python.sh             the extension built with the `py` cargo profile
#                                      (release optimisation, no whole-program LTO)
#   bash scripts/python.sh --release   the extension built with the release profile (fat LTO:
#                                      ~10 more minutes of build, a few per cent faster)
#
# Nothing is assumed installed beyond python3 and the Rust toolchain: python3-venv comes from
# apt if `python3 -m venv` cannot make an environment.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=py
case "${1:-}" in
    "") ;;
    --release) profile=release ;;
    *) echo "usage: scripts/python.sh [--release]" >&2; exit 2 ;;
esac

need_root() { if [ "$(id -u)" -ne 0 ]; then echo "sudo"; fi; }
SUDO=$(need_root)
venv=.venv

if ! command -v python3 >/dev/null 2>&1; then
    echo "python: installing python3"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq python3 >/dev/null
fi

if [ ! -x "$venv/bin/python" ]; then
    # Debian's python3 lacks ensurepip until python3-venv is installed; a failed attempt leaves
    # a half-made directory behind, which is ours to remove.
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        rm -rf -- "$venv"
        echo "python: installing python3-venv"
        export DEBIAN_FRONTEND=noninteractive
        $SUDO apt-get update -qq
        $SUDO apt-get install -y -qq python3-venv >/dev/null
        python3 -m venv "$venv"
    fi
fi

# Reinstall the pinned packages only when the requirements file changed since the last time.
stamp="$venv/.quiclab-requirements.sha256"
want=$(sha256sum python/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    echo "python: installing python/requirements.txt into $venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r python/requirements.txt
    echo "$want" > "$stamp"
fi

# maturin rebuilds only what changed (cargo decides) and reinstalls the editable package.
echo "python: building the quiclab extension (cargo profile $profile)"
(
    cd python
    VIRTUAL_ENV="$PWD/../$venv" PATH="$PWD/../$venv/bin:$PATH" \
        maturin develop --quiet --profile "$profile" >/dev/null
)
"$venv/bin/python" -c "import quiclab" >/dev/null
echo "python: $venv/bin/python -c 'import quiclab' works"
