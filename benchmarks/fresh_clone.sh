#!/usr/bin/env bash
# The README's main command as a new user meets it: a fresh clone, an empty HOME, then
# "bash scripts/setup.sh local && bash scripts/demo.sh", each half timed, what the screen showed kept, and the sizes.
#   bash benchmarks/fresh_clone.sh OUT_DIR          # with this machine's pip configuration (its mirrors, if any)
#   COLD=1 bash benchmarks/fresh_clone.sh OUT_DIR   # no pip cache, no local wheels or mirrors: pypi.org only
# Writes OUT_DIR/setup.log, OUT_DIR/demo.log and OUT_DIR/times.txt; figures go to docs/models.md.
set -euo pipefail
out=$(realpath -m "${1:?usage: fresh_clone.sh OUT_DIR}")
source_repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
mkdir -p "$out"
if [ "${COLD:-0}" = 1 ]; then
  export PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS= PIP_NO_CACHE_DIR=1 PIP_INDEX_URL=https://pypi.org/simple
  unset PIP_EXTRA_INDEX_URL
fi
work=$(mktemp -d)
git clone -q "$source_repo" "$work/a-rag"
cd "$work/a-rag"
HOME=$(mktemp -d)
export HOME
received() { awk 'NR > 2 && $1 != "lo:" { total += $2 } END { printf "%.0f\n", total }' /proc/net/dev; }
bytes0=$(received)
t0=$(date +%s.%N)
bash scripts/setup.sh local > "$out/setup.log" 2>&1
t1=$(date +%s.%N)
bash scripts/demo.sh > "$out/demo.log" 2>&1
t2=$(date +%s.%N)
{
  echo "commit $(git rev-parse --short HEAD)"
  echo "setup_s $(echo "$t1 - $t0" | bc)"
  echo "demo_s $(echo "$t2 - $t1" | bc)"
  echo "received_MB $(( ($(received) - bytes0) / 1000000 ))"
  echo "venv $(du -sh .venv | cut -f1)"
  echo "cache $(du -sh "$HOME/.cache/arag" | cut -f1)"
  echo "clone $work/a-rag"
} > "$out/times.txt"
cat "$out/times.txt"
