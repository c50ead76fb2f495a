"""A team's own small folder, asked as a new user would: facts, multi-hop and two-part questions, questions the
folder does not answer, and questions whose answer lies outside the scope they are asked in.

    python benchmarks/own_folder.py                                  # the embedded default (compact profile)
    python benchmarks/own_folder.py --profile paper                  # the paper's loop on the same questions
    python benchmarks/own_folder.py --policy=-read_before_answer --out runs/own-folder-without.jsonl
    python benchmarks/own_folder.py --folder benchmarks/own_folder/lab \\
        --questions benchmarks/own_folder/lab-questions.json

The folder (benchmarks/own_folder/handbook: eight short Markdown files of a made-up company) and its questions
(benchmarks/own_folder/questions.json) were written for this check, not taken from a benchmark, and no default was
chosen on them: it is the dev sets' complement, the shape of question a team asks of its own documents. A second
folder in other formats (benchmarks/own_folder/lab: a research group's web page, Word, Excel, PDF, Markdown and a
plain-text file; lab-questions.json) was written the same way, later, to see what the first one had not; then a
community orchard's (orchard) and a veterinary practice's (vets: Markdown, CSV, plain text, an e-mail, an HTML price
list, Word, PDF), each with its questions written before any run on it. ``--only`` asks some of the questions (the
ones a change reaches; ask the same ones before and after it: a run's answers can drift with what it asked before).
An answerable question is right when the answer holds a term of every one of its ``groups`` (alternatives; matched as
the Medical key terms are, ``arag.eval.metrics.KeyTerms``) and is not a refusal;
an absent or out-of-scope one is right when the agent says "Not in the documents" (the result's ``not_found``).
A right answer cites its evidence when a chunk it cites holds every term. The index is built once per run in a
temporary folder (or ``--index``) with the embedded embedder.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from arag.agent import Agent
from arag.citations import without_citations
from arag.corpus.build import build_index
from arag.eval.measures import repeated_calls, stuck
from arag.eval.metrics import KeyTerms
from arag.eval.stats import wilson
from arag.index import Index
from arag.models.choice import chat_model
from arag.settings import load_settings

HERE = Path(__file__).parent / "own_folder"
ANSWERABLE = ("fact", "multi_hop")
KINDS = ("fact", "multi_hop", "absent", "out_of_scope")


def answer_terms(questions: list[dict[str, Any]]) -> KeyTerms:
    """The answerable questions' groups of alternative terms, scored as key terms: every group must match."""
    return KeyTerms({q["id"]: {"groups": q["groups"]} for q in questions if q["kind"] in ANSWERABLE})


def score(
    question: dict[str, Any], terms: KeyTerms, answer: str, not_found: bool, cited_texts: list[str]
) -> dict[str, Any]:
    if question["kind"] in ANSWERABLE:
        right = not not_found and terms.score(question["id"], answer) == 1.0
        return {
            "right": right,
            "false_refusal": not_found,
            "cites": right and any(terms.score(question["id"], text) == 1.0 for text in cited_texts),
        }
    return {"right": not_found, "false_refusal": False, "cites": None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, default=HERE / "handbook")
    parser.add_argument("--questions", type=Path, default=HERE / "questions.json")
    parser.add_argument(
        "--index",
        type=Path,
        help="the index: built there when it holds none, else reused as it is (default: a temporary folder)",
    )
    parser.add_argument("--profile", help="the agent's profile (default: the model's, compact when embedded)")
    parser.add_argument("--policy", action="append", default=[], help="+NAME / -NAME, as arag ask --policy")
    parser.add_argument("--out", type=Path, help="write one JSON line per question here")
    parser.add_argument(
        "--only",
        help="ask only these question ids (comma-separated): the ones a change reaches, the others' answers unchanged",
    )
    parser.add_argument(
        "--pair",
        nargs=2,
        action="append",
        metavar=("BEFORE", "AFTER"),
        help="no run: pair two runs' --out files on the same questions (repeatable: one pair a folder), print every "
        "changed answer and both sides' tables",
    )
    parser.add_argument(
        "--splice",
        nargs=2,
        metavar=("FULL", "REACHED"),
        help="no run: FULL's answers with REACHED's (an --only run of the questions a change reaches) in their place, "
        "written to --out, and its table",
    )
    args = parser.parse_args()
    if args.splice:
        full, reached = (list(map(json.loads, Path(p).read_text().splitlines())) for p in args.splice)
        by_id = {r["id"]: r for r in reached}
        spliced = [by_id.get(r["id"], r) for r in full]
        if args.out:
            args.out.write_text("".join(json.dumps(r) + "\n" for r in spliced))
        print(table(spliced, "spliced"))
        return 0
    if args.pair:
        print(paired([(Path(b), Path(a)) for b, a in args.pair]))
        return 0

    settings = load_settings()
    update: dict[str, Any] = {"policies": [*settings.agent.policies, *args.policy]}
    if args.profile:
        update["profile"] = args.profile
    agent_settings = settings.agent.model_copy(update=update)
    questions = json.loads(args.questions.read_text())
    if args.only:
        wanted = args.only.split(",")
        unknown = sorted(set(wanted) - {q["id"] for q in questions})
        if unknown:
            parser.error(f"no question {', '.join(unknown)} in {args.questions}")
        questions = [q for q in questions if q["id"] in wanted]
    terms = answer_terms(questions)
    with tempfile.TemporaryDirectory() as scratch:
        location = args.index or Path(scratch) / "index"
        if not (Path(location) / "manifest.json").exists():
            build_index([args.folder], location, settings.index)
        index = Index.open_with(location, settings.index)
        model, _ = chat_model(settings, threads=2)
        agent = Agent(index, model, agent_settings)
        records = []
        for question in questions:
            started = time.perf_counter()
            result = agent.run(question["question"], where=question.get("where"))
            recorded = result.to_dict()
            seconds = time.perf_counter() - started
            cited = [c["chunk_id"] for c in result.citations]
            texts = [record.text for record in index.read(cited)[0]] if cited else []
            record = {
                **question,
                "answer": result.answer,
                "not_found": result.not_found,
                "answer_from": result.answer_from,
                "stop_reason": result.stop_reason,
                "repeats": repeated_calls(recorded),
                "cited": cited,
                "seconds": round(seconds, 1),
                "policies_acted": result.policies_acted,
                "trajectory": recorded["trajectory"],
                **score(question, terms, without_citations(result.answer), result.not_found, texts),
            }
            records.append(record)
            print(
                f"{record['id']:>3} {'right' if record['right'] else 'WRONG'} {seconds:5.1f} s  {result.answer[:100]}"
            )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("".join(json.dumps(r) + "\n" for r in records))
    print(table(records, agent.bundle.name))
    return 0


def paired(pairs: list[tuple[Path, Path]]) -> str:
    """Two sides' records on the same questions: each answer that changed, then each side's table."""
    sides: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
    lines = []
    for before_file, after_file in pairs:
        before, after = (
            {r["id"]: r for r in map(json.loads, path.read_text().splitlines())} for path in (before_file, after_file)
        )
        if set(before) != set(after):
            raise SystemExit(f"{before_file} and {after_file} hold other questions: pair the same ones")
        for qid in before:
            sides[0].append(before[qid])
            sides[1].append(after[qid])
            was, now = before[qid], after[qid]
            if (was["answer"], was["right"]) != (now["answer"], now["right"]):
                lines.append(f"{after_file.stem} {qid}: {_said(was)} -> {_said(now)}")
    return "\n".join([*lines, "", table(sides[0], "before"), "", table(sides[1], "after")])


def _said(record: dict[str, Any]) -> str:
    return f"{'right' if record['right'] else 'WRONG'} {record['answer'][:70]!r}"


def share(hits: int, n: int) -> str:
    if not n:
        return "—"
    return f"{hits}/{n} = {wilson(hits, n).percent()}"


def table(records: list[dict[str, Any]], profile: str) -> str:
    rows = [f"| {profile} | |", "|---|---|"]
    for kind in KINDS:
        group = [r for r in records if r["kind"] == kind]
        rows.append(f"| {kind.replace('_', ' ')} right | {share(sum(r['right'] for r in group), len(group))} |")
    answerable = [r for r in records if r["kind"] in ANSWERABLE]
    right = [r for r in answerable if r["right"]]
    rows.append(f"| false refusals | {share(sum(r['false_refusal'] for r in answerable), len(answerable))} |")
    rows.append(f"| right answers citing their evidence | {share(sum(r['cites'] for r in right), len(right))} |")
    rows.append(f"| own answers | {share(sum(r['answer_from'] == 'model' for r in records), len(records))} |")
    stalled = sum(stuck(r["stop_reason"], r.get("repeats", 0)) for r in records)
    rows.append(f"| stalled | {share(stalled, len(records))} |")
    rows.append(f"| p50 s | {statistics.median(r['seconds'] for r in records):.1f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
