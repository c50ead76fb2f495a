"""Failure analysis (the paper's §5.3): why was each wrong answer wrong?

With A-RAG the bottleneck moves from "did not find the documents" to "found them but reasoned wrongly".
Each question of a run gets one primary tag, decided from its record (the trajectory's retrieval and
read recall of the gold evidence, the stop reason, the prediction):

=================  ==================================================================================
``correct``        Contain-Acc 1
``error``          the method failed (endpoint error, malformed reply); see the record's ``error``
``no_answer``      an empty prediction
``stalled``        the agent repeated itself until the loop guard or the step limit forced an answer, and it was wrong
``budget``         max_steps, the token or the time budget forced an answer, and it was wrong
``retrieval_miss`` no gold passage was ever shown to the model
``seen_not_read``  some gold passage was shown only as a search snippet, never read in full
``partial``        some gold passage was read, another never seen (a missed hop)
``reasoning``      every gold passage was read in full, and the answer is still wrong
``no_gold``        the question's gold evidence is not in the corpus: retrieval cannot be judged
``false_refusal``  an answerable question answered "not in the documents"
``made_up``        an absent question (its evidence taken out) answered with something
=================  ==================================================================================

An absent question answered "not in the documents" is ``correct``.

and, where an LLM judge ran, the flag ``judge_disagreement`` when Contain-Acc and LLM-Acc disagree
(correct by one, wrong by the other), whatever the primary tag.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from arag.errors import ConfigError
from arag.eval.measures import describe, measures, refused, stalled
from arag.eval.runs import CONFIG, METHOD_LABELS, RESULTS, read_results

TAGS = (
    "correct",
    "error",
    "no_answer",
    "stalled",
    "budget",
    "retrieval_miss",
    "seen_not_read",
    "partial",
    "reasoning",
    "no_gold",
    "false_refusal",
    "made_up",
)
FAILURE_TAGS = TAGS[1:]
ANALYSIS = "analysis.jsonl"
FORCED = ("max_steps", "token_budget", "time_budget")
# methods whose search results carry full chunk text: what they saw, they read
FULL_TEXT_METHODS = ("naive-rag", "arag-no-read")


def tag_record(record: dict[str, Any], method: str | None = None) -> dict[str, Any]:
    """The primary tag and flags of one result record."""
    flags: list[str] = []
    llm = record.get("llm_acc")
    contain = record.get("contain_acc")
    if llm is not None and contain is not None and (llm >= 0.5) != (contain >= 0.5):
        flags.append("judge_disagreement")
    seen = record.get("retrieval_recall")
    read = seen if method in FULL_TEXT_METHODS else record.get("read_recall")
    if record.get("absent"):
        tag = "correct" if refused(record) else "made_up"
    elif contain is not None and contain >= 0.5:
        tag = "correct"
    elif refused(record):
        tag = "false_refusal"
    elif record.get("error"):
        tag = "error"
    elif not str(record.get("prediction") or "").strip():
        tag = "no_answer"
    elif stalled(record):
        tag = "stalled"
    elif record.get("stop_reason") in FORCED:
        tag = "budget"
    elif seen is None:
        tag = "no_gold"
    elif seen == 0:
        tag = "retrieval_miss"
    elif read is not None and read >= 1:
        tag = "reasoning"
    elif read is not None and read < seen:
        tag = "seen_not_read"
    else:
        tag = "partial"
    return {"id": record.get("id"), "tag": tag, "flags": flags}


def analyze_run(run_dir: Path, write: bool = True) -> dict[str, Any]:
    """Tags every question of a run; writes ``RUN_DIR/analysis.jsonl`` (atomically) and returns the breakdown."""
    results = run_dir / RESULTS
    if not results.is_file():
        if not write:  # a report over a summary-only run: nothing to tag
            return {"run_dir": str(run_dir), "method": None, "dataset": None, "questions": 0, "wrong": 0,
                    "tags": dict.fromkeys(TAGS, 0), "judge_disagreements": 0, "verification": None}  # fmt: skip
        raise ConfigError(f"{run_dir} has no {RESULTS} (not an 'arag eval run' directory)")
    config: dict[str, Any] = {}
    if (run_dir / CONFIG).is_file():
        try:
            config = json.loads((run_dir / CONFIG).read_text(encoding="utf-8"))
        except ValueError:
            raise ConfigError(f"{run_dir / CONFIG} is not valid JSON") from None
    method = config.get("method")
    records = list(read_results(results).values())
    tags = [tag_record(r, method) for r in records]
    if write:
        tmp = run_dir / (ANALYSIS + ".tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            for tagged in tags:
                handle.write(json.dumps(tagged, ensure_ascii=False) + "\n")
        os.replace(tmp, run_dir / ANALYSIS)
    counts = Counter(t["tag"] for t in tags)
    return {
        "run_dir": str(run_dir),
        "method": method,
        "dataset": config.get("dataset"),
        "questions": len(tags),
        "wrong": len(tags) - counts["correct"],
        "tags": {tag: counts[tag] for tag in TAGS},
        "judge_disagreements": sum(1 for t in tags if "judge_disagreement" in t["flags"]),
        "verification": verification_breakdown(records, tags),
        "measures": measures(records),
    }


def verification_breakdown(records: list[dict[str, Any]], tags: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Supported / unsupported answers (agent.verify_answers) against correct / wrong, and how well "unsupported"
    finds the wrong answers (precision: of the answers flagged, the wrong ones; recall: of the wrong, the flagged)."""
    pairs = [
        (bool(r["verification"]["supported"]), t["tag"] == "correct")
        for r, t in zip(records, tags, strict=True)
        if isinstance(r.get("verification"), dict)
    ]
    if not pairs:
        return None
    cells = Counter(pairs)
    flagged_wrong, flagged = cells[(False, False)], cells[(False, False)] + cells[(False, True)]
    wrong = cells[(False, False)] + cells[(True, False)]
    return {
        "checked": len(pairs),
        "supported_correct": cells[(True, True)],
        "supported_wrong": cells[(True, False)],
        "unsupported_correct": cells[(False, True)],
        "unsupported_wrong": flagged_wrong,
        "precision": flagged_wrong / flagged if flagged else None,
        "recall": flagged_wrong / wrong if wrong else None,
    }


def breakdown_markdown(analyses: list[dict[str, Any]]) -> str:
    """One row per run: how many of its wrong answers fall under each failure tag."""

    head = "| Method | Dataset | Questions | Wrong | " + " | ".join(FAILURE_TAGS) + " | Judge disagreements |"
    lines = ["## Failure analysis (wrong answers by cause)", "", head, "|---" * (len(FAILURE_TAGS) + 5) + "|"]
    for a in analyses:
        cells = [str(a["tags"][tag]) for tag in FAILURE_TAGS]
        label = METHOD_LABELS.get(a["method"] or "", a["method"] or "?") + f" · {Path(a['run_dir']).name}"
        lines.append(
            f"| {label} | {a['dataset']} | {a['questions']} | {a['wrong']} | "
            + " | ".join(cells)
            + f" | {a['judge_disagreements']} |"
        )
    lines += [
        "",
        "retrieval_miss: gold never shown; seen_not_read: gold only in snippets; partial: a hop never found; "
        "reasoning: all gold read, still wrong; stalled / budget: a forced answer; see `arag/eval/analyze.py`.",
    ]
    measured = [a for a in analyses if a.get("measures")]
    if measured:
        rows = [describe(a["measures"]) for a in measured]
        head = "| Run | " + " | ".join(name for name, _ in rows[0]) + " |"
        lines += ["", "## What a user needs (arag/eval/measures.py)", "", head, "|---" * (len(rows[0]) + 1) + "|"]
        for a, row in zip(measured, rows, strict=True):
            lines.append(f"| {Path(a['run_dir']).name} | " + " | ".join(shown for _, shown in row) + " |")
    verified = [a for a in analyses if a.get("verification")]
    if verified:
        lines += ["", "## Answer verification (agent.verify_answers) against correctness", "",
                  "| Run | Checked | Supported ✓ | Supported ✗ | Unsupported ✓ | Unsupported ✗ | Precision | Recall |",
                  "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for a in verified:
            v = a["verification"]
            rates = [f"{100 * v[k]:.0f} %" if v[k] is not None else "–" for k in ("precision", "recall")]
            cells = [str(v[k]) for k in ("checked", "supported_correct", "supported_wrong", "unsupported_correct")]
            lines.append(
                f"| {Path(a['run_dir']).name} | " + " | ".join([*cells, str(v["unsupported_wrong"]), *rates]) + " |"
            )
        lines += ["", "✓ correct, ✗ wrong (Contain-Acc); precision: of the unsupported answers, the wrong ones; "
                  "recall: of the wrong answers, the unsupported ones."]  # fmt: skip
    return "\n".join(lines) + "\n"
