"""The agent under many configurations against a model that answers every request at random within its grammar
(tests/support/random_model.py), every request and every result dumped: run it with two builds and compare, to show
that a change to the agent changed nothing it sends or records (no local model needed: a few seconds a seed).

    PYTHONPATH=BEFORE/src python benchmarks/random_runs.py --seeds 8 --out runs/random-before.jsonl  # a checkout
    python benchmarks/random_runs.py --seeds 8 --out runs/random-after.jsonl
    python benchmarks/random_runs.py --compare runs/random-before.jsonl runs/random-after.jsonl

The configurations cover every policy (the compact default, each one off by default switched on, several
switched off, their settings), JSON, flat JSON and native actions, the paper's profile, smaller step limits, tool
subsets, view overrides, and a conversation of follow-up questions. A result is compared in today's terms: a
record written before the harness (its plan, rereads and steps' confidences) is read as today's policy_records.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the random model is the tests' too
from arag.agent import Agent, Conversation
from arag.corpus.build import build_index
from arag.index import Index
from arag.settings import AgentSettings, IndexSettings
from support.random_model import RandomModel, varied_corpus

QUESTIONS = [
    "When did Lothair II's mother die?",
    "Who was the sister of the lay abbot of St. Maurice's Abbey?",
    "Who died first, Hucbert or Anne of Kiev?",
    "Did Ermengarde of Tours die in 851?",
    "Which film came out first, Fortunella or Town 7?",
    "Where was the director of Fortunella born?",
    "What did the abbot's sister marry?",
    "Who was Person 12's father?",
    "Is Town 7 a village?",
    "Where did Ermengarde of Tours marry Lothair I?",
]
EXTRAS = ["+option_check", "+supported_answer", "+same_name", "+confident_stop"]
CONFIGS: list[tuple[str, bool, dict[str, Any]]] = [
    ("compact", True, {}),
    ("compact+option_check", True, {"policies": ["+option_check"]}),
    ("compact+supported_answer", True, {"policies": ["+supported_answer"]}),
    ("compact+same_name", True, {"policies": ["+same_name"]}),
    ("compact+confident_stop", True, {"policies": ["+confident_stop"]}),
    ("compact-found_notes", True, {"policies": ["-found_notes"]}),
    ("compact-plan", True, {"policies": ["-plan"]}),
    ("compact-phrase-allowance", True, {"policies": ["-phrase_answer", "-read_allowance"]}),
    ("compact-new_text_reads", True, {"policies": ["-new_text_reads"]}),
    ("compact notes on the answer", True, {"policy": {"found_notes": {"on_calls": False}}}),
    ("compact notes on calls", True, {"policy": {"found_notes": {"on_answer": False}}}),
    ("compact plan on answers", True, {"policy": {"plan": {"on_answer": True}}, "policies": EXTRAS[:2]}),
    ("compact flat", True, {"action_mode": "flat-json"}),
    ("compact 3 steps", True, {"max_steps": 3, "stall_limit": 3}),
    ("compact inline and title reads", True, {"view": {"inline_read_tokens": 300, "title_reads": True}}),
    ("compact without chunk_read", True, {"tools": ["keyword_search", "semantic_search"]}),
    ("compact without semantic_search", True, {"tools": ["keyword_search", "chunk_read"]}),
    ("compact and every extra", True, {"policies": EXTRAS}),
    ("paper json", True, {"profile": "paper"}),
    ("paper native", False, {}),
    ("paper native+confident_stop", False, {"policies": ["+confident_stop"], "max_steps": 4}),
    ("paper native parallel", False, {"parallel_tool_calls": True, "policies": ["+plan", "+same_name"]}),
    ("compact native", False, {"profile": "compact"}),
    ("compact native and extras", False, {"profile": "compact", "policies": EXTRAS[::3]}),
]


def in_todays_terms(agent: Agent, result: Any) -> dict[str, Any]:
    """A result as a dict, its timings left out, a result of before the harness written as today's."""
    data = result.to_dict()
    for timed in (data, *data["trajectory"], *data["model_calls"]):
        timed.pop("latency_s", None)
    data.pop("cost", None)
    records = data.pop("policy_records", None)
    if records is None:  # before the harness: the plan, the rereads and each step's confidence
        records = {}
        names = agent.bundle.policy_names
        if "plan" in names and data.get("plan"):
            records["plan"] = {"plan": data["plan"]}
        for reread in data.get("rereads") or []:
            records.setdefault(reread["policy"], {})["reread"] = {"before": reread["before"], "after": reread["after"]}
        if "confident_stop" in names:
            records["confident_stop"] = {
                "stated": [s["confidence"] for s in data["trajectory"] if s["origin"] == "model"]
            }
    for key in ("plan", "rereads"):
        data.pop(key, None)
    for step in data["trajectory"]:
        step.pop("confidence", None)
        step.pop("fields", None)
    data["policy_records"] = records
    data["policies_acted"] = dict(sorted(data["policies_acted"].items()))
    return data


def run(out: Path, seeds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        build_index([varied_corpus(Path(tmp))], Path(tmp) / "idx", IndexSettings(embedder="fake", threads=1))
        index = Index.open(Path(tmp) / "idx", threads=1)
        with out.open("w", encoding="utf-8") as handle:
            for name, local, options in CONFIGS:
                for seed in range(seeds):
                    model = RandomModel(seed, local)
                    agent = Agent(index, model, AgentSettings(**options))
                    for number, question in enumerate(QUESTIONS):
                        model.requests.clear()
                        result = in_todays_terms(agent, agent.run(question))
                        line = {"config": name, "seed": seed, "question": number, "requests": model.requests}
                        handle.write(json.dumps({**line, "result": result}) + "\n")
                    model.requests.clear()
                    talk = Conversation(agent)
                    results = [in_todays_terms(agent, talk.ask(q)) for q in QUESTIONS[:3]]
                    line = {"config": name, "seed": seed, "question": "conversation", "requests": model.requests}
                    handle.write(json.dumps({**line, "result": results}) + "\n")


def compare(before: Path, after: Path) -> int:
    """Print the runs whose requests or results differ; return how many do."""
    old = [json.loads(line) for line in before.open(encoding="utf-8")]
    new = [json.loads(line) for line in after.open(encoding="utf-8")]
    assert len(old) == len(new), "the two dumps are of different configurations or seeds"
    differ, requests, acted = 0, 0, dict[str, int]()
    for a, b in zip(old, new, strict=True):
        requests += len(a["requests"])
        for result in b["result"] if isinstance(b["result"], list) else [b["result"]]:
            for name in result["policies_acted"]:
                acted[name] = acted.get(name, 0) + 1
        if a["requests"] != b["requests"] or a["result"] != b["result"]:
            differ += 1
            same = next((i for i, (x, y) in enumerate(zip(a["requests"], b["requests"], strict=False)) if x != y), None)
            where = f"request {same}" if same is not None else "the result"
            print(f"{a['config']} seed {a['seed']} question {a['question']}: differs from {where} on")
    print(f"{len(old)} runs, {requests} model requests: {len(old) - differ} the same, {differ} differ")
    print("runs in which each policy acted:", ", ".join(f"{k} {v}" for k, v in sorted(acted.items())))
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="the dump to write")
    parser.add_argument("--seeds", type=int, default=8, help="random models per configuration")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"), help="two dumps to compare")
    args = parser.parse_args()
    if args.compare:
        sys.exit(1 if compare(*args.compare) else 0)
    if args.out is None:
        parser.error("give --out, or --compare BEFORE AFTER")
    run(args.out, args.seeds)


if __name__ == "__main__":
    main()
