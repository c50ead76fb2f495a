"""The embedded model's server options against its defaults, on the same agent questions.

    python benchmarks/bench_local_model.py --dataset ../shared/datasets/2wikimultihopqa --questions 2:4 --lookup 8
    python benchmarks/bench_local_model.py --dataset ../shared/datasets/2wikimultihopqa --questions 0:4 \
        --flash-attention on

Runs each question through the compact agent twice, on one llama.cpp server with the default settings (the
baseline) and one with the options given (prompt-lookup drafts of ``--lookup`` tokens, ``--flash-attention``),
alternating which goes first, and prints llama.cpp's own timings. Drafts are verified and flash attention
computes the same attention up to rounding, so both runs make the same calls until a near-tie flips a token; the table
compares only those leading calls whose prompt and completion token counts are identical in both runs, so it
measures speed on identical work.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from arag.agent import Agent
from arag.eval.datasets import load_dataset
from arag.eval.report import processed_tokens
from arag.eval.runner import index_for, select_questions
from arag.models.choice import chat_model
from arag.settings import LLMSettings, Settings
from bench_index import print_table  # the sibling script: same tables


def local_agent(settings: Settings, llm: LLMSettings, index: Any) -> Agent:
    settings = settings.model_copy(update={"llm": llm})
    return Agent(index, chat_model(settings, threads=settings.index.threads)[0], settings.agent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--corpus", default="corpus")
    parser.add_argument("--limit", type=int, default=100, help="the seeded sample, as arag eval run --limit")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--questions", default="0:2", help="slice of the sample, START:END")
    parser.add_argument("--lookup", type=int, default=0, help="prompt-lookup draft tokens of the variant")
    parser.add_argument("--flash-attention", choices=["auto", "on", "off"], default=LLMSettings().flash_attention)
    parser.add_argument("--max-steps", type=int, default=5)
    args = parser.parse_args()
    settings = Settings()
    settings.agent.max_steps = args.max_steps
    dataset = load_dataset(args.dataset, args.corpus, None, None, None)
    start, end = (int(x) for x in args.questions.split(":"))
    questions = select_questions(dataset.questions, args.limit, args.seed)[start:end]
    index = index_for(dataset, settings.index)
    baseline_llm = LLMSettings()
    variant_llm = LLMSettings(lookup_tokens=args.lookup, flash_attention=args.flash_attention)
    if variant_llm == baseline_llm:
        parser.error("give an option that differs from the defaults (--lookup N or --flash-attention)")
    # two servers in one process; the order alternates per question, so a machine that slows down for a while
    # (2 shared cores) does not favour one setting
    agents = {
        "default": local_agent(settings, baseline_llm, index),
        "variant": local_agent(settings, variant_llm, index),
    }
    runs: dict[str, list[list[dict[str, Any]]]] = {"default": [], "variant": []}
    for number, question in enumerate(questions):
        for name in ("default", "variant") if number % 2 == 0 else ("variant", "default"):
            result = agents[name].run(question.question)
            print(f"{name}: {question.question[:60]!r} → {result.stop_reason}, {result.latency_s:.1f} s")
            runs[name].append(result.model_calls)
    totals = {
        name: {"calls": 0, "tokens": 0, "ms": 0.0, "drafted": 0, "accepted": 0, "prompt_n": 0, "prompt_ms": 0.0}
        for name in runs
    }
    for base_calls, variant_calls in zip(runs["default"], runs["variant"], strict=True):
        for calls in zip(base_calls, variant_calls, strict=False):
            work = ("prompt_tokens", "cached_tokens", "completion_tokens")
            if [calls[0][key] for key in work] != [calls[1][key] for key in work]:
                break  # the trajectories diverged: later calls do different work
            for name, call in zip(runs, calls, strict=True):
                total = totals[name]
                total["calls"] += 1
                total["tokens"] += call["completion_tokens"]
                total["ms"] += call.get("generation_ms", 0.0)
                total["drafted"] += call.get("drafted_tokens", 0)
                total["accepted"] += call.get("accepted_drafts", 0)
                total["prompt_n"] += processed_tokens(call)
                total["prompt_ms"] += call.get("prompt_ms", 0.0)
    rows = []
    base = totals["default"]
    for name, llm in (("default", baseline_llm), ("variant", variant_llm)):
        total = totals[name]
        rows.append(
            {
                "server": f"{name}: lookup {llm.lookup_tokens}, flash attention {llm.flash_attention}",
                "identical calls": total["calls"],
                "generated tokens": total["tokens"],
                "generation ms per token": total["ms"] / max(1, total["tokens"]),
                "prompt ms per token": total["prompt_ms"] / max(1, total["prompt_n"]),
                "drafts accepted": f"{total['accepted']} of {total['drafted']}" if llm.lookup_tokens else "-",
                "generation time vs default": total["ms"] / max(1e-9, base["ms"]),
                "prompt time vs default": total["prompt_ms"] / max(1e-9, base["prompt_ms"]),
                "call time vs default": (total["ms"] + total["prompt_ms"]) / max(1e-9, base["ms"] + base["prompt_ms"]),
            }
        )
    print_table(list(rows[0]), rows, "{:.2f}")


if __name__ == "__main__":
    main()
