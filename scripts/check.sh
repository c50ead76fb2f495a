#!/usr/bin/env bash
# Lint, type-check and test. Any failure (including pytest finding no tests, exit 5) fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
. .venv/bin/activate
ruff check src tests benchmarks
ruff format --check src tests benchmarks
mypy
lint-imports --no-cache
python -m pytest -q "$@"
