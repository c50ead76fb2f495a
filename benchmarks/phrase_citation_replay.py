"""phrase_answer's citations, replayed on recorded runs: what the same runs cite with the rule of today.

phrase_answer reads a short phrase off the text read when the model answered with a sentence; the phrase then
cites the chunks the model's answer cited. Those held the sentence, not always the phrase ("47 minutes" cited by
the leave policy the sentence came from). Now the phrase cites the answer's chunks that hold it, else the read
chunks that hold it, else the answer's (``phrase_answer.phrase_citations``). The rule acts after the phrase is
read and changes nothing else, so a run with it is the recorded run with other citations: this script takes the
phrase each recorded run read (``policy_records.phrase_answer.reread``), the text of every chunk it read as the read
showed it (the recorded observations, their notes left out, within the policy's token budget), applies the rule,
and writes the run again to ``OUT/NAME`` with the answer's citations and their check (``cited_evidence``) redone::

    python benchmarks/phrase_citation_replay.py runs/after-2wiki runs/after-absent-2wiki --out runs/phrase-cites
    python benchmarks/honest_answers.py --before runs/after-2wiki runs/after-absent-2wiki \\
        --after runs/phrase-cites/after-2wiki runs/phrase-cites/after-absent-2wiki
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from arag.citations import cited_ids, without_citations
from arag.corpus.chunking import count_tokens
from arag.eval.metrics import KeyTerms
from arag.eval.runner import GoldChunks, cited_evidence, run_dataset, run_index
from arag.eval.runs import CONFIG, READ_HEADER, RESULTS, read_results
from arag.harness.policies.phrase_answer import PhraseAnswerSettings, phrase_citations

NOTE = re.compile(r"^(?:Closest to the question|These are only snippets|You |Read |Not yet read)", re.M)


def shown_reads(record: dict[str, Any], budget: int, encoding: str = "cl100k_base") -> list[tuple[str, str]]:
    """Each chunk the run read, first read first, with its text as the read showed it, within ``budget`` tokens."""
    pieces: dict[str, str] = {}
    for step in record.get("trajectory") or []:
        if step.get("tool") != "chunk_read":
            continue
        observation = str(step.get("observation") or "")
        sections = list(READ_HEADER.finditer(observation))
        for i, section in enumerate(sections):
            end = sections[i + 1].start() if i + 1 < len(sections) else len(observation)
            text = observation[observation.find("\n", section.end(), end) + 1 : end]  # after the header's line
            note = NOTE.search(text)
            pieces.setdefault(section.group(1), text[: note.start()] if note else text)
    kept = []
    for chunk_id, text in pieces.items():
        cost = count_tokens(text, encoding)
        if cost > budget:
            break
        budget -= cost
        kept.append((chunk_id, text))
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", help="run directories of arag eval run")
    parser.add_argument("--out", type=Path, required=True, help="where the replayed runs are written")
    args = parser.parse_args()
    budget = PhraseAnswerSettings().text_tokens
    for run_dir in args.runs:
        config = json.loads((run_dir / CONFIG).read_text(encoding="utf-8"))
        dataset = run_dataset(run_dir)
        index, _settings = run_index(run_dir)
        gold = GoldChunks(index, dataset)
        key_terms = KeyTerms.load(Path(config["key_terms"])) if config.get("key_terms") else None
        questions = {q.id: q for q in dataset.questions}
        out = args.out / run_dir.name
        out.mkdir(parents=True, exist_ok=True)
        config["replayed"] = {"phrase_answer": "citations of the phrase", "from": str(run_dir)}
        (out / CONFIG).write_text(json.dumps(config, indent=2), encoding="utf-8")
        changed = unchanged = 0
        with (out / RESULTS).open("w", encoding="utf-8") as results:
            for record in read_results(run_dir / RESULTS).values():
                reread = ((record.get("policy_records") or {}).get("phrase_answer") or {}).get("reread") or {}
                before, after = str(reread.get("before") or ""), str(reread.get("after") or "")
                if after and after != before and record.get("prediction") != after:
                    unchanged += 1  # edited after the phrase was read: not replayed
                elif after and after != before:
                    phrase = without_citations(after).strip()
                    pieces = shown_reads(record, budget)
                    shown = {str(c) for c in record.get("retrieved_chunks") or []} | {c for c, _ in pieces}
                    cited = phrase_citations(phrase, [c for c in cited_ids(before, shown) if c in shown], pieces)
                    prediction = " ".join([phrase, *(f"[chunk {c}]" for c in cited)])
                    if prediction != after:
                        changed += 1
                        question = questions[record["id"]]
                        record["prediction"] = prediction
                        record["citations"] = cited_evidence(
                            index, gold, key_terms, question, prediction, sorted(shown)
                        )
                        reread["after"] = prediction
                results.write(json.dumps(record) + "\n")
        index.close()
        print(f"{run_dir.name}: {changed} answer(s) cite other chunks; {unchanged} edited after the phrase", flush=True)


if __name__ == "__main__":
    main()
