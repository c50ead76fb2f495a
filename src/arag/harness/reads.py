"""What the policies read off a run, shared so that no policy imports another: the sentences read closest to the
question, the latest search's hits left to read within its allowance, a keyword search's keywords, how common a
keyword is."""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from arag.errors import ARagError
from arag.filters import Filter
from arag.harness.contract import RunView
from arag.harness.text import a_heading, asks_a_question, chunk_headings
from arag.harness.view import CompactPresenter, QuestionScores
from arag.index import Index
from arag.store import ChunkRecord
from arag.text import normalize_answer, without_accents
from arag.tools.arguments import safe_arguments
from arag.tools.toolkit import ToolCall, Toolkit
from arag.tools.view import shorten

HARNESS_READS = 2  # the hits the loop reads for the model at once
SENTENCE_CHARS = 300  # a sentence named to the model is cut to this
MIN_ANTECEDENT_CHARS = 40  # an antecedent with less room than this is left out (a few words name nothing)
# a keyword in fewer chunks than this is never "common": in a small collection every word is in a few texts
MIN_COMMON_CHUNKS = 50


@dataclass(frozen=True)
class Evidence:
    """A sentence of a chunk the model was shown, and its cosine with the question; for a sentence that opens with
    a pronoun, the sentence before it (its ``antecedent``: "He" alone names no one)."""

    score: float
    sentence: str
    chunk_id: str
    antecedent: str = ""
    heading: bool = False  # one of its chunk's headings: a title, not a statement

    def shown(self, limit: int) -> str:
        """The sentence as named to the model, within ``limit`` characters: after its antecedent, if it has one
        (the antecedent cut first: the sentence holds what was found)."""
        sentence = shorten(self.sentence, limit)
        room = limit - len(sentence) - 1
        if not self.antecedent or room < MIN_ANTECEDENT_CHARS:
            return sentence
        before = shorten(self.antecedent, room)
        return f"{before} {sentence}" if before else sentence


# a toolkit's scores when its view keeps none (the paper's): one cache per toolkit, gone with it
_SCORES: weakref.WeakKeyDictionary[Toolkit, QuestionScores] = weakref.WeakKeyDictionary()


def _scores(run: RunView) -> tuple[QuestionScores, str]:
    """The run's cache of sentence scores and the question it scores against: the compact view's own, which its
    focused reads fill too, else one kept for the toolkit."""
    presenter = run.toolkit.presenter
    if isinstance(presenter, CompactPresenter):
        return presenter.scores, presenter.focus_query
    scores = _SCORES.get(run.toolkit)
    if scores is None:
        scores = _SCORES[run.toolkit] = QuestionScores(run.toolkit.index)
    return scores, run.question


def question_scores(run: RunView, record: ChunkRecord) -> tuple[list[str], Any]:
    """A chunk's sentences and their cosines with the question, computed once per chunk and question."""
    scores, question = _scores(run)
    return scores(question, record)


def closest_scores(run: RunView, record: ChunkRecord) -> tuple[list[str], list[str], Any]:
    """A chunk's sentences, their antecedents and cosines with the question (``QuestionScores.with_antecedents``),
    from the same cache as :func:`question_scores`."""
    scores, question = _scores(run)
    return scores.with_antecedents(question, record)


def closest_sentences(run: RunView, chunk_ids: list[str], k: int | None = 1, pronouns: bool = False) -> list[Evidence]:
    """The ``k`` sentences of these chunks closest to the question (best first; ties in the order given; None:
    all).
    Sentences that are questions themselves — a guide's headings, "What is bone cancer?", close to any question
    about it — and the chunk's headings ("The Halden Soil Lab" for "Who founded the Halden Soil Lab?", as its
    structure records them) come only when nothing else is left: they were offered, and returned as answers, in
    their place.
    With ``pronouns``, a sentence that opens with a pronoun is scored with what it stands for too, and carries the
    sentence before it (``QuestionScores.with_antecedents``): "It was founded in 2014 by …" for "Who founded
    Kestrel?", where alone "Kestrel is a private company." was closer."""
    records, _ = run.toolkit.index.read(list(dict.fromkeys(chunk_ids)))
    found: list[Evidence] = []
    for record in records:
        try:
            if pronouns:
                sentences, antecedents, scores = closest_scores(run, record)
            else:
                sentences, scores = question_scores(run, record)
                antecedents = [""] * len(sentences)
        except ARagError:  # an embedding endpoint that fails costs the evidence, not the run
            return []
        headings = chunk_headings(record.location)
        found += [
            Evidence(float(score), text, record.chunk_id, antecedent, a_heading(text, headings))
            for text, antecedent, score in zip(sentences, antecedents, scores, strict=True)
        ]
    found.sort(key=lambda e: -e.score)
    statements = [e for e in found if not asks_a_question(e.sentence) and not e.heading]
    return (statements or found)[:k]


def reads_left(run: RunView) -> int | None:
    """How many more of the latest search's hits may be read (None: no allowance, or no search yet)."""
    last = run.last_search
    if run.limits.reads_per_search is None or last is None:
        return None
    done = sum(c in run.read_ids and c not in last.read_before for c in last.hits)
    return max(0, run.limits.reads_per_search - done)


def unread_hits(run: RunView) -> list[str]:
    """The latest search's hits not read yet, while its read allowance lasts."""
    last = run.last_search
    if last is None or "chunk_read" not in run.toolkit.enabled or reads_left(run) == 0:
        return []
    return [c for c in last.hits if c not in run.read_ids]


def read_text(run: RunView) -> str:
    """The text of every chunk read so far, lower-cased, whitespace folded."""
    records, _ = run.toolkit.index.read(sorted(run.read_ids))
    return " ".join(" ".join(r.text.lower().split()) for r in records)


def keywords_of(toolkit: Toolkit, call: ToolCall) -> list[str] | None:
    """A keyword_search call's keywords as the tool takes them (stripped; one string is one keyword), else None."""
    if toolkit.canonical(call.name) != "keyword_search":
        return None
    keywords = safe_arguments(call.arguments).get("keywords")
    keywords = [keywords] if isinstance(keywords, str) else keywords
    if not isinstance(keywords, list):
        return None
    return [k.strip() for k in keywords if isinstance(k, str) and k.strip()]


def common_keyword(index: Index, keyword: str, share: float) -> bool:
    """Whether ``keyword`` is in more than ``share`` of the chunks (and in more than MIN_COMMON_CHUNKS)."""
    limit = max(MIN_COMMON_CHUNKS, math.ceil(share * index.chunk_count()))
    return index.keyword_chunk_count(keyword, limit + 1) > limit


def naming(run: RunView, name: str, limit: int = 5) -> list[str]:
    """Up to ``limit`` chunks, within the run's scope, whose text names ``name`` (case, punctuation, articles and
    accents aside), best keyword hits first: the keyword search for the name, else for each of its words, the rarest
    first (a title written with other punctuation, "Love & Death" for "Love and Death"; a name typed without its
    accents, "Juan Carlos Falcon" for "Falcón": the keyword search is exact, so the word that carries the accent finds
    nothing and the next one is searched), its hits checked for the whole name."""
    index, scope = run.toolkit.index, run.toolkit.scope
    wanted = _name_form(name)
    if not wanted.strip():
        return []
    found = _chunks_naming(index, scope, wanted, name, limit)
    if found:
        return found[:limit]
    words = dict.fromkeys(w for w in re.findall(r"\w+", name) if len(w) >= 3)  # in order: a tie keeps the first
    for word in sorted(words, key=lambda w: (index.keyword_chunk_count(w, 1000), -len(w))):
        found = _chunks_naming(index, scope, wanted, word, 100)
        if found:
            break
    return found[:limit]


def _chunks_naming(index: Index, scope: Filter | None, wanted: str, keyword: str, top_k: int) -> list[str]:
    """The keyword search's hits for ``keyword`` whose text holds ``wanted`` (a ``_name_form``), best first."""
    hits = index.keyword_search([keyword], top_k, scope)
    records, _ = index.read([h.chunk_id for h in hits], scope)
    return list(dict.fromkeys(r.chunk_id for r in records if wanted in _name_form(r.text)))


def _name_form(text: str) -> str:
    return f" {without_accents(normalize_answer(text))} "


def read_text_names(run: RunView, name: str) -> bool:
    """Whether a chunk read (for this question, or an earlier one of its conversation) names ``name`` (case,
    punctuation, articles and accents aside)."""
    wanted = _name_form(name)
    records, _ = run.toolkit.index.read(sorted(run.read_ids))
    return any(wanted in _name_form(r.text) for r in records)


def quoted_searches(searched: list[str], none: str = "nothing yet") -> str:
    """What was searched, as an answer says it: the first six searches, quoted, "; " between them."""
    return "; ".join(f'"{s}"' for s in searched[:6]) or none


def searched_for(run: RunView) -> list[str]:
    """What this question's searches looked for, in order: each keyword search's keywords, each semantic search's
    query."""
    names = run.toolkit.names
    steps = ((step.tool, step.arguments) for step in run.trajectory)
    return searches_in(steps, names["keyword_search"], names["semantic_search"])


def searches_in(steps: Iterable[tuple[str, Mapping[str, Any]]], keyword_tool: str, semantic_tool: str) -> list[str]:
    """What the searches among ``steps`` (tool name, arguments) looked for, in order, each once: a keyword search's
    keywords, a semantic search's query (a live run's steps, or a recorded run's trajectory)."""
    found: list[str] = []
    for tool, arguments in steps:
        if tool == keyword_tool:
            keywords = arguments.get("keywords")
            found += [str(k) for k in keywords] if isinstance(keywords, list) else [str(keywords)]
        elif tool == semantic_tool:
            found.append(str(arguments.get("query", "")))
    return list(dict.fromkeys(f for f in found if f.strip()))
