"""Table question answering on TAT-QA's dev split (tables + text from real financial reports): the same A-RAG agent
over the same report extracts, written as a team's folder holds them (Word files: paragraphs and a real table, read
as a Markdown table kept whole, rows searched with their header) against the same extracts as plain text (each
table row a line of cells, as a PDF's text layer gives it — what a-rag read before tables were kept), and the Word
files again with the table tools offered too (``tables``: table_list and table_query, tables as data; with the
default profile, and ``tables-paper`` with the paper's loop and prompt, where the model acts from its first step).

Each question is asked within its own extract (``where path=…``): TAT-QA's questions assume their report ("What
was the revenue in 2019?"), and the point is reading the table, not finding the company. Scored right when the
answer holds the gold answer — a number compared as a number (commas, currency, a sign in brackets aside; "1.5"
for 1.50), text by Contain-Acc. Multi-span answers are left out. Paired over the questions, with intervals::

    python benchmarks/table_qa.py --dataset ../shared/datasets/tat-qa --extracts 40 --questions 30 --seed 0 \\
        --out ../runs/tatqa

Resumable: each condition's answers are appended to OUT/CONDITION.jsonl and a question answered is not asked
again. ``--questions 0`` only builds and indexes the two corpora.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from pathlib import Path
from typing import Any

from arag.api import make_agent, open_index
from arag.corpus.build import build_index
from arag.eval.metrics import contain_acc
from arag.eval.stats import accuracy, paired_difference
from arag.settings import load_settings

CONDITIONS = ("flat", "docx", "tables", "tables-paper")
CORPUS_OF = {"flat": "flat", "docx": "docx", "tables": "docx", "tables-paper": "docx"}
TABLE_TOOLS = ["keyword_search", "semantic_search", "chunk_read", "table_list", "table_query"]
_NUMBER = re.compile(r"\(?-?\$?\d[\d,]*(?:\.\d+)?\)?%?")


def numbers_in(text: str) -> list[float]:
    found = []
    for match in _NUMBER.findall(text):
        negative = (match.startswith("(") and match.endswith(")")) or match.lstrip("(").startswith("-")
        digits = re.sub(r"[^\d.]", "", match)
        try:
            value = float(digits)
        except ValueError:
            continue
        found.append(-value if negative else value)
    return found


def right(prediction: str, gold: Any) -> bool:
    """A number as a number (to the gold's own precision), else Contain-Acc."""
    if isinstance(gold, int | float) or (isinstance(gold, str) and re.fullmatch(r"-?[\d,]*\.?\d+", gold.strip())):
        value = float(str(gold).replace(",", ""))
        decimals = len(str(gold).split(".")[1]) if "." in str(gold) else 0
        return any(abs(round(n, decimals) - value) < 10 ** (-decimals) / 2 + 1e-9 for n in numbers_in(prediction))
    return bool(contain_acc(prediction, [str(gold)]))


def write_extract(folder: Path, number: int, extract: dict[str, Any]) -> None:
    """One report extract: as a Word file (paragraphs, then the table) and as a text file (the table's rows as
    lines of cells)."""
    import docx

    table = [[str(cell) for cell in row] for row in extract["table"]["table"]]
    paragraphs = [p["text"] for p in sorted(extract["paragraphs"], key=lambda p: p["order"])]
    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    width = max(len(row) for row in table)
    grid = document.add_table(rows=len(table), cols=width)
    for i, row in enumerate(table):
        for j, cell in enumerate(row):
            grid.cell(i, j).text = cell
    (folder / "docx").mkdir(parents=True, exist_ok=True)
    (folder / "flat").mkdir(parents=True, exist_ok=True)
    document.save(str(folder / "docx" / f"report-{number:03d}.docx"))
    flat = "\n\n".join(paragraphs) + "\n\n" + "\n".join(" ".join(c for c in row if c.strip()) for row in table) + "\n"
    (folder / "flat" / f"report-{number:03d}.txt").write_text(flat, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=Path("../shared/datasets/tat-qa"))
    parser.add_argument("--extracts", type=int, default=40, help="report extracts in the corpus (seeded sample)")
    parser.add_argument("--questions", type=int, default=30, help="questions asked (seeded, of those extracts)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--conditions", default=",".join(CONDITIONS), help=f"some of {', '.join(CONDITIONS)}")
    args = parser.parse_args()
    conditions = [c for c in args.conditions.split(",") if c in CONDITIONS]
    extracts = json.loads((args.dataset / "tatqa_dataset_dev.json").read_text(encoding="utf-8"))
    rng = random.Random(args.seed)
    chosen = sorted(rng.sample(range(len(extracts)), min(args.extracts, len(extracts))))
    corpus = args.out / "corpus"
    asked: list[tuple[str, str, Any, str, str, str]] = []  # (id, question, gold, extract file stem, type, from)
    for number in chosen:
        extract = extracts[number]
        if not (corpus / "docx" / f"report-{number:03d}.docx").exists():
            write_extract(corpus, number, extract)
        for q in extract["questions"]:
            if q["answer_type"] != "multi-span" and q["answer_from"] in ("table", "table-text"):
                gold = q["answer"][0] if isinstance(q["answer"], list) and len(q["answer"]) == 1 else q["answer"]
                asked.append(
                    (q["uid"], q["question"], gold, f"report-{number:03d}", q["answer_type"], q["answer_from"])
                )
    questions = sorted(rng.sample(asked, min(args.questions, len(asked))))
    settings = load_settings()
    indexes = {}
    for condition in conditions:
        # the Word files indexed again for the table tools: an index written before tables were kept has none
        location = args.out / f"index-{'tables' if condition.startswith('tables') else condition}"
        if not (location / "manifest.json").exists():
            build_index([corpus / CORPUS_OF[condition]], location, settings.index)
        indexes[condition] = open_index(location, settings)
    scores: dict[str, dict[str, float | None]] = {c: {} for c in conditions}
    seconds: dict[str, list[float]] = {c: [] for c in conditions}
    table_use: dict[str, list[list[str]]] = {c: [] for c in conditions}
    for condition in conditions:
        results = args.out / f"{condition}.jsonl"
        done = {}
        if results.exists():
            done = {r["id"]: r for r in map(json.loads, results.read_text(encoding="utf-8").splitlines())}
        chosen_settings = settings
        if condition.startswith("tables"):
            agent_settings = {"tools": TABLE_TOOLS} | ({"profile": "paper"} if condition == "tables-paper" else {})
            chosen_settings = settings.model_copy(update={"agent": settings.agent.model_copy(update=agent_settings)})
        agent = make_agent(indexes[condition], chosen_settings) if len(done) < len(questions) else None
        with results.open("a", encoding="utf-8") as out:
            for qid, question, gold, stem, kind, source in questions:
                if qid not in done:
                    suffix = "txt" if condition == "flat" else "docx"
                    began = time.monotonic()
                    assert agent is not None
                    result = agent.run(question, f"path={CORPUS_OF[condition]}/{stem}.{suffix}")
                    done[qid] = {
                        "id": qid, "question": question, "gold": gold, "type": kind, "from": source,
                        "prediction": result.answer, "not_found": result.not_found,
                        "seconds": round(time.monotonic() - began, 1), "stop_reason": result.stop_reason,
                        "tools": [step.tool for step in result.trajectory],
                    }  # fmt: skip
                    out.write(json.dumps(done[qid]) + "\n")
                    out.flush()
                    print(condition, qid, right(result.answer, gold), repr(result.answer[:80]), flush=True)
                record = done[qid]
                scores[condition][qid] = float(right(str(record["prediction"]), record["gold"]))
                seconds[condition].append(float(record["seconds"]))
                table_use[condition].append(list(record.get("tools") or []))
    if not questions:
        return
    print(f"\n{len(questions)} questions over {len(chosen)} report extracts (seed {args.seed})\n")
    print("| condition | right | p50 s | questions using table_query |\n|---|---|---|---|")
    for condition in conditions:
        estimate = accuracy(list(scores[condition].values()))
        p50 = sorted(seconds[condition])[len(seconds[condition]) // 2]
        used = sum("table_query" in tools for tools in table_use[condition])
        print(f"| {condition} | {100 * estimate.value:.1f} [{100 * estimate.low:.1f}, {100 * estimate.high:.1f}] "
              f"(n={estimate.n}) | {p50:.1f} | {used} |")  # fmt: skip
    for before, after in (("flat", "docx"), ("docx", "tables"), ("docx", "tables-paper")):
        if before not in conditions or after not in conditions:
            continue
        difference = paired_difference(scores[before], scores[after], args.seed)
        if difference is not None:
            print(f"| {after} − {before} (paired) | {100 * difference.value:+.1f} [{100 * difference.low:+.1f}, "
                  f"{100 * difference.high:+.1f}] (n={difference.n}) | |")  # fmt: skip
    for kind in ("span", "arithmetic", "count"):
        ids = [q[0] for q in questions if q[4] == kind]
        if ids:
            cells = [f"{sum(scores[c][i] or 0 for i in ids):.0f}/{len(ids)}" for c in conditions]
            print(f"| {kind}: {', '.join(conditions)} | {', '.join(cells)} | | |")


if __name__ == "__main__":
    main()
