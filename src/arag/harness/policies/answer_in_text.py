"""answer_in_text: a short answer none of whose words is in any text the run was shown is made up: "Not in the
documents"."""

from __future__ import annotations

from typing import Any

from arag.citations import without_citations
from arag.harness.contract import Policy, Revised, RunView
from arag.harness.reads import quoted_searches, searched_for
from arag.harness.registry import register
from arag.index import Index
from arag.text import NOT_IN_DOCUMENTS, normalize_answer, says_not_found
from arag.verification import key_terms

MADE_UP = NOT_IN_DOCUMENTS + ': no text read says "{answer}" (searched for: {searched}).'
MAX_WORDS = 6  # a longer answer is a sentence, read off a text (phrase_answer's, the closest sentence's)
STEM_SLACK = 2  # "American" is in "America", "Swedish" in "Swedish-born": a word matches on all but its last two


def made_up_terms(answer: str, question: str) -> list[str] | None:
    """The words of a short answer to check against the texts shown: its key terms that are not numbers (a sum or a
    difference of the figures read is no word of them); None for an answer that is not checked: a refusal, a yes or
    a no, a sentence, one of numbers only, or one the question names (an option of an either-or question)."""
    text = without_citations(answer).strip()
    if not text or says_not_found(text) or normalize_answer(text) in ("yes", "no") or len(text.split()) > MAX_WORDS:
        return None
    terms = [normalize_answer(t) for t in key_terms(text) if not t.isdigit()]
    terms = [t for t in terms if t]
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


def words_shown(index: Index, chunk_ids: set[str]) -> set[str]:
    """The words of the chunks shown (in full: a hit's snippet is part of its chunk), normalised."""
    records, _missing = index.read(sorted(chunk_ids))
    return {word for record in records for word in normalize_answer(record.text).split()}


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
    live, absent questions said so 1 → 2 of 5 (docs/notebook/2026-12-07-answers-from-no-text.md)."""

    name = "answer_in_text"
    summary = 'a short answer none of whose words is in any text shown is made up: "Not in the documents"'

    def start(self, run: RunView) -> None:
        self.made_up: str | None = None

    def settle(self, run: RunView, answer: str) -> Revised | None:
        terms = made_up_terms(answer, run.question)
        if terms is None or said_in(terms, words_shown(run.toolkit.index, set(run.toolkit.tracker.seen_ids))):
            return None
        self.acted()
        self.made_up = without_citations(answer).strip()
        searched = quoted_searches(searched_for(run))
        return Revised(MADE_UP.format(answer=self.made_up, searched=searched), "not in the documents")

    def record(self, run: RunView) -> dict[str, Any] | None:
        return {"made_up": self.made_up} if self.made_up else None
