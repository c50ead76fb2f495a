"""Prompt-lookup speculative decoding on the embedded model: on or off, on the same agent questions.

    python benchmarks/bench_lookup.py --dataset ../shared/datasets/2wikimultihopqa --questions 2:4 --lookup 8

Runs each question through the compact agent twice, on one llama.cpp server without drafts (the baseline)
and one drafting ``--lookup`` tokens (alternating which goes first), and prints llama.cpp's own timings.
Drafts are verified, so both runs make the same calls until a near-tie flips a token; the table compares only
those leading calls whose prompt and completion token counts are identical in both runs, so it measures
decoding speed on identical work.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from arag.agent import Agent
from arag.eval.datasets import load_dataset
from arag.eval.report import processed_tokens
from arag.eval.runner import index_for, select_questions
from arag.runtime import chat_model
from arag.settings import LLMSettings, Settings
from bench_index import print_table  # the sibling script: same tables


def lookup_agent(settings: Settings, lookup: int, index: Any) -> Agent:
    settings = settings.model_copy(update={"llm": LLMSettings(lookup_tokens=lookup)})
    return Agent(index, chat_model(settings, threads=settings.index.threads)[0], settings.agent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--corpus", default="corpus")
    parser.add_argument("--limit", type=int, default=100, help="the seeded sample, as arag eval run --limit")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--questions", default="0:2", help="slice of the sample, START:END")
    parser.add_argument("--lookup", type=int, default=8)
    parser.add_argument("--max-steps", type=int, default=5)
    args = parser.parse_args()
    settings = Settings()
    settings.agent.max_steps = args.max_steps
    dataset = load_dataset(args.dataset, args.corpus, None, None, None)
    start, end = (int(x) for x in args.questions.split(":"))
    questions = select_questions(dataset.questions, args.limit, args.seed)[start:end]
    index = index_for(dataset, settings.index)
    # two servers in one process; the order alternates per question, so a machine that slows down for a while
    # (2 shared cores) does not favour one setting; prompt processing, which drafts do not touch, is the control
    agents = {0: lookup_agent(settings, 0, index), args.lookup: lookup_agent(settings, args.lookup, index)}
    baseline: list[list[dict[str, Any]]] = []
    drafted: list[list[dict[str, Any]]] = []
    for number, question in enumerate(questions):
        order = (0, args.lookup) if number % 2 == 0 else (args.lookup, 0)
        for lookup in order:
            result = agents[lookup].run(question.question)
            print(f"lookup {lookup}: {question.question[:60]!r} → {result.stop_reason}, {result.latency_s:.1f} s")
            (baseline if lookup == 0 else drafted).append(result.model_calls)
    totals = {
        name: {"calls": 0, "tokens": 0, "ms": 0.0, "drafted": 0, "accepted": 0, "prompt_n": 0, "prompt_ms": 0.0}
        for name in ("off", "on")
    }
    for base_calls, draft_calls in zip(baseline, drafted, strict=True):
        for off, on in zip(base_calls, draft_calls, strict=False):
            work = ("prompt_tokens", "cached_tokens", "completion_tokens")
            if [off[key] for key in work] != [on[key] for key in work]:
                break  # the trajectories diverged: later calls do different work
            for name, call in (("off", off), ("on", on)):
                total = totals[name]
                total["calls"] += 1
                total["tokens"] += call["completion_tokens"]
                total["ms"] += call.get("generation_ms", 0.0)
                total["drafted"] += call.get("drafted_tokens", 0)
                total["accepted"] += call.get("accepted_drafts", 0)
                total["prompt_n"] += processed_tokens(call)
                total["prompt_ms"] += call.get("prompt_ms", 0.0)
    rows = []
    for name, lookup in (("off", 0), ("on", args.lookup)):
        total = totals[name]
        rows.append(
            {
                "lookup tokens": lookup,
                "identical calls": total["calls"],
                "generated tokens": total["tokens"],
                "generation s": total["ms"] / 1000,
                "ms per token": total["ms"] / max(1, total["tokens"]),
                "drafts accepted": f"{total['accepted']} of {total['drafted']}" if lookup else "-",
                "generation time vs off": total["ms"] / max(1e-9, totals["off"]["ms"]),
                "prompt ms per token (control)": total["prompt_ms"] / max(1, total["prompt_n"]),
            }
        )
    print_table(list(rows[0]), rows, "{:.2f}")


if __name__ == "__main__":
    main()
