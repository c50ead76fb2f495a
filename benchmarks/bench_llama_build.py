"""Prompt and generation speed of the installed llama.cpp build (the embedded model), on fixed prompts.

    python benchmarks/bench_llama_build.py --dataset ../shared/datasets/2wikimultihopqa
    # the same in a venv holding the other build (ARAG_LLAMA_BUILD=wheel bash scripts/setup.sh local keeps the
    # prebuilt AVX2 wheel), then compare the two tables

    # llama.cpp's OpenMP threads: how long a waiting thread spins (libgomp reads it at load; arag sets 3000)
    for spins in 0 3000 300000; do GOMP_SPINCOUNT=$spins python benchmarks/bench_llama_build.py \
        --dataset ../shared/datasets/2wikimultihopqa --sizes 1000 --busy 1; done

Two builds cannot share one process (one xllamacpp module), so each run prints its own build's instruction sets
beside its figures. Each prompt is a slice of the dataset's passages of about the given number of tokens, sent
with llama.cpp's prompt cache off so every repeat processes the whole prompt; the table gives llama.cpp's own
timings (median over the repeats): prompt tokens per second and generated tokens per second. ``--busy N`` keeps N
other processes computing beside the server (another job sharing the cores); "idle CPU" is the CPU time the
process used per second of idling after the requests (threads still spinning).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import time
from pathlib import Path

import httpx

from arag.models.llama_build import build_info
from arag.models.local import LocalServer, resolve_model


def passages(dataset: Path) -> str:
    corpus = json.loads((dataset / "corpus.json").read_text(encoding="utf-8"))
    return "\n\n".join(f"{p.get('title', '')}\n{p.get('text', '')}" for p in corpus[:400])


def _spin() -> None:
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, required=True, help="a dataset folder with corpus.json")
    parser.add_argument("--model", default=None, help="a known model name or a GGUF path (the default model)")
    parser.add_argument("--sizes", default="250,1000,2000", help="prompt sizes in tokens (about 4 chars each)")
    parser.add_argument("--generate", type=int, default=64, help="tokens generated per call")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--busy", type=int, default=0, help="other processes kept computing during the requests")
    args = parser.parse_args()
    text = passages(args.dataset)
    server = LocalServer(resolve_model(args.model), threads=args.threads)
    print(f"llama.cpp build: {build_info()}")
    waiting = {name: os.environ.get(name) for name in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    print(f"OpenMP waiting: {waiting}; busy processes beside: {args.busy}")
    busy = [multiprocessing.get_context("spawn").Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for process in busy:
        process.start()
    print("| prompt tokens | prompt tokens/s | generated tokens | generated tokens/s |")
    print("|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        prompt_speed, generation_speed, counts = [], [], (0, 0)
        for repeat in range(args.repeats):
            start = repeat * 4 * size  # another slice per repeat: nothing is served from a cache
            body = {
                "messages": [{"role": "user", "content": "Summarise:\n" + text[start : start + 4 * size]}],
                "max_tokens": args.generate,
                "temperature": 0,
                "cache_prompt": False,
                "ignore_eos": True,
            }
            timings = httpx.post(server.base_url + "/chat/completions", json=body, timeout=900).json()["timings"]
            prompt_speed.append(timings["prompt_per_second"])
            generation_speed.append(timings["predicted_per_second"])
            counts = (timings["prompt_n"], timings["predicted_n"])
        print(
            f"| {counts[0]} | {statistics.median(prompt_speed):.1f} | {counts[1]} "
            f"| {statistics.median(generation_speed):.1f} |"
        )
    for process in busy:
        process.terminate()
    cpu_before, idle_s = time.process_time(), 3.0
    time.sleep(idle_s)
    print(f"idle CPU: {(time.process_time() - cpu_before) / idle_s:.2f} s per s")


if __name__ == "__main__":
    main()
