"""What a user needs of an answer, measured per run: right where the documents hold it, "not in the documents" where
they do not, the second hop followed, and the evidence cited.

Accuracy alone rewards an answer that always says something. Each measure here is a proportion with its Wilson
interval and n (arag.eval.stats), read off a run's records:

=====================  ==========================================================================================
``answerable``         right answers of the answerable questions (key terms, else LLM-Acc, else Contain-Acc)
``multi_hop``          the same, of the multi-hop questions only (2Wiki compositional, bridge-comparison, inference;
                       GraphRAG-Bench complex reasoning; HotpotQA bridge; MuSiQue 2-4 hops)
``absent_said``        absent questions (arag.eval.absent) answered "not in the documents"
``false_refusals``     answerable questions answered "not in the documents"
``cites_evidence``     right answers that cite a chunk holding the answer
``unshown_cited``      answers citing a chunk the run was never shown (should be none)
``own_answers``        answers the model gave itself (not forced by a limit, not the harness's instead)
``stalled``            runs that ended stuck: a loop guard ended them, or the step limit did after the model
                       repeated calls it had made (``LOOP_REPEATS`` or more)
=====================  ==========================================================================================

and ``latency_p50_s``. A record says it refused in ``not_found`` (records older than the field: its text, read by
``arag.text.says_not_found``) and what it cited in ``citations``: ``cited``, ``unshown`` (cited, never shown) and
``holding`` (cited and holding the answer: its text contains a gold answer or matches the key terms, or it holds a
gold passage).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Collection
from typing import Any

from arag.agent.prompts import REPEATED
from arag.citations import cited_ids
from arag.eval.stats import Estimate, accuracy
from arag.text import normalize_answer, says_not_found

# Repeated calls after which a run that reached the step limit counts as stalled: a run the harness keeps going with
# something to show for each repeat never meets the stall guard, and goes round its loop to the step limit; two
# repeats are common in runs that then answer (docs/notebook/2026-12-07-runs-that-go-round.md).
LOOP_REPEATS = 3
MULTI_HOP_TYPES = frozenset(["compositional", "bridge_comparison", "inference", "complex reasoning", "bridge"])
_HOPS = re.compile(r"^[2-9]hop")  # MuSiQue's question ids and types: "2hop", "3hop1", …
MEASURES = (
    "answerable",
    "multi_hop",
    "absent_said",
    "false_refusals",
    "cites_evidence",
    "unshown_cited",
    "own_answers",
    "stalled",
)


def is_multi_hop(record: dict[str, Any]) -> bool:
    kind = str(record.get("type") or "").lower()
    return kind in MULTI_HOP_TYPES or bool(_HOPS.match(kind))


def refused(record: dict[str, Any]) -> bool:
    """Whether the record's answer says the documents do not hold what was asked."""
    if "not_found" in record:
        return bool(record["not_found"])
    return says_not_found(str(record.get("prediction") or ""))


def correct(record: dict[str, Any]) -> float | None:
    """The record's score as a right answer: key terms where the run was scored by them (None: not scored), else
    LLM-Acc where a judge ran, else Contain-Acc. A refusal is not a right answer."""
    if refused(record):
        return 0.0 if _scored(record) is not None else None
    return _scored(record)


def _scored(record: dict[str, Any]) -> float | None:
    if "key_terms_acc" in record:
        value = record["key_terms_acc"]
    elif record.get("llm_acc") is not None:
        value = record["llm_acc"]
    else:
        value = record.get("contain_acc")
    return None if value is None else float(value)


def citation_record(
    prediction: str,
    shown: Collection[str],
    text_of: Callable[[list[str]], dict[str, str]],
    holds_answer: Callable[[str, str], bool],
) -> dict[str, list[str]]:
    """What an answer cites: every id, those never shown, and those whose chunk holds the answer
    (``holds_answer(chunk_id, text)``); ``text_of`` gives the text of the known ids."""
    cited = cited_ids(prediction, shown)
    texts = text_of(cited) if cited else {}
    return {
        "cited": cited,
        "unshown": [c for c in cited if c not in shown],
        "holding": [c for c in cited if c in texts and holds_answer(c, texts[c])],
    }


def answer_holder(
    answers: list[str], gold_chunks: set[str], key_terms_score: Callable[[str], float | None] | None
) -> Callable[[str, str], bool]:
    """Whether a chunk holds the answer: it is a gold passage's chunk, its text matches the key terms, or (where no
    key terms score the question) it contains a gold answer that is more than yes or no."""
    normals = [n for n in (normalize_answer(a) for a in answers) if n and n not in ("yes", "no")]

    def holds(chunk_id: str, text: str) -> bool:
        if chunk_id in gold_chunks:
            return True
        if key_terms_score is not None:
            score = key_terms_score(text)
            if score is not None:
                return bool(score)
        padded = f" {normalize_answer(text)} "
        return any(f" {n} " in padded for n in normals)

    return holds


def scores(record: dict[str, Any]) -> dict[str, float | None]:
    """The record's 0/1 score on each measure it bears on (None: not this measure's question)."""
    absent = bool(record.get("absent"))
    right = None if absent else correct(record)
    citations = record.get("citations") if isinstance(record.get("citations"), dict) else None
    return {
        "answerable": right,
        "multi_hop": right if is_multi_hop(record) else None,
        "absent_said": float(refused(record)) if absent else None,
        "false_refusals": None if absent else float(refused(record)),
        "cites_evidence": float(bool(citations.get("holding"))) if citations is not None and right == 1.0 else None,
        "unshown_cited": float(bool(citations.get("unshown"))) if citations is not None else None,
        "own_answers": float(_own(record)),
        "stalled": float(stalled(record)),
    }


def measures(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Every measure of the module's table over ``records``, each as an Estimate's dict (value, interval, n)."""
    scored = [scores(r) for r in records]
    out: dict[str, Any] = {}
    for name in MEASURES:
        estimate = accuracy([s[name] for s in scored])
        out[name] = estimate.to_dict() if estimate.n else None
    latencies = [float(r["latency_s"]) for r in records if r.get("latency_s") is not None]
    out["latency_p50_s"] = statistics.median(latencies) if latencies else None
    return out


def repeated_calls(record: dict[str, Any]) -> int:
    """The calls of the record's trajectory that repeated one made before (the loop refused or replaced each)."""
    return sum(1 for step in record.get("trajectory") or [] if str(step.get("observation") or "").startswith(REPEATED))


def stalled(record: dict[str, Any]) -> bool:
    """Whether the run ended stuck (:func:`stuck`), from its stop reason and its trajectory."""
    return stuck(record.get("stop_reason"), repeated_calls(record))


def stuck(stop_reason: str | None, repeats: int) -> bool:
    """A loop guard ended the run, or the step limit did after ``LOOP_REPEATS`` or more repeated calls."""
    return stop_reason == "stalled" or (stop_reason == "max_steps" and repeats >= LOOP_REPEATS)


def _own(record: dict[str, Any]) -> bool:
    return record.get("stop_reason") == "answered" and record.get("answer_from", "model") == "model"


def describe(measured: dict[str, Any]) -> list[tuple[str, str]]:
    """(measure, "value [interval] (n)") rows for a report; a measure no record bears on shows "—"."""
    rows = []
    for name in MEASURES:
        value = measured.get(name)
        shown = "—"
        if value:
            estimate = Estimate(value["value"], value["ci95_low"], value["ci95_high"], value["n"])
            shown = estimate.percent()
        rows.append((name, shown))
    p50 = measured.get("latency_p50_s")
    rows.append(("latency_p50_s", "—" if p50 is None else f"{p50:.1f}"))
    return rows
