"""Is a GraphRAG-Bench absent run's figure low because the reduced corpus still states the answers? Scores the
recorded answers on a stricter absent set: a question is left out when a sentence that remains is close in meaning
to its gold answer (cosine with the index's embedder, ``--threshold``) and matches one of its key-term groups.

    python benchmarks/absent_strictness.py --key-terms benchmarks/key_terms/graphrag-bench-medical.json \\
        ../runs/after-absent-medical ../runs/after-heldout-absent-medical

No model is asked: it reads each run's records and its reduced corpus (the run's ``corpus_file``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from arag.corpus.chunking import split_sentences
from arag.embedding.embedders import load_embedder
from arag.eval.metrics import KeyTerms
from arag.eval.runner import DatasetChoice
from arag.text import normalize_answer

NEAREST = 50  # remaining sentences looked at per question, nearest to its gold answer first


def groups_matched(key_terms: KeyTerms, question_id: str, text: str) -> int:
    rule = key_terms.rules.get(question_id)
    padded = f" {normalize_answer(text)} "
    return 0 if rule is None else sum(1 for group in rule[0] if any(p.search(padded) for p in group))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", help="arag eval run --absent directories (GraphRAG-Bench)")
    parser.add_argument("--key-terms", type=Path, required=True)
    parser.add_argument("--threshold", type=float, nargs="+", default=[0.55, 0.6, 0.65])
    args = parser.parse_args()
    key_terms = KeyTerms.load(args.key_terms)
    embedder = load_embedder("minilm", threads=2)
    print("| run | threshold | left out | stay absent | said so among them |")
    print("|---|---|---|---|---|")
    for run in args.runs:
        config = json.loads((run / "config.json").read_text(encoding="utf-8"))
        records = [json.loads(line) for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines()]
        questions = {q.id: q for q in DatasetChoice(Path(config["dataset_path"]), "auto").load().questions}
        documents = json.loads(Path(config["corpus_file"]).read_text(encoding="utf-8"))
        sentences = [
            context[s.start : s.end]
            for document in documents
            for context in [str(document.get("context") or "") if isinstance(document, dict) else str(document)]
            for s in split_sentences(context)
        ]
        vectors = embedder.embed_documents(sentences)
        nearest = {}
        for record in records:
            gold = " ".join(questions[str(record["id"])].answers)
            cosines = vectors @ embedder.embed_query(gold)
            nearest[record["id"]] = [(float(cosines[i]), sentences[i]) for i in np.argsort(-cosines)[:NEAREST]]
        for threshold in args.threshold:
            left = {
                record["id"]
                for record in records
                if any(
                    c >= threshold and groups_matched(key_terms, str(record["id"]), s) for c, s in nearest[record["id"]]
                )
            }
            stay = [r for r in records if r["id"] not in left]
            said = sum(1 for r in stay if r.get("not_found"))
            share = 100 * said / max(1, len(stay))
            print(f"| {run.name} | {threshold:g} | {len(left)} | {len(stay)} | {said} ({share:.1f} %) |")


if __name__ == "__main__":
    main()
