"""Load test of `arag serve` on loopback: N concurrent clients for T seconds mixing keyword search, semantic
search and ask (a scripted OpenAI-compatible model on 127.0.0.1), bounded in time and count. Prints latency
percentiles per endpoint, throughput, the status codes, and beside them the same searches through the
in-process Index (what the CLI runs) and through `arag search` processes.

    python benchmarks/bench_server.py --clients 50 --seconds 60 [--dataset ../shared/datasets/2wikimultihopqa]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the scripted model server the tests use

from arag.agent import Agent  # noqa: E402
from arag.index import Index  # noqa: E402
from arag.models.endpoint import ChatModel  # noqa: E402
from arag.serve.http import create_app  # noqa: E402
from arag.settings import AgentSettings, IndexSettings, LLMSettings, ServerSettings, Settings  # noqa: E402
from arag.store.embedded.store import EmbeddedStore  # noqa: E402
from support.live_server import LiveServer  # noqa: E402
from support.scripted_server import ScriptedServer, completion  # noqa: E402

WORDS = ["film", "director", "born", "river", "king", "album", "football", "church", "French", "war", "novel"]
QUERIES = ["who directed the film", "where was he born", "the mother of the king", "an album released in 1990"]


def open_index(dataset: Path | None) -> Index:
    if dataset is None:
        from arag.corpus.build import build_index

        path = Path("/tmp/arag-bench-server-sample")
        build_index([ROOT / "samples" / "a-rag-docs"], path, IndexSettings(threads=1), rebuild=True)
        return Index.open(path, threads=1)
    from arag.eval.datasets import load_dataset
    from arag.eval.runner import index_for

    return index_for(load_dataset(dataset, "corpus"), IndexSettings(threads=1))


async def client_loop(base: str, stop_at: float, max_requests: int, stats: dict, seed: int) -> None:
    rng = random.Random(seed)
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        while time.monotonic() < stop_at and stats["sent"] < max_requests:
            stats["sent"] += 1
            kind = rng.choices(["keyword", "semantic", "ask"], weights=[4, 4, 2])[0]
            started = time.perf_counter()
            try:
                if kind == "keyword":
                    body = {"keywords": rng.sample(WORDS, 2), "top_k": 5}
                    response = await client.post("/api/search/keyword", json=body)
                elif kind == "semantic":
                    response = await client.post("/api/search/semantic", json={"query": rng.choice(QUERIES)})
                else:
                    response = await client.post("/api/ask", json={"question": "Who directed the film?"})
                status: int | str = response.status_code
            except httpx.HTTPError as exc:
                status = type(exc).__name__
            elapsed = time.perf_counter() - started
            stats["status"][(kind, status)] += 1
            if status == 200:
                stats["latency"][kind].append(elapsed)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--max-requests", type=int, default=200_000)
    parser.add_argument("--max-asks", type=int, default=4, help="server.max_concurrent_asks")
    parser.add_argument("--dataset", type=Path, default=None)
    args = parser.parse_args()

    index = open_index(args.dataset)
    index.semantic_search("warm up", 1)
    llm = ScriptedServer()
    llm.default = completion("An answer.")
    llm.delay_s = 0.05

    def agent(max_steps: int | None, _index: Index) -> Agent:
        model = ChatModel(LLMSettings(base_url=llm.base_url, model="scripted", max_retries=0))
        return Agent(index, model, AgentSettings(max_steps=max_steps or 5))

    settings = Settings(server=ServerSettings(max_concurrent_asks=args.max_asks))
    server = LiveServer(create_app(index, settings, agent_factory=agent))
    stats: dict = {"sent": 0, "status": Counter(), "latency": defaultdict(list)}
    started = time.monotonic()

    async def run() -> None:
        stop_at = time.monotonic() + args.seconds
        await asyncio.gather(
            *(client_loop(server.url, stop_at, args.max_requests, stats, seed) for seed in range(args.clients))
        )

    asyncio.run(run())
    wall = time.monotonic() - started
    server.close()
    llm.close()

    print(f"{args.clients} clients, {wall:.1f} s, {stats['sent']} requests, corpus {index.store.n_chunks} chunks")
    print("| endpoint | ok | p50 ms | p99 ms | ok/s |")
    print("|---|---|---|---|---|")
    for kind in ("keyword", "semantic", "ask"):
        values = stats["latency"][kind]
        print(
            f"| {kind} | {len(values)} | {1000 * percentile(values, 0.5):.1f} | {1000 * percentile(values, 0.99):.1f} "
            f"| {len(values) / wall:.1f} |"
        )
    print("status codes:", dict(sorted(stats["status"].items(), key=str)))
    errors = {k: v for k, v in stats["status"].items() if k[1] not in (200, 429)}
    print("errors beyond 429:", sum(errors.values()), errors)

    # the same searches without HTTP: the Index in-process (what the CLI runs), then `arag search` processes
    rng = random.Random(0)
    for kind, call in (
        ("keyword", lambda: index.keyword_search(rng.sample(WORDS, 2), 5)),
        ("semantic", lambda: index.semantic_search(rng.choice(QUERIES), 5)),
    ):
        times = []
        for _ in range(200):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        print(f"in-process {kind}: p50 {1000 * statistics.median(times):.2f} ms, {len(times) / sum(times):.0f} q/s")
    if not isinstance(index.store, EmbeddedStore):
        raise SystemExit("bench_server times `arag search` on the embedded store's directory")
    index_location = str(index.store.index_dir)
    cli_times = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "arag", "search", "keyword", "film", "--index", index_location],
            capture_output=True,
            check=True,
        )
        cli_times.append(time.perf_counter() - t0)
    print(f"arag search keyword (a process per query): p50 {statistics.median(cli_times):.2f} s")


if __name__ == "__main__":
    main()
