#!/usr/bin/env bash
# The web page and HTTP API on the sample corpus, offline: open http://127.0.0.1:${PORT:-8000}/
#   bash scripts/setup.sh local && bash scripts/serve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. .venv/bin/activate
arag index samples/a-rag-docs --index .arag-sample-index
exec arag serve --index .arag-sample-index --runs "${RUNS:-runs}" --port "${PORT:-8000}"
