"""Absent questions: a dataset's questions asked over its corpus with their evidence taken out, where the right
output is "not in the documents".

No benchmark the paper uses has unanswerable questions, so an agent that always says something loses nothing on
them. An absent question is the benchmark's own question over one corpus from which the evidence of every question
asked was removed, so the text around it (the distractors, the rest of the guideline) stays:

* titled passages (2Wiki, HotpotQA, MuSiQue): the passages whose title is a gold title of a question;
* one long document (GraphRAG-Bench): its sentences where the question's key terms match
  (``benchmarks/key_terms``), also where they match only across three neighbouring sentences, and the sentences that
  quote a question's evidence text.

A question is left out (with its reason) where nothing names its evidence, or where its gold answer is still in
what remains (a yes/no answer always is; a name another passage mentions may be): such a question is not absent.
The reduced corpus is written once per (corpus, questions, key terms) to the cache, in the dataset's own format.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from arag.errors import ConfigError
from arag.eval.datasets import Dataset, Question
from arag.eval.metrics import KeyTerms
from arag.text import normalize_answer

NEIGHBOURS = 3  # key terms matched across this many neighbouring sentences count as evidence too


@dataclass
class AbsentCorpus:
    """The reduced corpus and the questions that are absent from it."""

    dataset: Dataset  # the dataset with its corpus replaced by the reduced one, and only the absent questions
    removed: int  # passages (titled corpora) or sentences (one long document) taken out
    left_out: dict[str, str] = field(default_factory=dict)  # question id → why it is not an absent question

    def describe(self) -> dict[str, Any]:
        """What a run records (the reduced corpus's path is the run's ``corpus_file``)."""
        return {"removed": self.removed, "left_out": self.left_out}


def absent_corpus(
    dataset: Dataset, questions: list[Question], key_terms: KeyTerms | None, cache: Path | None = None
) -> AbsentCorpus:
    """``questions`` as absent questions: the corpus without their evidence, and which of them stay absent."""
    from arag.files import cache_dir, sha256_file

    if dataset.format == "arag":
        raise ConfigError(
            "absent questions need the corpus as titled passages or documents, not pre-cut chunks: "
            "use --corpus corpus (the dataset's corpus.json)"
        )
    corpus = read_corpus(dataset.corpus)
    if dataset.format == "graphrag-bench":
        kept, removed, evidence = _without_sentences(corpus, questions, key_terms)
    else:
        kept, removed, evidence = _without_passages(corpus, questions, key_terms)
    remaining = " " + " ".join(normalize_answer(passage_text(item)) for item in kept) + " "
    absent: list[Question] = []
    left_out: dict[str, str] = {}
    for question in questions:
        reason = evidence.get(question.id) or _still_there(question, remaining, key_terms)
        if reason:
            left_out[question.id] = reason
        else:
            absent.append(question)
    key = json.dumps([sha256_file(dataset.corpus), sorted(q.id for q in questions), _terms_digest(key_terms)])
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    folder = (cache or cache_dir() / "absent") / f"{dataset.name}-{digest}"
    path = folder / dataset.corpus.name
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(kept, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)
    reduced = replace(dataset, name=f"{dataset.name}-absent", corpus=path, questions=absent)
    return AbsentCorpus(reduced, removed, left_out)


def read_corpus(path: Path) -> list[Any]:
    """A corpus file as released: a JSON list of passages or documents."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the corpus {path}: {exc}") from None
    if not isinstance(data, list):
        raise ConfigError(f"{path}: expected a JSON list of passages or documents")
    return data


def passage_text(item: Any) -> str:
    """The text of one passage or document of a corpus file, its title included."""
    if isinstance(item, dict):
        return " ".join(str(item.get(k) or "") for k in ("title", "text", "context"))
    return str(item)


def _terms_digest(key_terms: KeyTerms | None) -> str:
    return (
        "" if key_terms is None else hashlib.sha256(repr(sorted(key_terms.rules.items(), key=str)).encode()).hexdigest()
    )


def _scored(key_terms: KeyTerms | None, question: Question) -> bool:
    return key_terms is not None and key_terms.rules.get(question.id) is not None


def _without_passages(
    corpus: list[Any], questions: list[Question], key_terms: KeyTerms | None
) -> tuple[list[Any], int, dict[str, str]]:
    """Titled passages less those named as a question's evidence (by title, quoted text or key terms)."""
    titles = {t for q in questions for t in q.gold_titles}
    probes = [normalize_answer(t)[:80] for q in questions for t in q.gold_texts if normalize_answer(t)]
    present = {str(p.get("title")) for p in corpus if isinstance(p, dict)}
    evidence = {
        q.id: "nothing names its evidence (no gold title in the corpus, no quoted evidence, no key terms)"
        for q in questions
        if not (set(q.gold_titles) & present or q.gold_texts or _scored(key_terms, q))
    }
    kept = []
    for passage in corpus:
        text = passage_text(passage)
        normal = normalize_answer(text)
        named = isinstance(passage, dict) and str(passage.get("title")) in titles
        quoted = any(p in normal for p in probes)
        matched = key_terms is not None and any(
            _scored(key_terms, q) and key_terms.score(q.id, text) for q in questions
        )
        if not (named or quoted or matched):
            kept.append(passage)
    return kept, len(corpus) - len(kept), evidence


def _without_sentences(
    corpus: list[Any], questions: list[Question], key_terms: KeyTerms | None
) -> tuple[list[Any], int, dict[str, str]]:
    """Documents less the sentences that hold a question's evidence (key terms, alone or across neighbours; quoted
    evidence text)."""
    from arag.corpus.chunking import split_sentences

    evidence = {
        q.id: "nothing names its evidence (no key terms, no quoted evidence)"
        for q in questions
        if not (_scored(key_terms, q) or q.gold_texts)
    }
    rules = [q for q in questions if _scored(key_terms, q)]
    probes = [normalize_answer(t)[:80] for q in questions for t in q.gold_texts if normalize_answer(t)]
    kept_documents, removed = [], 0
    for document in corpus:
        context = str(document.get("context") or "") if isinstance(document, dict) else str(document)
        spans = split_sentences(context)
        sentences = [context[s.start : s.end] for s in spans]
        drop = {i for i, s in enumerate(sentences) if _holds(s, rules, probes, key_terms)}
        for start in range(len(sentences)):  # evidence spread over neighbouring sentences
            window = [i for i in range(start, min(start + NEIGHBOURS, len(sentences))) if i not in drop]
            if len(window) > 1 and _holds(" ".join(sentences[i] for i in window), rules, [], key_terms):
                drop.update(i for i in window if _holds_part(sentences[i], rules, key_terms))
        removed += len(drop)
        text = "".join(s for i, s in enumerate(sentences) if i not in drop)
        kept_documents.append({**document, "context": text} if isinstance(document, dict) else text)
    return kept_documents, removed, evidence


def _holds(text: str, rules: list[Question], probes: list[str], key_terms: KeyTerms | None) -> bool:
    if key_terms is not None and any(key_terms.score(q.id, text) for q in rules):
        return True
    if probes:
        normal = normalize_answer(text)
        return any(p in normal for p in probes)
    return False


def _holds_part(text: str, rules: list[Question], key_terms: KeyTerms | None) -> bool:
    """Whether ``text`` matches one group of some question's key terms (a part of its evidence)."""
    if key_terms is None:
        return False
    padded = f" {normalize_answer(text)} "
    for question in rules:
        rule = key_terms.rules.get(question.id)
        if rule is not None and any(p.search(padded) for group in rule[0] for p in group):
            return True
    return False


def _still_there(question: Question, remaining: str, key_terms: KeyTerms | None) -> str | None:
    """Why ``question`` is answerable from what remains, or None. A question scored by key terms lost every passage
    or sentence (window) they match, by construction; another is answerable while its gold answer is in the text."""
    if _scored(key_terms, question):
        return None
    for answer in question.answers:
        normal = normalize_answer(answer)
        if normal and f" {normal} " in remaining:
            return f"its answer {answer!r} is still in the corpus"
    return None
