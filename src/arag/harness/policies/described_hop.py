"""described_hop: a question that describes the one it asks about ("the person who keeps the controlled drugs
register") is answered about the one a text shown names so; that one's unread text is read for the first answer."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from arag.harness.contract import Allow, Base, Hold, Policy, ReadInstead, Refuse, RunView
from arag.harness.reads import SENTENCE_CHARS, naming
from arag.harness.registry import register
from arag.harness.text import NAME_PATTERN, choice_options, whole_sentences, without_qualifier, yes_no_question
from arag.index import Index, title_of
from arag.store import ChunkRecord
from arag.text import STOPWORDS, normalize_answer
from arag.tools.toolkit import ToolCall

# "the person who keeps …", "the branch where Priya Shah works", "the service that takes …": a definite noun phrase
# and the relative clause that says which one it is, up to the question's end or a comma
_DESCRIBED = re.compile(r"\bthe ((?:[a-z][\w-]* ){0,2}?([a-z][\w-]*)) (who|whom|that|where) (?=\S)([^?,;]*)")
# "which" after a noun in a question is mostly another question's ("the table which are …"); a clause says at
# least this many words ("the total revenue that year" is no clause)
CLAUSE_WORDS = 2
# the phrase is what is asked ("What is the award that …?"), not the one the question asks something about
_ASKS_FOR_IT = re.compile(r"\b(?:what|which|who)(?:\s+(?:is|was|are|were))?\s*$", re.I)
# an auxiliary before the phrase: the question's own verb follows the clause ("Where did the person who supervises
# the press train?"), so the clause's last words may not be its own
_INVERTED = re.compile(r"\b(?:do|does|did|will|would|can|could|should|shall|may|might|must)\b", re.I)
_EITHER_OR = re.compile(r"\bor\b", re.I)
# past forms a stem does not match ("kept" for "keeps"): a clause's verb and a text's
_IRREGULAR = {
    form: base
    for base, forms in (
        ("keep", "kept"),
        ("lead", "led"),
        ("write", "wrote written"),
        ("run", "ran"),
        ("take", "took taken"),
        ("give", "gave given"),
        ("make", "made"),
        ("hold", "held"),
        ("find", "found"),
        ("teach", "taught"),
        ("buy", "bought"),
        ("sell", "sold"),
        ("pay", "paid"),
        ("meet", "met"),
        ("send", "sent"),
        ("build", "built"),
        ("bring", "brought"),
        ("tell", "told"),
        ("choose", "chose chosen"),
        ("speak", "spoke spoken"),
        ("win", "won"),
        ("begin", "began begun"),
        ("leave", "left"),
        ("lose", "lost"),
        ("grow", "grew grown"),
        ("draw", "drew drawn"),
        ("drive", "drove driven"),
        ("know", "knew known"),
        ("see", "saw seen"),
        ("go", "went gone"),
        ("say", "said"),
        ("think", "thought"),
        ("feed", "fed"),
        ("oversee", "oversaw overseen"),
        ("undertake", "undertook undertaken"),
    )
    for form in forms.split()
}
_DAYS_AND_MONTHS = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july august "  # noqa: SIM905
    "september october november december".split()
)
_ARTICLES = ("The", "A", "An")
WINDOW = 2  # sentences before one that may say the clause with it ("… X-ray unit … installed. … Priya Shah will train
# every vet on it")
STEM_LETTERS = 4  # a word matches another that shares all but its last two letters, at least these

QUOTED = 2  # sentences of the chunk read that name the one described, quoted in the message
NAMED = '{described} is {name}, as [chunk {chunk}] says: "{sentence}"'
READ_NOTE = " Above is [chunk {chunk}], read for you; it says: {said}."
READ_INSTEAD = " Here is [chunk {chunk}], read for you{said}."
ASK = (
    "Answer the question about {name} (with what it asks about them, not with the name), short, with its [chunk ID]: "
    "{question}"
)


@dataclass(frozen=True)
class Described:
    """The phrase a question describes its subject with: its head noun ("person"), the relative clause ("keeps the
    controlled drugs register …") and whether the question's own verb may follow the clause (``inverted``)."""

    phrase_head: str  # the noun phrase before the clause, up to three words ("new digital unit")
    pronoun: str
    clause: str
    inverted: bool

    @property
    def head(self) -> str:
        """The phrase's head noun, its last word ("unit")."""
        return self.phrase_head.split()[-1]

    def said(self, matched: tuple[str, ...] = ()) -> str:
        """The phrase as a message quotes it; where the question's own verb may follow the clause, the clause up to
        the first of its words a text did not say (``matched``: "the person who keeps the controlled drugs register
        …", not "… register join the practice")."""
        clause = self.clause.strip()
        if self.inverted and matched:
            words = clause.split()
            kept: list[str] = []
            for word in words:
                terms = _content(word)
                if terms and kept and not any(t in matched for t in terms):
                    break
                kept.append(word)
            if len(kept) < len(words):
                while kept and not _content(kept[-1]):
                    kept.pop()  # "the vet who trains the …": up to a word that says something
                clause = " ".join(kept) + " …"
        return f'"the {self.phrase_head} {self.pronoun} {clause}"'


@dataclass(frozen=True)
class Bridge:
    """Who or what a text shown names as the one described: the name, the sentence, its chunk, and the clause's
    words the sentence (with the ones before it) says."""

    name: str
    sentence: str
    chunk_id: str
    matched: tuple[str, ...]


def described_phrase(question: str) -> Described | None:
    """The phrase a question describes the one it asks about with, where it asks something about that one (not an
    either-or or a yes/no question, and not the phrase itself: "What is the award that …?")."""
    if choice_options(question) or yes_no_question(question) or _EITHER_OR.search(question):
        return None
    found = _DESCRIBED.search(question)
    if found is None or _ASKS_FOR_IT.search(question[: found.start()]):
        return None
    if len(set(_content(found.group(4)))) < CLAUSE_WORDS:
        return None
    inverted = _INVERTED.search(question[: found.start()]) is not None
    return Described(found.group(1), found.group(3), found.group(4), inverted)


def _content(text: str) -> list[str]:
    """A text's words that say something: normalised, no stopwords, at least three letters, past forms as their base."""
    words = [w for w in normalize_answer(text.replace("-", " ")).split() if w not in STOPWORDS and len(w) > 2]
    return [_IRREGULAR.get(w, w) for w in words]


def _match(term: str, words: set[str]) -> bool:
    """Whether ``term`` is a word of ``words``, or shares all of either's letters but the last two (at least four:
    "trains" and "train", "supervises" and "supervision")."""
    if term in words:
        return True
    if len(term) < STEM_LETTERS:
        return False
    stem = term[: max(STEM_LETTERS, len(term) - 2)]
    return any(
        w.startswith(stem) or (len(w) >= STEM_LETTERS and term.startswith(w[: max(STEM_LETTERS, len(w) - 2)]))
        for w in words
    )


def _fields(sentence: str) -> list[tuple[str, str]]:
    """A table row as search shows it ("name: Priya Shah; branch: Salcombe") as (header, value) pairs."""
    parts = [part.split(": ", 1) for part in sentence.split("; ")]
    return [(p[0], p[1]) for p in parts if len(p) == 2]


def _no_date(name: str) -> bool:
    """Whether a name is no day, month or number ("Wednesdays", "October 12")."""
    plain = [w.lower().strip(".,") for w in name.split()]
    return not all(w in _DAYS_AND_MONTHS or w.removesuffix("s") in _DAYS_AND_MONTHS or w.isdigit() for w in plain)


def names_in(sentence: str, question: str, head: str, row: bool) -> list[str]:
    """Who or what ``sentence`` names that the question does not: in a table row, the value under a header that is
    the described head ("branch: Salcombe"), else its capitalised values; in prose its capitalised names, a single
    word that opens the sentence, a leading article and days and months aside."""
    asked = f" {normalize_answer(question)} "

    question_words = asked.split()

    def new(name: str) -> bool:
        plain = normalize_answer(name)
        if not plain or f" {plain} " in asked or not _no_date(name):
            return False
        # a short form of the question's own name ("The Misc" for "The Miscellany News") is no one else
        return not all(any(q.startswith(w) for q in question_words) for w in plain.split())

    if row:
        fields = _fields(sentence)
        under_head = [value for header, value in fields if _match(head, set(_content(header)))]
        values = under_head or [value for _header, value in fields if value[:1].isupper()]
        return [value for value in values if new(value)]
    names: list[str] = []
    for found in NAME_PATTERN.finditer(sentence):
        words = found.group().strip(" .,'’").split()
        if found.start() == 0 and len(words) == 1:
            continue  # "Outside opening hours, …": capitalised as the sentence's first word
        while words and (words[0] in _ARTICLES or words[0].lower() in STOPWORDS or not _no_date(words[0])):
            words = words[1:]  # "From October the Salcombe branch …": a name joined to the words before it
        name = " ".join(words)
        if name and new(name) and name not in names:
            names.append(name)
    return names


def bridge_in(index: Index, question: str, described: Described, chunk_ids: list[str]) -> Bridge | None:
    """The sentence of the chunks (in order) that names someone or something the question does not and says the
    clause: at least two of its words (all, if it has fewer), itself or with the two sentences before it (a table
    row alone), its first word among them where the question's own verb may follow the clause; of those, the one
    that says the clause's first word itself, then most of the clause itself, then with the ones before, then has the
    described head (the first of a tie). None if no sentence does."""
    clause = list(dict.fromkeys(_content(described.clause)))
    needed = min(2, len(clause))
    if not clause:
        return None
    records, _missing = index.read(chunk_ids)
    best: tuple[tuple[bool, int, int, bool], Bridge] | None = None
    for record in records:
        plain = index.sentences(record)
        shown = index.sentences(record, rows_as_fields=True)
        before: list[set[str]] = []
        for as_written, sentence in zip(plain, shown, strict=True):
            row = as_written != sentence
            own = set(_content(sentence))
            window = own.union(*before[-WINDOW:]) if not row else own
            before.append(own)
            matched = [term for term in clause if _match(term, window)]
            if len(matched) < needed or (described.inverted and clause[0] not in matched):
                continue
            names = names_in(sentence, question, described.head, row)
            if not names:
                continue
            # the clause's first word (its verb: "published") in the sentence itself, then the clause's words it says
            # itself ("Moulin Rouge was a magazine in Russia" says the subject, not who published it), then with the
            # ones before it, then the head in it
            own_matched = sum(_match(term, own) for term in clause)
            score = (_match(clause[0], own), own_matched, len(matched), _match(described.head, own))
            if best is None or score > best[0]:
                quoted = whole_sentences(" ".join(sentence.split())[:SENTENCE_CHARS], SENTENCE_CHARS)
                best = (score, Bridge(names[0], quoted, record.chunk_id, tuple(matched)))
    return None if best is None else best[1]


def outer_words(question: str, described: Described, matched: tuple[str, ...] = ()) -> list[str]:
    """The question's words that are not the described phrase's (as :meth:`Described.said` quotes it): what it asks
    about the one described ("year", "join", "practice")."""
    own = set(_content(f"{described.phrase_head} {described.said(matched)}"))
    return [w for w in _content(question) if w not in own]


@register
class DescribedHop(Policy):
    """Asked in which year the person who keeps a practice's controlled drugs register joined it, a 1.5B model read
    the policy that names her ("The controlled drugs register is kept by Gemma Holt") and answered the year the
    practice was founded; asked for the phone number of the service that takes its calls at night, it read that
    they go to Vets Now Plymouth and answered "Not in the documents" — the number was on another page, under that
    name. The one a question describes (a definite phrase with a relative clause: "the person who …", "the branch
    where Priya Shah works", "the service that …"; not an either-or or yes/no question, nor a phrase that is what is
    asked) is a hop the model did not make. So once a text shown has a sentence that says most of the clause and
    names someone or something the question does not (a table row: the value under the described head, "branch:
    Salcombe"), the model's first answer is held, or its repeated call answered, once: that sentence is quoted with
    the name, the unread chunk that names it (the document titled so, else the one with most of the question's other
    words) is read for the model with its sentences that name it quoted (a row as its fields: a small model misread
    the table), and the next action is the answer, about that one
    (docs/notebook/2026-12-07-the-one-a-question-describes.md)."""

    name = "described_hop"
    summary = (
        'the one a question describes ("the person who keeps the register") is named from the text shown and its '
        "unread text read, at a repeated call or for the first answer (once)"
    )

    def start(self, run: RunView) -> None:
        self.described = described_phrase(run.question)
        self.answer_next = False
        self.took: dict[str, Any] | None = None

    def allow(self, run: RunView, base: Base) -> Allow | None:
        answer_next, self.answer_next = self.answer_next, False  # for one action
        return Allow(final=True) if answer_next and not base.forced else None

    def hop(self, run: RunView, at: str) -> tuple[Bridge, list[str], str, str] | None:
        """The one described, as a text shown names them; the chunk to read for them (none if every chunk naming them
        was read); what the model is told of them; and the read chunk's sentences that name them, quoted. None before
        a text shown names them, or once told (``at``: the hook telling it, recorded)."""
        if self.described is None or self.took is not None:
            return None
        shown = list(dict.fromkeys([*run.read_ids, *run.toolkit.tracker.seen_ids]))
        bridge = bridge_in(run.toolkit.index, run.question, self.described, shown)
        if bridge is None:
            return None
        unread = [c for c in naming(run, bridge.name) if c not in run.read_ids and c != bridge.chunk_id]
        records, _missing = run.toolkit.index.read(unread)
        to_read = _best(records, run.question, self.described, bridge)
        self.acted()
        self.answer_next = True
        self.took = {"name": bridge.name, "from": bridge.chunk_id, "read": [r.chunk_id for r in to_read], "at": at}
        told = NAMED.format(
            described=self.described.said(bridge.matched),
            name=bridge.name,
            chunk=bridge.chunk_id,
            sentence=bridge.sentence,
        )
        return bridge, [r.chunk_id for r in to_read], told, _naming_sentences(run.toolkit.index, to_read, bridge.name)

    def on_repeat(self, run: RunView, call: ToolCall) -> ReadInstead | Refuse | None:
        found = self.hop(run, "repeat")
        if found is None:
            return None
        bridge, to_read, told, said = found
        ask = ASK.format(name=bridge.name, question=run.question)
        if not to_read:
            return Refuse(f"Instead: {told} {ask}")
        read = READ_INSTEAD.format(chunk=to_read[0], said=f", which says: {said}" if said else "")
        return ReadInstead(tuple(to_read), f"Instead: {told}{read} {ask}", focus=f"{bridge.name}: {run.question}")

    def on_answer(self, run: RunView, answer: str) -> Hold | None:
        if run.stop_reason is not None:
            return None
        found = self.hop(run, "answer")
        if found is None:
            return None
        bridge, to_read, told, said = found
        read = READ_NOTE.format(chunk=to_read[0], said=said) if to_read and said else ""
        message = f"Before your answer stands: {told}{read} {ASK.format(name=bridge.name, question=run.question)}"
        focus = f"{bridge.name}: {run.question}"
        return Hold(message, read=to_read, why="for the one the question describes", focus=focus)

    def record(self, run: RunView) -> dict[str, Any] | None:
        return self.took


def _naming_sentences(index: Index, records: list[ChunkRecord], name: str) -> str:
    """The sentences of ``records`` that name ``name``, quoted (a table row as its fields: "name: Gemma Holt; …;
    joined: 2015", the year next to the name, where a small model misread the row of a table)."""
    wanted = f" {normalize_answer(name)} "
    naming_it = [
        whole_sentences(" ".join(sentence.split())[:SENTENCE_CHARS], SENTENCE_CHARS)
        for record in records
        for sentence in index.sentences(record, rows_as_fields=True)
        if wanted in f" {normalize_answer(sentence)} "
    ]
    return " ".join(f'"{sentence}"' for sentence in naming_it[:QUOTED])


def _best(records: list[ChunkRecord], question: str, described: Described, bridge: Bridge) -> list[ChunkRecord]:
    """The chunk of ``records`` of the document titled by the one's name (one per person or work, as in a wiki),
    else that holds most of the question's other words (the first of a tie); none if no chunk is either (a text that
    only names them, read for the model, led it to that text's other names)."""
    wanted = outer_words(question, described, bridge.matched)
    name = normalize_answer(bridge.name)
    scored = [
        (
            normalize_answer(without_qualifier(title_of(r.doc_id))) == name,  # the one's own document, where one is
            sum(_match(w, set(_content(r.text))) for w in wanted),
            -i,
            r,
        )
        for i, r in enumerate(records)
    ]
    best = max(scored, key=lambda item: item[:3], default=None)
    return [best[-1]] if best is not None and (best[0] or best[1]) else []
