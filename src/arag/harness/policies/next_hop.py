"""next_hop: an answer that names a person where the question asks for a place, a date, a number, a team or a title
is a step on the way; the person's own text is read for the model and it is asked again."""

from __future__ import annotations

import re
from typing import Any

from arag.citations import without_citations
from arag.harness.contract import Hold, Policy, Reread, RunView
from arag.harness.registry import register
from arag.harness.text import choice_options, without_qualifier, yes_no_question
from arag.index import Index, title_of
from arag.store import ChunkRecord
from arag.text import says_not_found

# What a question asks for, by its words; the first that matches names it. A question none matches ("Who …",
# "What is …") is left alone: its answer may well be a person.
KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a date", re.compile(r"^\s*when\b|\b(?:what|which) (?:year|date|day|month|decade|century)\b|\bdate of\b", re.I)),
    ("a number", re.compile(r"\bhow (?:many|much|old|long|far|tall|big)\b", re.I)),
    ("a nationality", re.compile(r"\bnationality\b|\bwhich country .{0,40}\bfrom\b", re.I)),
    (
        "a place",
        re.compile(
            r"^\s*where\b|\bwhere (?:was|were|is|are|did|does|do|has|had)\b|\bplace of\b|\b(?:what|which) "
            r"(?:country|city|town|state|county|region|province|place|location|address|village|island)\b",
            re.I,
        ),
    ),
    (
        "a team or an organisation",
        re.compile(
            r"\b(?:what|which) (?:team|department|company|organi[sz]ation|group|school|university|college|club"
            r"|party|band|agency|office)\b",
            re.I,
        ),
    ),
    (
        "a title or a role",
        re.compile(
            r"\b(?:job title|(?:what|which) (?:title|role|position|job|profession|occupation|rank))\b"
            r"|\bwhat (?:does|did) .{1,60}\bdo for a living\b",
            re.I,
        ),
    ),
)
# Longer than this, or with a digit, an answer is no bare name: it is not checked (no model call spent on it).
MAX_NAME_WORDS = 6
_DIGIT = re.compile(r"\d")
# a name's own digits, which make it no number: "Victor Cavendish, 9th Duke of Devonshire", "William Axt (1922)"
_ORDINAL = re.compile(r"\b\d+(?:st|nd|rd|th)\b")
# "Who leads it?" answered with an address: the person's contact, not the person
_CONTACT = re.compile(r"\S+@\S+\.\w+|https?://|\bwww\.", re.I)
_WHO = re.compile(r"^\s*(?:who|whom)\b", re.I)

PERSON_PROMPT = "Reply with yes or no only."
PERSON_QUESTION = 'Is "{name}" the name of a person?'
HOP = (
    'You answered "{name}", a person, but the question asks for {kind}: "{name}" is a step on the way. Above is what '
    "the documents say about {name}. Answer the question from what you have read: {question}"
)
HOP_SEARCH = (
    'You answered "{name}", a person, but the question asks for {kind}: "{name}" is a step on the way. Search for '
    "what the question asks about {name}, then answer: {question}"
)
NOT_A_PERSON = (
    'The question asks who; "{name}" is an address, not a person. Find the person it belongs to in what you read, '
    "or search for them, then answer: {question}"
)
HOP_QUOTE = (
    'You answered "{name}", a person, but the question asks for {kind}: "{name}" is a step on the way. You read '
    'about {name} in [chunk {chunk}]: "{quoted}" Answer the question from what you have read: {question}'
)
HITS_LOOKED_AT = 5  # of the keyword search for the name
QUOTED_CHARS = 400


def asks_for(question: str) -> str | None:
    """What the question asks for where a person's name cannot be the answer ("a date", "a place", …), else None
    (an either-or and a yes/no question too: their answers are their options)."""
    if choice_options(question) or yes_no_question(question):
        return None
    return next((kind for kind, pattern in KINDS if pattern.search(question)), None)


def bare_name(answer: str) -> str | None:
    """The answer as a name the check may ask about: its citations and a bracket after it aside, short, no digit but
    an ordinal ("9th Duke of Devonshire"), not a refusal."""
    name = without_qualifier(" ".join(without_citations(answer).split())).strip(" .;,:")
    if (
        not name
        or says_not_found(answer)
        or _DIGIT.search(_ORDINAL.sub("", name))
        or len(name.split()) > MAX_NAME_WORDS
    ):
        return None
    return name


def address_for_who(question: str, answer: str) -> str | None:
    """The answer, when a "who" question is answered with an address (an e-mail, a web address) and no more."""
    if not _WHO.search(question) or choice_options(question):
        return None
    address = without_citations(answer).strip()
    return address if _CONTACT.search(address) and len(address.split()) <= MAX_NAME_WORDS else None


def says_yes(reply: str) -> bool:
    return reply.strip().lower().startswith("yes")


def person_messages(name: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": PERSON_PROMPT},
        {"role": "user", "content": PERSON_QUESTION.format(name=name)},
    ]


def text_about(run: RunView, name: str) -> tuple[str, ChunkRecord] | None:
    """What to show about ``name``: among the keyword search's first hits for it (in the run's scope), the chunk of
    a document titled by the name ("read" it if unread, else "quote" its opening: the model read it and answered
    the name), else the first hit not yet read ("read"); None when there is none."""
    index = run.toolkit.index
    hits = [hit.chunk_id for hit in index.keyword_search([name], HITS_LOOKED_AT, run.toolkit.scope)]
    records, _missing = index.read(hits)
    own = [r for r in records if title_of(r.doc_id).strip().lower() == name.lower()]
    if own:
        return ("read" if own[0].chunk_id not in run.read_ids else "quote"), own[0]
    unread = [r for r in records if r.chunk_id not in run.read_ids]
    return ("read", unread[0]) if unread else None


def opening(index: Index, record: ChunkRecord) -> str:
    """The first sentences of a chunk, up to :data:`QUOTED_CHARS` (a person's own text opens with who they are:
    born, died, where)."""
    title = record.doc_id
    quoted = ""
    for sentence in (" ".join(s.split()) for s in index.sentences(record)):
        if not quoted and sentence.removeprefix(title).strip().startswith(title):
            sentence = sentence.removeprefix(title).strip()  # a passage opening with its title: said once
        if quoted and len(quoted) + len(sentence) > QUOTED_CHARS:
            break
        quoted = f"{quoted} {sentence}".strip()
    return quoted[: QUOTED_CHARS + 200]


@register
class NextHop(Policy):
    """A multi-hop question's commonest wrong answer from a 1.5B model is its first hop: asked where the director
    of a film was born, it answered the director's name; asked where someone's father died, the father's name (5
    of the 21 wrong answers on the 2Wiki dev questions; on a team's handbook, the owner's name for their job
    title). The answer has the wrong kind: a person where the question asks for a place, a date, a number, a
    nationality, a team or a title. So when the question asks for one of those (by its words) and the model answers
    with a short name, one more call without tools asks the model whether that is a person's name; if so, while
    steps remain, the answer goes back once with the hop made for it: the person's own chunk (a document titled by
    the name in the keyword search for it) read, or quoted when the model had read it, else the search's first hit
    not yet read; then the question asked again. Asked to search for the person instead, the model did not
    (answer_check's second chance, docs/notebook/2026-12-06-a-second-chance-after-the-check.md). An address for
    "who" goes back too (no call). Once per question; the answer at the step limit is left alone. Measured: one
    more right 2Wiki dev answer and one wrong one turned "Not in the documents", Medical and set-aside questions
    unchanged, three more of six multi-hop answers on a team's folder (docs/notebook/2026-12-06-the-next-hop.md)."""

    name = "next_hop"
    summary = (
        "a person's name given where the question asks for a place, a date, a number, a team or a title is sent "
        "back once with that person's text read"
    )

    def start(self, run: RunView) -> None:
        self.sent_back = False
        self.hops: list[dict[str, Any]] = []

    def on_answer(self, run: RunView, answer: str) -> Hold | None:
        address = None if self.sent_back else address_for_who(run.question, answer)
        if address is None:
            return None
        self.sent_back = True
        self.acted()
        self.hops.append({"answer": address, "kind": "a person"})
        return Hold(NOT_A_PERSON.format(name=address, question=run.question))

    def reread(self, run: RunView, answer: str) -> Reread | None:
        if self.sent_back or run.stop_reason is not None:
            return None
        kind = asks_for(run.question)
        name = bare_name(answer) if kind else None
        if kind is None or name is None:
            return None

        def verdict(reply: str) -> str | Hold:
            if not says_yes(reply):
                return answer
            self.sent_back = True
            self.acted()
            about = text_about(run, name)
            self.hops.append({"answer": name, "kind": kind, "shown": [about[0], about[1].chunk_id] if about else None})
            if about is None:
                return Hold(HOP_SEARCH.format(name=name, kind=kind, question=run.question))
            how, record = about
            q = run.question
            if how == "quote":
                quoted = opening(run.toolkit.index, record)
                return Hold(HOP_QUOTE.format(name=name, kind=kind, chunk=record.chunk_id, quoted=quoted, question=q))
            said = HOP.format(name=name, kind=kind, question=run.question)
            return Hold(said, read=[record.chunk_id], why="for the next hop")

        return Reread(person_messages(name), verdict)

    def record(self, run: RunView) -> dict[str, Any] | None:
        return {"hops": self.hops} if self.hops else None
