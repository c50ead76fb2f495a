"""Which questions does ``absent_words`` reach? It depends only on the question and the documents, so it is counted
without a model: where it does not act, a run is the one recorded without it.

    python benchmarks/absent_words_reach.py --datasets ../shared/datasets   # eval sets, all questions, TAT-QA
    python benchmarks/absent_words_reach.py --own benchmarks/own_folder/later/vets.json --index /tmp/idx-vets

The corpora are read as texts (a passage, or 4,000 characters of a long document, standing for a chunk) and every
text holding a word's stem is read for a word that starts with it (``PROBE_CHUNKS`` lifted): the most any chunking
can reach, since an index counts a stem in many chunks as used without reading them. ``--own`` asks a question file
over a built index, with each question's scope, exactly as a run does.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import arag.harness.policies.absent_words as rule
from arag.eval.absent import absent_corpus, passage_text, read_corpus
from arag.eval.metrics import KeyTerms
from arag.eval.runner import DatasetChoice
from arag.filters import parse_filter
from arag.harness.contract import RunView
from arag.index import Index

HERE = Path(__file__).resolve().parent
CHUNK_CHARS = 4000


class Texts:
    """The two index calls the rule makes, over plain texts: an exact, case-insensitive keyword search and a read."""

    def __init__(self, texts: list[str]) -> None:
        self.texts, self.lowered = texts, [t.lower() for t in texts]

    def keyword_search(self, keywords: list[str], top_k: int, where: Any = None) -> list[Any]:
        keyword = keywords[0].lower()
        return [SimpleNamespace(chunk_id=i) for i, t in enumerate(self.lowered) if keyword in t][:top_k]

    def read(self, chunk_ids: list[int], where: Any = None) -> tuple[list[Any], list[str]]:
        return [SimpleNamespace(text=self.texts[i]) for i in chunk_ids], []


def run_over(index: Any, where: str | None = None) -> RunView:
    scope = parse_filter(where) if where else None
    return cast(RunView, SimpleNamespace(toolkit=SimpleNamespace(index=index, scope=scope)))


def corpus_texts(path: Path) -> list[str]:
    texts = []
    for item in read_corpus(path):
        text = passage_text(item)
        texts += [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)]
    return texts


def count(label: str, run: RunView, questions: list[tuple[str, str]]) -> None:
    reached = [(qid, q, rule.absent_words(run, q)) for qid, q in questions]
    reached = [r for r in reached if r[2]]
    print(f"{label}: {len(reached)} of {len(questions)}")
    for qid, question, words in reached:
        print(f"  {qid}  {question}  {words}")


def eval_sets(datasets: Path) -> None:
    medical_terms = HERE / "key_terms" / "graphrag-bench-medical.json"
    held = {
        name: (HERE / "heldout" / f"{name}.ids").read_text().split()[:20]
        for name in ("2wikimultihopqa", "graphrag-bench-medical")
    }
    wiki = DatasetChoice(datasets / "2wikimultihopqa", corpus="corpus")
    medical = DatasetChoice(
        datasets / "graphrag-bench-medical", question_type="Fact Retrieval", key_terms=medical_terms
    )
    # (label, choice, limit, seed, first, set-aside ids, first for the absent corpus, absent asked) as docs/results.md
    sets = [
        ("2Wiki dev", wiki, 100, 0, 40, None, 40, None),
        ("2Wiki set aside", wiki, 300, 1, None, held["2wikimultihopqa"], 53, None),
        ("Medical dev", medical, 40, 0, 40, None, 40, 20),
        ("Medical set aside", medical, 120, 1, None, held["graphrag-bench-medical"], 40, None),
    ]
    for label, choice, limit, seed, first, ids, absent_first, absent_asked in sets:
        dataset = choice.load()
        questions = choice.selected(dataset, limit, seed, first)
        if ids:
            questions = [q for q in questions if q.id in set(ids)]
        count(
            f"{label}, answerable",
            run_over(Texts(corpus_texts(dataset.corpus))),
            [(q.id, q.question) for q in questions],
        )
        terms = KeyTerms.load(choice.key_terms) if choice.key_terms else None
        absent = absent_corpus(dataset, choice.selected(dataset, limit, seed, absent_first), terms).dataset
        asked = [q for q in absent.questions if not ids or q.id in set(ids)][:absent_asked]
        count(f"{label}, absent", run_over(Texts(corpus_texts(absent.corpus))), [(q.id, q.question) for q in asked])
    for name in ("2wikimultihopqa", "graphrag-bench-medical"):
        dataset = DatasetChoice(datasets / name, corpus="corpus" if name == "2wikimultihopqa" else "auto").load()
        count(
            f"{name}, every question",
            run_over(Texts(corpus_texts(dataset.corpus))),
            [(q.id, q.question) for q in dataset.questions],
        )
    tatqa: list[tuple[str, str]] = []
    reached = 0
    for extract in json.loads((datasets / "tat-qa" / "tatqa_dataset_dev.json").read_text(encoding="utf-8")):
        table = "\n".join(" | ".join(row) for row in extract["table"]["table"])
        run = run_over(Texts([table] + [p["text"] for p in extract["paragraphs"]]))
        for q in extract["questions"]:
            tatqa.append((q["uid"], q["question"]))
            words = rule.absent_words(run, q["question"])
            if words:
                reached += 1
                print(f"  TAT-QA {q['question']}  {words}")
    print(f"TAT-QA dev, each in its own extract: {reached} of {len(tatqa)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=Path, help="../shared/datasets: the eval sets, all questions, TAT-QA")
    parser.add_argument("--own", type=Path, help="a question file of benchmarks/own_folder, with --index")
    parser.add_argument("--index", type=Path, help="the index of the --own questions' folder")
    args = parser.parse_args()
    rule.PROBE_CHUNKS = 10**9  # every text holding a stem read: the most any chunking reaches
    if args.datasets:
        eval_sets(args.datasets)
    if args.own:
        if args.index is None:
            parser.error("--own needs --index (arag index FOLDER -i DIR)")
        rule.PROBE_CHUNKS = 20  # a built index: exactly as a run counts
        index = Index.open(args.index, threads=1)
        by_kind: dict[str, list[str]] = {}
        asked: dict[str, int] = {}
        for q in json.loads(args.own.read_text(encoding="utf-8")):
            words = rule.absent_words(run_over(index, q.get("where")), q["question"])
            asked[q["kind"]] = asked.get(q["kind"], 0) + 1
            by_kind.setdefault(q["kind"], []).extend([f"{q['id']} {words}"] if words else [])
        for kind, reached in by_kind.items():
            print(f"{kind}: {len(reached)} of {asked[kind]}  {'; '.join(reached)}")


if __name__ == "__main__":
    main()
