"""The agent loop's own overhead per step (model time excluded), and the embedded model's speed.

    python benchmarks/bench_agent.py                 # loop overhead only (scripted model, no HTTP)
    python benchmarks/bench_agent.py --local         # + local model tokens/s and time per question

Loop overhead = wall time of a run − time inside the model − time inside the tools, per step.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from arag.agent import Agent
from arag.corpus.build import build_index
from arag.index import Index
from arag.models.endpoint import ChatModel, ChatTurn, Usage
from arag.settings import AgentSettings, IndexSettings, LLMSettings

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "a-rag-docs"


class ScriptedModel(ChatModel):
    """Answers instantly: a keyword search, a semantic search, a read, then the answer."""

    def __init__(self) -> None:
        super().__init__(LLMSettings(model="scripted", base_url="http://127.0.0.1:9/v1"))
        self.model_time = 0.0
        self.turn = 0

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        parallel_tool_calls: bool | None = None,
        deadline: float | None = None,
    ) -> ChatTurn:
        started = time.perf_counter()
        script = [
            ("keyword_search", '{"keywords": ["keyword_search", "score"]}'),
            ("semantic_search", '{"query": "how are chunks scored"}'),
            ("chunk_read", '{"chunk_ids": ["a-rag-docs/about-a-rag.md#0"]}'),
        ]
        step = self.turn % (len(script) + 1)
        self.turn += 1
        if step < len(script) and tools:
            name, args = script[step]
            call = {"id": f"c{self.turn}", "type": "function", "function": {"name": name, "arguments": args}}
            turn = ChatTurn(
                {"role": "assistant", "content": "", "tool_calls": [call]},
                "",
                [call],
                "tool_calls",
                Usage(100, 10, 0, 1),
            )
        else:
            turn = ChatTurn(
                {"role": "assistant", "content": "By occurrences x length [chunk a-rag-docs/about-a-rag.md#0]"},
                "By occurrences x length [chunk a-rag-docs/about-a-rag.md#0]",
                [],
                "stop",
                Usage(100, 10, 0, 1),
            )
        self.model_time += time.perf_counter() - started
        return turn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--local", action="store_true")
    parser.add_argument("--index", type=Path, default=None)
    args = parser.parse_args()
    index_dir = args.index or Path(tempfile.mkdtemp()) / "idx"
    if not (index_dir / "manifest.json").exists():
        build_index([SAMPLE], index_dir, IndexSettings(), rebuild=True)
    index = Index.open(index_dir)
    index.semantic_search("warm up the embedder", 1)

    model = ScriptedModel()
    agent = Agent(index, model, AgentSettings(max_steps=10))
    overheads, tool_times = [], []
    for _ in range(args.runs):
        model.model_time = 0.0
        started = time.perf_counter()
        result = agent.run("How does keyword_search score a chunk?")
        wall = time.perf_counter() - started
        tools = sum(s.latency_s for s in result.trajectory)
        overheads.append((wall - model.model_time - tools) / result.steps)
        tool_times.append(tools / result.steps)
    print(
        f"loop overhead per step (model and tools excluded), {args.runs} runs x 3 steps: "
        f"p50 {1000 * statistics.median(overheads):.2f} ms, "
        f"p95 {1000 * sorted(overheads)[int(0.95 * len(overheads))]:.2f} ms"
    )
    print(f"tool time per step (same runs): p50 {1000 * statistics.median(tool_times):.2f} ms")

    if not args.local:
        return
    from arag.models.choice import chat_model
    from arag.settings import Settings

    local, _ = chat_model(Settings())
    prompt = (SAMPLE / "about-a-rag.md").read_text() * 2
    started = time.perf_counter()
    turn = local.complete([{"role": "user", "content": prompt + "\nSummarize in one sentence."}])
    first = time.perf_counter() - started
    started = time.perf_counter()
    gen = local.complete([{"role": "user", "content": "Write a 150-word story about a library."}])
    gen_s = time.perf_counter() - started
    print(
        f"local model: prompt {turn.usage.prompt_tokens} tokens + {turn.usage.completion_tokens} generated in "
        f"{first:.1f}s; generation {gen.usage.completion_tokens} tokens in {gen_s:.1f}s "
        f"= {gen.usage.completion_tokens / gen_s:.1f} tokens/s (incl. a short prompt)"
    )
    agent = Agent(index, local, AgentSettings(max_steps=5), json_actions=True)
    for question in [
        "How does keyword_search score a chunk?",
        "What does the context tracker do?",
        "Which embedding model is the default and how many dimensions does it produce?",
    ]:
        started = time.perf_counter()
        result = agent.run(question)
        print(
            f"  {time.perf_counter() - started:.1f}s, {result.steps} steps, {result.stop_reason}: "
            f"{question} -> {result.answer[:100]!r}"
        )


if __name__ == "__main__":
    main()
