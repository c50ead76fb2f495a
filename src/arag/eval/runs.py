"""Reading evaluation runs: a run directory holds ``config.json`` (what was run: its identity), ``results.jsonl``
(one record per answered question, appended as it finishes) and ``summary.json`` (written at the end). The CLI's
reports, the web page's run browser and the benchmarks read runs through here."""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from arag.errors import ARagError
from arag.eval.metrics import KeyTerms
from arag.harness.reads import searches_in
from arag.tools.toolkit import TOOL_NAMES

RESULTS, SUMMARY, CONFIG = "results.jsonl", "summary.json", "config.json"


METHOD_LABELS = {
    "direct": "Direct answer",
    "naive-rag": "Naive RAG",
    "arag-naive": "A-RAG (Naive)",
    "arag-full": "A-RAG (Full)",
    "arag-tables": "A-RAG (Full) + table tools",
    "arag-documents": "A-RAG (Full) + document tools",
    "arag-extended": "A-RAG (Full) + every tool",
    "arag-fused": "A-RAG (fused search + read)",
    "arag-search": "A-RAG (Full) + fused search",
    "arag-no-keyword": "A-RAG w/o keyword_search",
    "arag-no-semantic": "A-RAG w/o semantic_search",
    "arag-no-read": "A-RAG w/o chunk_read",
}


def read_results(path: Path, repair: bool = False) -> dict[str, dict[str, Any]]:
    """The finished records of a ``results.jsonl``, by question id. With ``repair`` (the runner, before it
    appends), a torn last line (killed mid-write) is cut off so the file stays valid JSON Lines; readers (reports,
    the run browser) never write, since the last line may be one a live run is still writing."""
    finished: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return finished
    data = path.read_bytes()
    good = 0
    for number, line in enumerate(data.splitlines(keepends=True), 1):
        if not line.endswith(b"\n"):
            break
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            break
        if not isinstance(record, dict) or not isinstance(record.get("id"), str | int):
            raise ARagError(f"{path}: line {number} is not a result record (a JSON object with an id): damaged")
        finished[str(record["id"])] = record
        good += len(line)
    if repair and good != len(data):
        with path.open("r+b") as handle:
            handle.truncate(good)
    return finished


READ_HEADER = re.compile(r"^\[chunk (.+?)\](?= \(|$)", re.M)  # a chunk_read observation's "[chunk ID]" lines


def chunks_read_in_order(record: dict[str, Any]) -> list[str]:
    """The chunks a result record's trajectory read (the harness's reads included), each once, in the order their
    text was shown. A read names its chunks by id or by a search's hit label ("hit 1"), so the ids are taken from
    what the read showed ("[chunk ID]" lines), else from its arguments."""
    read: list[str] = []
    for step in record.get("trajectory") or []:
        if step.get("tool") != "chunk_read":
            continue
        shown = READ_HEADER.findall(str(step.get("observation") or ""))
        read.extend(shown or (str(c) for c in (step.get("arguments") or {}).get("chunk_ids") or []))
    return list(dict.fromkeys(read))


def chunks_read(record: dict[str, Any]) -> list[str]:
    """The chunks a result record's trajectory read, sorted (:func:`chunks_read_in_order`); the chunks it was shown
    when it read none."""
    return sorted(chunks_read_in_order(record)) or sorted(str(c) for c in record.get("retrieved_chunks") or [])


def searched(record: dict[str, Any]) -> list[str]:
    """What a result record's searches looked for, as a policy reads a live run's (``arag.harness.reads``)."""
    steps = ((str(step.get("tool")), step.get("arguments") or {}) for step in record.get("trajectory") or [])
    return searches_in(steps, TOOL_NAMES[0], TOOL_NAMES[1])


def mean_present(values: list[float | None]) -> float | None:
    """The mean of the values that are not None (None if none is)."""
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def summarize(results_path: Path, config: dict[str, Any], wall_s: float | None = None) -> dict[str, Any]:
    from arag.eval.measures import measures
    from arag.eval.stats import accuracy

    records = list(read_results(results_path).values())
    costs = [r.get("cost") for r in records]
    latencies = sorted(float(r["latency_s"]) for r in records if r.get("latency_s") is not None)
    return {
        "method": config.get("method"),
        "dataset": config.get("dataset"),
        "model": config.get("model"),
        "max_steps": ((config.get("settings") or {}).get("agent") or {}).get("max_steps"),
        "judge_model": config.get("judge_model"),
        "questions": len(records),
        "contain_acc": mean_present([r["contain_acc"] for r in records]),
        "contain_acc_ci95": accuracy([r["contain_acc"] for r in records]).to_dict() if records else None,
        "llm_acc_ci95": accuracy([r.get("llm_acc") for r in records]).to_dict()
        if any(r.get("llm_acc") is not None for r in records)
        else None,
        "llm_acc": mean_present([r.get("llm_acc") for r in records]),
        "key_terms_acc": mean_present([r.get("key_terms_acc") for r in records]),
        "key_terms_acc_ci95": accuracy([r.get("key_terms_acc") for r in records]).to_dict()
        if any(r.get("key_terms_acc") is not None for r in records)
        else None,
        "exact_match": mean_present([r.get("exact_match") for r in records]),
        "f1": mean_present([r.get("f1") for r in records]),
        "retrieval_recall": mean_present([r.get("retrieval_recall") for r in records]),
        "read_recall": mean_present([r.get("read_recall") for r in records]),
        "retrieved_tokens": mean_present([r["retrieved_tokens"] for r in records]),
        "steps": mean_present([r["steps"] for r in records]),
        "cost_per_question": mean_present(costs) if any(c is not None for c in costs) else None,
        "answered_rate": mean_present([1.0 if r["stop_reason"] == "answered" else 0.0 for r in records]),
        "stop_reasons": dict(sorted(Counter(str(r["stop_reason"]) for r in records).items())),
        "errors": sum(1 for r in records if r.get("error")),
        "latency_s": mean_present([r["latency_s"] for r in records]),
        "latency_p50_s": statistics.median(latencies) if latencies else None,
        "wall_s_last_session": wall_s,
        "measures": measures(records),
    }


def load_runs(run_dirs: list[Path], key_terms: KeyTerms | None = None) -> list[dict[str, Any]]:
    """Each run's summary and its per-question records. A run still in progress (or stopped) has no
    summary.json yet: its summary is computed from the results it has, and says so. With ``key_terms``, every
    answer is (re)scored by them."""
    from arag.errors import ConfigError

    runs = []
    for run_dir in run_dirs:
        summary_path, results_path, config_path = run_dir / SUMMARY, run_dir / RESULTS, run_dir / CONFIG
        if not results_path.is_file() and not summary_path.is_file():
            raise ConfigError(f"{run_dir} has no {SUMMARY} and no {RESULTS} (run 'arag eval run' first)")
        try:
            if summary_path.is_file():
                summary = json.loads(summary_path.read_text(encoding="utf-8"))
                partial = False
                if not isinstance(summary, dict):
                    raise ValueError(SUMMARY)
            else:
                config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
                if not isinstance(config, dict):
                    raise ValueError(CONFIG)
                summary, partial = summarize(results_path, config), True
        except ValueError:  # not JSON, or JSON that is not an object
            raise ConfigError(f"{run_dir} holds a summary or config that is not a JSON object") from None
        records = list(read_results(results_path).values())  # none for a summary copied without its results
        if key_terms is not None:
            for record in records:
                record["key_terms_acc"] = key_terms.score(str(record["id"]), str(record.get("prediction") or ""))
            scored = [r["key_terms_acc"] for r in records if r["key_terms_acc"] is not None]
            summary["key_terms_acc"] = sum(scored) / len(scored) if scored else None
        if records:  # read off the records as they are now (rescored, or a run older than the measures)
            from arag.eval.measures import measures

            summary["measures"] = measures(records)
        runs.append({**summary, "run_dir": str(run_dir), "records": records, "partial": partial})
    return runs


def threshold_changes(record: dict[str, Any], recorded: float, threshold: float) -> bool:
    """Whether confident_stop at ``threshold`` would take another path than the record's, made at ``recorded``:
    it stops after the first of the model's tool calls that states ``threshold`` or more."""
    recorded_stated = ((record.get("policy_records") or {}).get("confident_stop") or {}).get("stated")
    stated = (
        list(recorded_stated)
        if isinstance(recorded_stated, list)
        else [  # a run recorded before the policy kept its record: each step held its confidence, if any
            step.get("confidence", "unrecorded")
            for step in record.get("trajectory") or []
            if step.get("origin", "model") == "model"
        ]
    )
    stopped = bool((record.get("policies_acted") or {}).get("confident_stop"))
    if "unrecorded" in stated:  # a run older than the field
        return stopped if threshold > recorded else True
    first = next((i for i, c in enumerate(stated) if c is not None and c >= threshold), None)
    if threshold > recorded:  # it stops only where the record stopped, and only if the model stated enough there
        return stopped and first != len(stated) - 1
    return first is not None and not (stopped and first == len(stated) - 1)


def completed(run: dict[str, Any], base: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """A run of some of ``base``'s questions, completed by ``base``'s records of the others (at temperature 0 what
    the run would have recorded there), in ``base``'s order; with how many questions the run answered itself."""
    own = {str(r["id"]): r for r in run["records"]}
    return [own.get(str(r["id"]), r) for r in base["records"]], len(own)


def confident_stop_threshold(run_dir: Path) -> float | None:
    """The confident_stop threshold a run was made at; None where the policy was off."""
    agent = json.loads((run_dir / CONFIG).read_text(encoding="utf-8"))["settings"]["agent"]
    return float(agent["policy"]["confident_stop"]["threshold"]) if "+confident_stop" in agent["policies"] else None
