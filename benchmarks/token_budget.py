"""Where an agent run's time went: processed and generated tokens per question, and what the generated ones were.

    python benchmarks/token_budget.py runs/2wiki-arag-full-v11 [more run dirs] [--first 40]

For each run directory of ``arag eval run`` (embedded model, compact profile), reads the recorded model calls
and trajectories and prints, per question: model calls, prompt tokens the server processed (not from its KV
cache), generated tokens, and the generated tokens split into the "found" notes, the actions (JSON frame and
arguments, as the grammar makes the model write them: nested, or flat since 600c451) and the final answer;
"other" is the rest (the first action's plan, the final turn's own note and replies cut off at the token limit,
which the records do not keep). Reads the harness made for the model generated nothing and are not counted.
Tokens are counted with the embedded model's own tokenizer (llama.cpp's /tokenize). The last columns turn the
run's measured ms per token into seconds per question, so a lever's saving can be read before it is built.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import httpx

from arag.eval.report import model_calls_of, processed_tokens
from arag.models.local import LocalServer, resolve_model
from bench_index import print_table  # the sibling script: same tables


def action_text(step: dict[str, Any], flat: bool) -> tuple[str, str]:
    """The note and the rest of a step's action, as the compact grammar spells it (top_k is not in it): nested
    ({"action": …, "arguments": {…}}, runs before flat actions) or flat ({"<tool>": <argument>})."""
    arguments = {k: v for k, v in (step.get("arguments") or {}).items() if k != "top_k"}
    note = str(step.get("thought") or "")
    if flat:
        value = next(iter(arguments.values())) if len(arguments) == 1 else arguments
        return note, json.dumps({"found": "", step.get("tool"): value} if note else {step.get("tool"): value})
    return note, json.dumps({"found": "", "action": step.get("tool"), "arguments": arguments}, ensure_ascii=False)


def answer_text(answer: str, flat: bool) -> str:
    spelled = {"found": "", "answer": answer} if flat else {"found": "", "action": "final_answer", "answer": answer}
    return json.dumps(spelled, ensure_ascii=False)


def flat_actions(run: Path) -> bool:
    """Whether the run's model wrote flat actions: the config records it since 600c451's successor; a run of
    600c451 itself is known by its agent.action_notes setting, which came with the flat actions."""
    settings = json.loads((run / "config.json").read_text()).get("settings", {})
    recorded = settings.get("protocol", {}).get("actions")
    if recorded is not None:
        return str(recorded).startswith("flat")
    return "action_notes" in (settings.get("agent") or {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--first", type=int, default=0, help="Only the first N questions of the run's sample.")
    args = parser.parse_args()
    server = LocalServer(resolve_model(None), threads=1)
    tokenize_url = server.base_url.removesuffix("/v1") + "/tokenize"
    counted: dict[str, int] = {}

    def tokens(text: str) -> int:
        if not text:
            return 0
        if text not in counted:
            reply = httpx.post(tokenize_url, json={"content": text}, timeout=60)
            reply.raise_for_status()
            counted[text] = len(reply.json()["tokens"])
        return counted[text]

    rows = []
    for run in args.runs:
        records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
        if args.first > 0:
            # the sample's order is the run's config (records are in finishing order)
            order = json.loads((run / "config.json").read_text()).get("question_ids") or []
            by_id = {r["id"]: r for r in records}
            records = [by_id[i] for i in order[: args.first] if i in by_id]
        records = [r for r in records if r.get("model_calls")]
        if not records:
            raise SystemExit(f"{run}: no question with recorded model calls")
        calls = model_calls_of(records)
        timed = [c for c in calls if "generation_ms" in c]
        processed = sum(processed_tokens(c) for c in calls)
        generated = sum(c["completion_tokens"] for c in calls)
        ms_processed = sum(c["prompt_ms"] for c in timed) / max(1, sum(processed_tokens(c) for c in timed))
        ms_generated = sum(c["generation_ms"] for c in timed) / max(1, sum(c["completion_tokens"] for c in timed))
        notes = actions = answers = 0
        flat = flat_actions(run)
        for record in records:
            for step in record.get("trajectory") or []:
                if step.get("thought") == "(harness)":
                    continue  # a read the harness made: the model wrote nothing
                note, frame = action_text(step, flat)
                notes += tokens(note)
                actions += tokens(frame)
            answers += tokens(answer_text(record.get("prediction") or "", flat))
        n = len(records)
        rows.append(
            {
                "run": run.name,
                "questions": n,
                "model calls": len(calls) / n,
                "processed": processed / n,
                "generated": generated / n,
                "found notes": notes / n,
                "actions": actions / n,
                "final answer": answers / n,
                "other": (generated - notes - actions - answers) / n,
                "ms / processed": ms_processed,
                "ms / generated": ms_generated,
                "s processing": processed / n * ms_processed / 1000,
                "s generating": generated / n * ms_generated / 1000,
                "p50 s": statistics.median(r["latency_s"] for r in records),
            }
        )
    print_table(list(rows[0]), rows, "{:.1f}")
    server.close()


if __name__ == "__main__":
    main()
