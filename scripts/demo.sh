#!/usr/bin/env bash
# The main job, offline: index the sample corpus that ships with a-rag and let the embedded model answer.
set -euo pipefail
cd "$(dirname "$0")/.."
. .venv/bin/activate
arag index samples/a-rag-docs --index .arag-sample-index --rebuild
arag ask "${1:-How does keyword_search score a chunk?}" --index .arag-sample-index --max-steps "${MAX_STEPS:-5}"
