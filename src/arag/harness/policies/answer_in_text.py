"""answer_in_text: a short answer none of whose words is in any text the run was shown is made up: "Not in the
documents"; so is a figure the text shown gives only in sentences about something else, or not at all, and a name
given where a figure is asked for."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arag.citations import without_citations
from arag.harness.contract import Policy, Revised, RunView
from arag.harness.reads import SENTENCE_CHARS, quoted_searches, searched_for
from arag.harness.registry import register
from arag.harness.text import choice_options, whole_sentences, yes_no_question
from arag.index import Index, title_of
from arag.store import ChunkRecord
from arag.text import NOT_IN_DOCUMENTS, normalize_answer, says_not_found
from arag.verification import key_terms

MADE_UP = NOT_IN_DOCUMENTS + ': no text read says "{answer}" (searched for: {searched}).'
FIGURE_ELSEWHERE = NOT_IN_DOCUMENTS + ': the text read gives {figure} only as "{sentence}" (searched for: {searched}).'
_FIGURE = re.compile(r"\d+(?:[.,:]\d+)*")
_WORD = re.compile(r"[a-z]+")
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "  # noqa: SIM905
        "seventeen eighteen nineteen twenty".split()
    )
} | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "hundred": "100", "thousand": "1000", "dozen": "12"}
# a question whose answer is worked out from figures read, not copied from one
_COMPUTED = re.compile(
    r"\b(?:change|changed|difference|differ|total|sum|average|mean|median|percent|percentage|proportion|share|"
    r"ratio|rate|more|less|fewer|increase|decrease|growth|combined|together|between|older|younger|age|old|long|"
    r"apart|since|per|each|calculate|compute|estimate)\b",
    re.I,
)
NO_FIGURE = NOT_IN_DOCUMENTS + ': the question asks for a figure, and "{answer}" is none (searched for: {searched}).'
# a question that asks for a figure: a count, an amount, a share, a number that identifies something
_FIGURE_ASKED = re.compile(
    r"\bhow (?:many|much)\b|\bwhat (?:percentage|proportion|share)\b|\bnumber of\b"
    r"|\b(?:phone|telephone|account|fax|serial|reference|registration|invoice|order|case|room) number\b",
    re.I,
)
_LISTED = re.compile(r"[,;&]|\band\b", re.I)
# an answer that gives an amount without a figure: nothing at all, or free
_NO_AMOUNT = re.compile(r"\b(?:no|none|nothing|free|zero|nil|all|half|several|few|many|most)\b", re.I)
UNSEEN_FIGURE = NOT_IN_DOCUMENTS + ": no text read gives {figure} (searched for: {searched})."
# words that ask for a figure without naming what it counts ("How many members …?" names "members")
FIGURE_QUESTION_WORDS = frozenset({"many", "much", "long", "often", "old", "number", "amount", "total"})
MAX_WORDS = 6  # a longer answer is a sentence, read off a text (phrase_answer's, the closest sentence's)
STEM_SLACK = 2  # "American" is in "America", "Swedish" in "Swedish-born": a word matches on all but its last two


def made_up_terms(answer: str, question: str) -> list[str] | None:
    """The words of a short answer to check against the texts shown: its key terms that are not numbers (a sum or a
    difference of the figures read is no word of them); None for an answer that is not checked: a refusal, a yes or
    a no, a sentence, one of numbers only, or one the question names (an option of an either-or question)."""
    text = without_citations(answer).strip()
    if not text or says_not_found(text) or normalize_answer(text) in ("yes", "no") or len(text.split()) > MAX_WORDS:
        return None
    terms = [normalize_answer(t) for t in key_terms(text)]
    terms = [t for t in terms if t and not t.isdigit()]  # "0_" is a number once normalised
    asked = f" {normalize_answer(question)} "
    if not terms or all(f" {t} " in asked for t in terms):
        return None
    return terms


def said_in(terms: list[str], words: set[str]) -> bool:
    """Whether a term is a word of ``words``, or the start of one (all but its last :data:`STEM_SLACK` letters, at
    least four: "German" in "Germany")."""
    for term in terms:
        stem = term[: max(4, len(term) - STEM_SLACK)] if len(term) >= 4 else None
        if term in words or (stem is not None and any(w.startswith(stem) for w in words)):
            return True
    return False


def words_shown(records: list[ChunkRecord]) -> set[str]:
    """The words of the chunks shown (in full: a hit's snippet is part of its chunk), normalised."""
    return {word for record in records for word in normalize_answer(record.text).split()}


def figures_in(text: str, words: bool = False) -> set[str]:
    """The figures of a text ("£1,500" → "1500", "9:30", "3.5"), thousands separators left out; with ``words``, a
    number written as a word too, as its digits ("twelve" → "12": a text's "one cider press" holds "1")."""
    figures = {_plain(figure.replace(",", "")) for figure in _FIGURE.findall(text)}
    if words:
        figures |= {_NUMBER_WORDS[w] for w in _WORD.findall(text.lower()) if w in _NUMBER_WORDS}
    return figures


def _plain(figure: str) -> str:
    """A decimal without its trailing zeros ("3.50" → "3.5", "12.0" → "12"), as an answer may write it."""
    return figure.rstrip("0").rstrip(".") if "." in figure and ":" not in figure else figure


def unseen_figure(figures: list[str], question: str, chunks: list[Shown]) -> str | None:
    """The first of ``figures`` that no sentence of the chunks holds, where the question asks for no computation
    (a sum, a difference, an age, a share: figures no text need hold)."""
    if _COMPUTED.search(question):
        return None
    held = {figure for chunk in chunks for sentence in chunk.sentences for figure in figures_in(sentence, words=True)}
    return next((figure for figure in figures if figure not in held), None)


def figures_of(answer: str, question: str) -> list[str]:
    """The figures of a short answer that the question does not name; none for a refusal or a sentence."""
    text = without_citations(answer).strip()
    if not text or says_not_found(text) or len(text.split()) > MAX_WORDS:
        return []
    return sorted(figures_in(text) - figures_in(question))


@dataclass(frozen=True)
class Shown:
    """A chunk the run was shown: its document's title and its sentences (a table row as its header's fields)."""

    title: str
    sentences: list[str]


def names_question(asked: list[str], words: set[str]) -> bool:
    """Whether ``words`` hold a word of the question: as :func:`said_in`, or a short word with an ending ("die" in
    "died", "win" in "wins")."""
    return said_in(asked, words) or any(w.startswith(t) and len(w) - len(t) <= 2 for t in asked for w in words)


def reached_by_name(title: str, texts: list[tuple[str, str]], asked: list[str]) -> bool:
    """Whether another document's chunk shown (``texts``: each chunk's title and normalised text) names the
    document's title (at least four letters) and a word of the question: a second hop ("His mother was Ermengarde of
    Tours" for "When did Lothair II's mother die?") reached the document, whose own sentences need not name the
    question."""
    name = f" {normalize_answer(title)} "
    if len(name.strip()) < 4:
        return False
    return any(other != title and name in text and names_question(asked, set(text.split())) for other, text in texts)


def figure_elsewhere(figures: list[str], question: str, chunks: list[Shown]) -> tuple[str, str] | None:
    """The first of ``figures`` that the chunks' sentences hold (in digits or as a word) only where neither the
    sentence nor the one before it
    names a word of the question, nor was its document reached by name from a text that does; with the first
    sentence holding it. None when each figure the sentences hold has one that does (a figure no sentence holds is
    not this check's: a sum or a difference is in none)."""
    asked = [t for t in (normalize_answer(k) for k in key_terms(question)) if t and not t.isdigit()]
    asked = [t for t in asked if t not in FIGURE_QUESTION_WORDS]
    if not asked:
        return None
    words = [[set(normalize_answer(sentence).split()) for sentence in chunk.sentences] for chunk in chunks]
    texts = [(chunk.title, f" {normalize_answer(' '.join(chunk.sentences))} ") for chunk in chunks]
    for figure in figures:
        holding: list[tuple[str, bool]] = []
        for chunk, chunk_words in zip(chunks, words, strict=True):
            for i, sentence in enumerate(chunk.sentences):
                if figure not in figures_in(sentence, words=True):  # "four degrees" gives 4, as the answer may
                    continue
                named = names_question(asked, chunk_words[i] | (chunk_words[i - 1] if i else set()))
                holding.append((sentence, named or reached_by_name(chunk.title, texts, asked)))
        if holding and not any(named for _sentence, named in holding):
            return figure, whole_sentences(" ".join(holding[0][0].split())[:SENTENCE_CHARS], SENTENCE_CHARS)
    return None


def made_up_part(answer: str, question: str, words: set[str]) -> str | None:
    """The answer, or the part of it (parts are split by ";", as a two-part answer is written) none of whose words
    ``words`` holds, when its words are checked (:func:`made_up_terms`)."""
    text = without_citations(answer).strip()
    parts = [p.strip() for p in text.split(";") if p.strip()] if ";" in text else [text]
    for part in parts:
        terms = made_up_terms(part, question)
        if terms is not None and not said_in(terms, words):
            return part
    return None


def no_figure(answer: str, question: str) -> bool:
    """Whether a question that asks for a figure ("How many …?", "… phone number?") is answered with a short answer
    that has none (a name: "Riverside Community Orchard" for a bank account number); a list of names may be one."""
    text = without_citations(answer).strip()
    if not _FIGURE_ASKED.search(question) or not text or says_not_found(text) or len(text.split()) > MAX_WORDS:
        return False
    if choice_options(question) or yes_no_question(question) or _LISTED.search(text):
        return False
    return not figures_in(text, words=True) and not _NO_AMOUNT.search(text)


def refusal_of(
    answer: str, question: str, index: Index, seen: set[str], searched: str, figures: bool = True
) -> tuple[str, dict[str, Any]] | None:
    """The policy's "Not in the documents" for a final answer, with what it records; None when the answer stands.
    ``seen``: the chunks the run was shown; ``searched``: what it searched for, quoted."""
    records, _missing = index.read(sorted(seen))
    part = made_up_part(answer, question, words_shown(records))
    if part is not None:
        return MADE_UP.format(answer=part, searched=searched), {"made_up": part}
    if not figures:
        return None
    given = without_citations(answer).strip()
    if no_figure(answer, question):
        return NO_FIGURE.format(answer=given, searched=searched), {"no_figure": given}
    asked = figures_of(answer, question)
    if not asked:
        return None
    chunks = sentences_shown(index, records)
    unseen = unseen_figure(asked, question, chunks)
    if unseen is not None:
        why = {"answer": given, "figure": unseen}
        return UNSEEN_FIGURE.format(figure=unseen, searched=searched), {"figure_unseen": why}
    found = figure_elsewhere(asked, question, chunks)
    if found is None:
        return None
    figure, sentence = found
    why = {"answer": given, "figure": figure, "sentence": sentence}
    return FIGURE_ELSEWHERE.format(figure=figure, sentence=sentence, searched=searched), {"figure_elsewhere": why}


class AnswerInTextSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    figures: bool = Field(
        True,
        description="An answer's figures are checked too: a figure the text shown gives only in sentences naming "
        'nothing the question asks about (nor does the sentence before each: "640" for what the cider press cost, '
        "from an insurance premium), a figure no text shown gives where the question asks for no computation, and "
        'a question asking for a figure answered with none ("Riverside Community Orchard" for a bank account '
        'number) are "Not in the documents" (docs/policies.md).',
    )


def sentences_shown(index: Index, records: list[ChunkRecord]) -> list[Shown]:
    """Each chunk shown: its document's title and its sentences (a table row as its header's fields, as search shows
    it)."""
    return [Shown(title_of(record.doc_id), index.sentences(record, rows_as_fields=True)) for record in records]


@register
class AnswerInText(Policy):
    """Asked for a company's stock ticker that no file of its handbook holds, a 1.5B model answered "KSTL" and cited the
    company's page; asked, in a guideline whose sentence on it was taken out, for the main diagnostic method of gray
    zone lymphoma, it answered "Immunohistochemistry", a word of no text it was shown. A near miss copies a word of what
    was read; a made-up answer copies none. So a short final answer (as it will be shown, after the rereads that cut a
    sentence to its phrase; up to six words, not yes or no, not numbers only, not an option the question names) none of
    whose words is in any chunk the run was shown — a snippet's chunk counts whole, a word matches its start ("American"
    for "America") — is "Not in the documents", saying it and what was searched (the harness's, recorded as such).
    Replayed exactly on the default's recorded runs (it changes only the final answer): Medical dev absent questions
    said so 5 → 15 %, no answer changed on any answerable question of either dev set, their set-aside questions or 78
    new 2Wiki ones, and of every answer of 72 recorded run directories it refuses 20, all wrong; on a team's own folder,
    live, absent questions said so 1 → 2 of 5 (docs/notebook/2026-12-07-answers-from-no-text.md).

    A two-part answer ("Work day coordinator; John") is checked part by part. And a figure carries no word to
    check, so its own checks (the setting ``figures``): asked what an orchard's cider press cost, the model answered
    "£640", the insurance premium of an e-mail; how many members it has, "4", a rule's number. A figure read only
    in sentences that name nothing the question asks about, a figure no text shown gives (unless the question asks
    to work one out: a total, a change, an age), and a name given where a figure is asked for are "Not in the
    documents", saying where the figure was read (docs/notebook/2026-12-07-figures-and-two-parts.md)."""

    name = "answer_in_text"
    summary = (
        "a short answer none of whose words is in any text shown, or a figure read only about something else, is "
        'made up: "Not in the documents"'
    )
    Settings = AnswerInTextSettings
    config: AnswerInTextSettings

    def start(self, run: RunView) -> None:
        self.why: dict[str, Any] | None = None

    def settle(self, run: RunView, answer: str) -> Revised | None:
        searched = quoted_searches(searched_for(run))
        seen = set(run.toolkit.tracker.seen_ids)
        found = refusal_of(answer, run.question, run.toolkit.index, seen, searched, self.config.figures)
        if found is None:
            return None
        self.acted()
        refusal, self.why = found
        return Revised(refusal, "not in the documents")

    def record(self, run: RunView) -> dict[str, Any] | None:
        return self.why
