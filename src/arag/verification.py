"""Answer verification: is each claim of an answer stated by a sentence the agent read?

A claim is a sentence of the answer, its citations left out. Its key terms are its words that carry content
(numbers, and words of three or more letters that are not stopwords). Each sentence of the chunks read is a
candidate; the best one has the most of the claim's key terms (case aside), then the highest cosine of its stored
vector with the claim's. A claim is **supported** when that sentence holds every key term, or at least
``min_terms`` of them with a cosine of at least ``min_cosine`` (citations.MIN_SUPPORT: below it a sentence is
related text, not a restatement). An answer is supported when each of its claims is.

The check uses what the index already holds (sentence vectors, texts): no model call. Off by default
(``agent.verify_answers``); the ``supported_answer`` policy sends an unsupported answer back once.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from arag.citations import MIN_SUPPORT, without_citations
from arag.corpus.chunking import split_sentences
from arag.errors import ARagError
from arag.index import Index
from arag.text import STOPWORDS

MIN_TERMS = 0.5
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class ClaimCheck:
    claim: str
    supported: bool
    chunk_id: str | None = None  # where the best sentence is
    sentence: str | None = None
    cosine: float = 0.0
    terms: list[str] = field(default_factory=list)  # the claim's key terms
    found: list[str] = field(default_factory=list)  # of them, in the sentence


@dataclass
class Verification:
    supported: bool
    claims: list[ClaimCheck]
    checked_chunks: int = 0

    @property
    def unsupported(self) -> list[ClaimCheck]:
        return [c for c in self.claims if not c.supported]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def key_terms(text: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(text)]
    terms = [w for w in words if w.isdigit() or (len(w) >= 3 and w not in STOPWORDS)]
    return list(dict.fromkeys(terms or words))


def claims_of(answer: str) -> list[str]:
    """The answer's sentences (the index's own sentence splitter), its citations left out."""
    text = without_citations(answer)
    return [claim for span in split_sentences(text) if _WORD.search(claim := text[span.start : span.end].strip())]


def verify_answer(
    index: Index, answer: str, chunk_ids: list[str], min_terms: float = MIN_TERMS, min_cosine: float = MIN_SUPPORT
) -> Verification:
    """Check each claim of ``answer`` against the sentences of ``chunk_ids`` (the chunks the agent read)."""
    claims = claims_of(answer)
    try:
        records, _missing = index.read(list(dict.fromkeys(chunk_ids)))
    except ARagError:
        records = []
    sentences = [(record, index.sentences(record)) for record in records]
    checks = []
    for claim in claims:
        terms = key_terms(claim)
        try:
            vector = index.embedder.embed_query(claim)
        except ARagError:  # an embedding endpoint that fails: terms alone decide
            vector = None
        best: tuple[tuple[int, float], ClaimCheck] | None = None
        for record, texts in sentences:
            cosines = index.store.sentence_scores(vector, record.row) if vector is not None else np.zeros(len(texts))
            for i, sentence in enumerate(texts):
                words = {w.lower() for w in _WORD.findall(sentence)}
                found = [t for t in terms if t in words]
                cosine = float(cosines[i]) if i < len(cosines) else 0.0
                rank = (len(found), cosine)
                if best is None or rank > best[0]:
                    check = ClaimCheck(claim, False, record.chunk_id, sentence, round(cosine, 4), terms, found)
                    best = (rank, check)
        if best is None:
            checks.append(ClaimCheck(claim, False, terms=terms))
            continue
        check = best[1]
        share = len(check.found) / len(terms) if terms else 0.0
        check.supported = bool(terms) and (share == 1.0 or (share >= min_terms and check.cosine >= min_cosine))
        checks.append(check)
    return Verification(bool(checks) and all(c.supported for c in checks), checks, len(records))
