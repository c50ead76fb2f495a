"""absent_words: a question most of whose own words no document within the run's scope uses is answered "Not in
the documents", naming them."""

from __future__ import annotations

import re
from typing import Any

from arag.harness.contract import Allow, Base, Policy, Revised, RunView
from arag.harness.registry import register
from arag.text import NOT_IN_DOCUMENTS, STOPWORDS, normalize_answer

NO_DOCUMENT_USES = NOT_IN_DOCUMENTS + ": no document uses {words}, the question's words."
SAID_ALREADY = NOT_IN_DOCUMENTS + ": no document"  # a refusal naming what no document holds stands
MIN_ABSENT = 2  # one word alone is too often said in other words ("COGS", "tenure")
ABSENT_SHARE = 0.5  # of the question's own words
# a stem found in this many chunks is taken as used: checking each for a word that starts with it would cost a read
# of every one on a large corpus
PROBE_CHUNKS = 20
_TOKEN = re.compile(r"\w[\w'’-]*")
# the word after these names the kind of thing answered ("which charity", "what year"): a text names the thing itself
_ASKING = frozenset(["which", "what", "whose"])
_FUNCTION_WORDS = STOPWORDS | frozenset(
    "is am are was were be been being do does did has have had how many much who whom whose when where why what "  # noqa: SIM905
    "which that this these those it its their there than as into about under over per each any all most more less "
    "last first one two both either same other another not no yes get got".split()
)
# Words that frame a question rather than name what it is about: how an answer is worked out (change, percentage,
# between), where it is shown (table, listed), when (year, period), the kind of answer (reason, name, job title).
# A text gives the figure, the year or the name without them; TAT-QA's questions over their own report extracts use
# them for 9 in 10 of the words no extract holds.
_FRAMING_WORDS = frozenset(
    "change changes changed percentage percent proportion ratio rate difference average mean median total "  # noqa: SIM905
    "sum amount amounts value values number numbers count increase increased increases decrease decreased "
    "decreases growth grow grew larger largest smaller smallest higher highest lower lowest greater "
    "greatest least exceed exceeded compare compared comparing comparison between among above below "
    "before after during respectively respective absolute nominal net calculate calculated calculation "
    "table tables listed list show shown shows highlighted highlight highlights represent represents "
    "information data provided provide provides given give gives included include includes made make "
    "making based according accordance regarding available involved contain contains containing mentioned "
    "mention stated state described describe types type kind kinds sort items item component components "
    "part parts form term terms definition defined define means meaning used use uses using called named "
    "name names year years period periods date dates time times day days month months end beginning begin "
    "start reason reasons main factors factor caused cause causes contributed contribute job title role "
    "position occupation company person people someone thing things example examples order".split()
)


def question_words(question: str) -> list[str]:
    """The words a question is about, in order, once each: lower-cased, without function words, framing words,
    figures, words under three letters, and the word after which/what/whose (the kind of thing answered)."""
    tokens = _TOKEN.findall(question)
    kinds = {i + 1 for i, token in enumerate(tokens) if token.lower() in _ASKING}
    words = []
    for i, token in enumerate(tokens):
        if i in kinds:
            continue
        for word in normalize_answer(token).split():
            if len(word) < 3 or word in _FUNCTION_WORDS or word in _FRAMING_WORDS or any(c.isdigit() for c in word):
                continue
            words.append(word)
    return list(dict.fromkeys(words))


def used(run: RunView, word: str) -> bool:
    """Whether a chunk within the run's scope has a word that starts like ``word`` (its stem: all but its last three
    letters, at least four: "dentistry" is used where "dentist" is, "rent" where "rented" is, not in "current")."""
    stem, index = word[: max(4, len(word) - 3)], run.toolkit.index
    hits = index.keyword_search([stem], PROBE_CHUNKS, run.toolkit.scope)
    if len(hits) >= PROBE_CHUNKS:
        return True
    starts = re.compile(rf"(?<!\w){re.escape(stem)}")
    records, _ = index.read([hit.chunk_id for hit in hits], run.toolkit.scope)
    return any(starts.search(normalize_answer(record.text)) for record in records)


def absent_words(run: RunView, question: str) -> list[str]:
    """The question's words no document within scope uses, when they are two or more and at least half of its
    words; else none."""
    words = question_words(question)
    absent = [word for word in words if not used(run, word)]
    return absent if len(absent) >= MIN_ABSENT and len(absent) >= ABSENT_SHARE * len(words) else []


@register
class AbsentWords(Policy):
    """On a team's own folders the 1.5B model answered questions about what the documents never mention with the
    nearest name or figure ("the company's dental insurance provider?" → a vendor of another kind; "which vet
    specialises in dentistry?" → a vet; a question asked of one file about what only another holds → a figure of
    that file), and the evidence ledger's check, a name no document holds, could not see it: these questions name
    nothing, their missing words are lower-case. When two or more of the question's own words, and at least half of
    them, appear in no document within the run's scope (by stem: "dentistry" is used where "dentist" is), the
    question is about something the documents do not hold: the model is asked for its answer at once, and the
    answer is "Not in the documents: no document uses …" (the harness's, recorded as such). Framing words ("change",
    "percentage", "table", "year", "job title") and the kind of thing asked ("which charity") do not count: a text
    gives the figure or the name without them."""

    name = "absent_words"
    summary = (
        "a question most of whose own words (two or more) no document within the run's scope uses is answered "
        '"Not in the documents", naming them'
    )

    def start(self, run: RunView) -> None:
        self.absent = absent_words(run, run.question)

    def allow(self, run: RunView, base: Base) -> Allow | None:
        return Allow(final=True) if self.absent else None  # nothing to search for: answer (then revise) at once

    def revise(self, run: RunView, answer: str) -> Revised | None:
        if not self.absent:
            return None
        if normalize_answer(answer).startswith(normalize_answer(SAID_ALREADY)):
            return None  # what no document holds said already (the evidence ledger's names)
        self.acted()
        words = ", ".join(f'"{word}"' for word in self.absent[:-1])
        words = f'{words} or "{self.absent[-1]}"' if words else f'"{self.absent[-1]}"'
        return Revised(NO_DOCUMENT_USES.format(words=words), "not in the documents")

    def record(self, run: RunView) -> dict[str, Any]:
        return {"absent": self.absent} if self.absent else {}
