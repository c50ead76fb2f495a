"""hop_read: in a question about someone's relation (a father, a wife, a film's director), the unread text of the one
the question's own subject's text names in that relation is read at a repeated call and for the first answer."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arag.harness.contract import Allow, Base, Hold, Policy, ReadInstead, RunView
from arag.harness.registry import register
from arag.harness.text import without_qualifier
from arag.index import Index, title_of
from arag.store import ChunkRecord
from arag.text import normalize_answer
from arag.tools.toolkit import ToolCall

# The relations a question may ask about (by its words), and the words a subject's text names the holder with:
# asked for Maurice of Orange's father, his text says "He succeeded his father William the Silent".
_BEFORE_NAME = r"(?:,|\s+(?:was|is|were|are))?\s+"
# "recorded by Japanese recording artist Ayumi Hamasaki": who the holder is, before the name
_DESCRIBED = (
    r"(?:(?:[A-Za-z-]+\s+){0,3}?(?:singer|artist|band|rapper|group|duo|musician|singer-songwriter|songwriter|composer"
    r"|director|filmmaker|producer|actor|actress|writer|author|novelist|poet|playwright)s?\s+)?"
)
RELATIONS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(asked, re.I), cues)
    for asked, cues in (
        (
            r"\b(?:father|mother|parents?)\b",
            (
                r"\b(?:son|daughter|child|heir)s? of\s+",
                r"\bborn to\s+",
                rf"\b(?:his|her|their) (?:father|mother|parents){_BEFORE_NAME}",
            ),
        ),
        (
            r"\b(?:husband|wife|spouse|married|marry|consort|widow(?:er)?)\b",
            (
                r"\bmarried(?: to)?\s+",
                r"\b(?:wife|husband|spouse|consort|widow|widower) of\s+",
                rf"\b(?:his|her) (?:wife|husband|spouse){_BEFORE_NAME}",
                r"\bmarriage to\s+",
            ),
        ),
        (
            r"\b(?:son|daughter|child|children)\b",
            (rf"\b(?:his|her|their) (?:son|daughter|child){_BEFORE_NAME}", r"\b(?:father|mother|parent) of\s+"),
        ),
        (
            r"\b(?:brother|sister|sibling)s?\b",
            (
                rf"\b(?:his|her|their) (?:half-)?(?:brother|sister){_BEFORE_NAME}",
                r"\b(?:half-)?(?:brother|sister) of\s+",
            ),
        ),
        (r"\bdirect(?:or|ed)\b", (r"\bdirected by\s+",)),
        (
            r"\bcompos(?:er|ed)\b",
            (
                rf"\bcomposed by\s+{_DESCRIBED}",
                r"\bmusic (?:was )?(?:by|from)\s+",
                r"\bscore (?:was )?by\s+",
                r"\bwritten by\s+",  # a song's composer: its writers
            ),
        ),
        (
            r"\bperform(?:er|ed)\b|\bsinger\b",
            (rf"\b(?:performed|recorded|sung) by\s+{_DESCRIBED}", rf"\b(?:song|single|track|album) by\s+{_DESCRIBED}"),
        ),
        (r"\bproduc(?:er|ed)\b", (r"\bproduced by\s+",)),
        (
            r"\b(?:writer|author|screenwriter|wrote|written)\b",
            (rf"\bwritten by\s+{_DESCRIBED}", r"\bscreenplay by\s+"),
        ),
        (r"\bfound(?:er|ed)\b", (r"\bfounded by\s+",)),
        (r"\bcreat(?:or|ed)\b", (r"\bcreated by\s+",)),
        (r"\bedit(?:or|ed)\b", (r"\bedited by\s+",)),
    )
)
# lower-case words inside a name ("William the Silent", "Maria Amalia of Saxony", "Ludwig van Beethoven")
_PARTICLES = frozenset(
    {"de", "da", "di", "del", "della", "der", "van", "von", "la", "le", "du", "dos", "bin", "ibn", "the", "of", "y"}
)
# words before a name that its own document's title leaves out ("King Oswiu of Northumbria" is titled "Oswiu")
_HONORIFICS = frozenset(
    re.findall(
        r"\w+",
        "king queen prince princess emperor empress archduke grand duke duchess count countess marquis marquess "
        "viscount baron earl sir lord lady saint st pope infante infanta caliph sultan khan shah tsar czar dr "
        "president",
    )
)
_ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th)$")
NAMES_AFTER_CUE = 3  # "son of Charles III and Maria Amalia of Saxony": both parents
CHARS_AFTER_CUE = 200
HITS_LOOKED_AT = 5  # of the keyword search for a named holder
SENTENCE_CHARS = 300

READ = (
    'Instead, the next hop: [chunk {subject}] names {name}: "{sentence}" Here is {name}\'s own text, read for you. '
    "Where the question asks for something about {name} (a place, a date), answer with that, not with the name; "
    "or search for what is still missing: {question}"
)
HOLD = (
    "Before your answer stands, the next hop: {named} Above is their own text, read for you. Where the question asks "
    "for something about them (a place, a date), answer with that, not with the name: {question}"
)
ANSWER_NOW = (
    "Answer the question now from what you have read (where it asks for something about them, a place or a date, "
    "with that, not with the name): {question}"
)
NAMED = '[chunk {subject}] names {name}: "{sentence}"'
RESOLVED = 'So the question is now: "{resolved}" Answer it from [chunk {chunk}], short, with its [chunk ID].'
HOLD_READS = 2  # "Which film has the director who …, A or B?": both directors


class HopReadSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer_at_once: bool = Field(
        True,
        description="After the holder's text is read (at a repeat, up to two holders then too, or for the first "
        "answer), the next action must be the answer, without tools. Without it the model may search on, and did "
        "in most reached runs: one more model call and about 11 s a reached run on 2Wiki, loops not ended.",
    )
    resolved_question: bool = Field(
        False,
        description="With answer_at_once, where the question asks something about the one holder ('Where did X's "
        "father die?'), the model is given the question with the holder in place of the relation ('Where did "
        "William the Silent die?') to answer from the holder's text, its sentences shown chosen for it. Re-run where "
        "it acts on 2Wiki: dev +2.5 (1 of 8 runs), set aside +0.0 (2), 24 new compositional questions +0.0 (8) "
        "with one more stall: the 1.5B model mostly misreads the holder's text, asked either way.",
    )


@dataclass(frozen=True)
class Hop:
    """A holder of the question's relation that its subject's text names, and the holder's own chunk; ``relation``
    is the question's word for it ("father"), ``cue`` what the text said before the name ("daughter of "), ``first``
    whether the name came first after it ("son of Charles III and Maria Amalia": Charles III), ``subject_title`` the
    title of the subject's document, a qualifier aside."""

    subject_chunk: str
    name: str
    sentence: str
    chunk_id: str
    relation: str = ""
    cue: str = ""
    first: bool = True
    subject_title: str = ""
    alone: bool = True  # the only name after the cue ("directed by A and B": not alone)


def relation_cues(question: str) -> list[tuple[str, re.Pattern[str]]]:
    """The question's relation words, each with a pattern a subject's text names its holder with."""
    return [
        (found.group(0).lower(), re.compile(cue))
        for asked, cues in RELATIONS
        if (found := asked.search(question))
        for cue in cues
    ]


# between "the director of" and the title: "the director of film Goodbye, Franziska"
_CARRIER = r"(?:(?:the|film|song|album|single|movie|novel|book|play|series|show|band|group)\s+)*"
_WHO_IS = re.compile(r"\s*who\s+(?:is|was|are|were)\s+", re.I)


def holds_relation(hop: Hop) -> bool:
    """Whether the hop's name is the one the question's relation asks for, not a relative beside it. "his father
    X" names a father; "son of A and B" names the father first, the mother after him; "directed by A and B" names
    two directors, either of whom the question may mean."""
    own = re.match(r"(?:his|her|their) (?:half-)?(\w+)", hop.cue)
    if own is not None:
        return own.group(1) == hop.relation
    if hop.relation.startswith("parent"):
        return False  # both are asked for
    if hop.relation == "mother":
        return not hop.first and hop.cue.endswith(" of")
    if hop.relation == "father":
        return hop.first
    return hop.alone


def resolved_question(question: str, hop: Hop) -> str | None:
    """The question with the hop's holder in place of its relation phrase ("Where was the place of death of Anna
    of Pomerania's father?" → "… of Bogislaw XIII, Duke of Pomerania?"), where the question asks something about
    the holder; None where it asks for the holder (then the name is the answer) or the phrase is not found."""
    if not hop.subject_title or not holds_relation(hop):
        return None
    subject = re.search(re.escape(hop.subject_title), question, re.I)
    if subject is None:
        return None
    start, end = subject.span()
    qualifier = re.match(r"\s*\([^)]*\)", question[end:])  # "Cristina Rodríguez (Noble)'s father"
    if qualifier:
        end += qualifier.end()
    relation = re.escape(hop.relation)
    possessive = re.match(rf"'s\s+(?:\w+\s+)?{relation}\b", question[end:], re.I)
    before = re.search(rf"\bthe\s+{relation}\s+of\s+{_CARRIER}$", question[:start], re.I)
    if possessive is not None:
        start, end = start, end + possessive.end()
    elif before is not None:
        start = before.start()
    else:
        return None
    resolved = question[:start] + hop.name + question[end:]
    rest = resolved.replace(hop.name, "", 1)
    who_is = _WHO_IS.match(rest)
    if who_is is not None and not rest[who_is.end() :].strip(" ?"):
        return None  # "Who is the mother of X?": the holder is the answer
    return resolved


def _name_word(word: str, inside: bool) -> bool:
    """Whether a word may be part of a name: capitalised, an initial, or (inside one) a particle ("of", "al-")."""
    lower = word.lower()
    particle = lower in _PARTICLES or lower.startswith(("al-", "el-")) or _ORDINAL.match(lower) is not None
    return word[:1].isupper() or (inside and particle)


def names_after(text: str, start: int) -> list[str]:
    """The capitalised names that follow ``start`` in ``text`` (a list joined by "," or "and" gives each), up to
    the first other word: "William the Silent and Anna of Saxony, …" → both. A title after a comma stays with its
    name ("Victor Cavendish, 9th Duke of Devonshire"); an initial goes on ("M. B. Sreenivasan")."""
    words = text[start : start + CHARS_AFTER_CUE].split()
    names: list[str] = []
    i = 0
    while i < len(words) and len(names) < NAMES_AFTER_CUE:
        name: list[str] = []
        while i < len(words):
            word = words[i].strip("\"“”'")
            core = word.rstrip(",.;:)")
            initial = len(core) == 1 and core.isupper() and word.startswith(f"{core}.")
            if not _name_word(core, bool(name)):
                break
            name.append(f"{core}." if initial else core)
            i += 1
            if core == word or initial:
                continue
            following = words[i].lower().strip(",") if i < len(words) else ""
            titled = word.endswith(",") and (following in _HONORIFICS or _ORDINAL.match(following) is not None)
            if not titled:
                break
            name.append(name.pop() + ",")  # "Christian August, Prince of Anhalt-Zerbst": one name
        while name and name[-1].lower().rstrip(",") in _PARTICLES:
            name.pop()
        if not name:
            break
        names.append(" ".join(name).rstrip(","))
        if i < len(words) and words[i].lower() in ("and", "&"):
            i += 1  # "… of Spain and Maria Amalia of Saxony"
        elif not words[i - 1].endswith(","):
            break  # a full stop, or a word that is no name: the list is over
    return [name for name in names if len(name) >= 3]


def spellings(name: str) -> list[str]:
    """The ways a document titled by this person may spell its title, the fullest first: as named, without an
    honorific before it, before a comma title, and without an "of …" after it ("King Oswiu of Northumbria" →
    "Oswiu of Northumbria", "Oswiu")."""
    words = name.split()
    while len(words) > 1 and words[0].lower().strip(".") in _HONORIFICS:
        words = words[1:]
    bare = " ".join(words)
    forms = [name, bare]
    if "," in name:  # "Victor Cavendish, 9th Duke of Devonshire" may be titled "Victor Cavendish"
        forms.append(name.split(",")[0])
    if " of " in bare:
        forms.append(bare.split(" of ")[0])
    kept = [form for form in dict.fromkeys(f.strip() for f in forms) if normalize_answer(form)]
    return sorted(kept, key=len, reverse=True)


def title_forms(name: str) -> set[str]:
    """:func:`spellings`, normalised as document titles are compared."""
    return {normalize_answer(form) for form in spellings(name)}


def document_title(doc_id: str) -> str:
    return normalize_answer(without_qualifier(title_of(doc_id)))  # "Camille (1926 film)" is "Camille"'s document


def subjects_read(index: Index, question: str, read_ids: list[str]) -> list[ChunkRecord]:
    """The chunks read whose document the question names (its title, a qualifier aside, in the question)."""
    asked = f" {normalize_answer(question)} "
    records, _missing = index.read(read_ids)
    return [r for r in records if (title := document_title(r.doc_id)) and f" {title} " in asked]


def titled_chunk(index: Index, name: str, where: Any) -> ChunkRecord | None:
    """The first chunk of a document titled by ``name`` among the keyword search's first hits for one of its
    spellings, the fullest first."""
    forms = title_forms(name)
    for spelling in spellings(name):
        # each spelling searched apart: "King Oswiu of Northumbria" is not a phrase of Oswiu's own text
        hits = [hit.chunk_id for hit in index.keyword_search([spelling], HITS_LOOKED_AT, where)]
        found = next((r for r in index.read(hits)[0] if document_title(r.doc_id) in forms), None)
        if found is not None:
            return found
    return None


def naming_sentence(text: str, at: int) -> str:
    """The sentence of ``text`` around position ``at``, up to :data:`SENTENCE_CHARS` (a chunk's first sentence
    without the title its document opens with: "Teutberga Teutberga( died …" is said once)."""
    before = text.rfind(". ", 0, at)
    start = 0 if before < 0 else before + 2
    end = text.find(". ", at)
    sentence = text[start : None if end < 0 else end + 1]
    words = sentence.split(" ", 1)
    if start == 0 and len(words) == 2 and words[1].startswith(words[0]):  # a one-word title, said twice
        sentence = words[1]
    return sentence[:SENTENCE_CHARS]


def next_hops(index: Index, question: str, read_ids: list[str], where: Any = None) -> list[Hop]:
    """The holders of the question's relation named in the texts read of its subjects, whose own chunks are not
    read: the hop the model has not made."""
    cues = relation_cues(question)
    if not cues or not read_ids:
        return []
    asked = f" {normalize_answer(question)} "
    hops: list[Hop] = []
    looked_up: set[str] = set()  # a name the texts give twice is searched for once
    for subject in subjects_read(index, question, read_ids):
        text = " ".join(subject.text.split())
        title = without_qualifier(title_of(subject.doc_id))
        for relation, cue in cues:
            for match in cue.finditer(text):
                named = names_after(text, match.end())
                for position, name in enumerate(named):
                    if name in looked_up or f" {normalize_answer(name)} " in asked:
                        continue  # looked up already; or the subject itself, or an option of the question
                    looked_up.add(name)
                    record = titled_chunk(index, name, where)
                    if (
                        record is None
                        or record.chunk_id in read_ids
                        or any(h.chunk_id == record.chunk_id for h in hops)
                    ):
                        continue
                    sentence = naming_sentence(text, match.start())
                    said = match.group(0).strip().lower()
                    first, alone = position == 0, len(named) == 1
                    hops.append(
                        Hop(subject.chunk_id, name, sentence, record.chunk_id, relation, said, first, title, alone)
                    )
    return hops


def resolution(question: str, hops: list[Hop]) -> tuple[Hop, str] | None:
    """The hop and the question resolved to it (:func:`resolved_question`), where one holder alone holds the asked
    relation: two films titled alike, each directed by another, leave the question as asked."""
    holders = [hop for hop in hops if holds_relation(hop)]
    if len({hop.name for hop in holders}) != 1:
        return None
    resolved = resolved_question(question, holders[0])
    return None if resolved is None else (holders[0], resolved)


@register
class HopRead(Policy):
    """A 1.5B model asked where Maurice of Orange's father died read Maurice's text, which says "He succeeded his father
    William the Silent", and then searched for Maurice again and again to the step limit; asked where Anna of
    Pomerania's father died, it answered her own place of death from her text, which names him. The second hop's text
    was never read. So when the question asks about a relation (a father, a mother, a spouse, a child, a sibling, a
    director, composer, performer, producer, writer, founder, creator or editor: by its words) and a text read of the
    question's subject (a document the question names) names its holder ("his father William the Silent", "directed by
    Helmut Käutner") whose own text (a document titled by the name, among the keyword search's first hits for one of its
    spellings: "King Oswiu of Northumbria", then "Oswiu") is not read: a repeated call is answered with that text read,
    instead of the loop's refusal, and the model's first answer is held once with the texts of up to two such holders
    read for it (both directors of an either-or question), each with the sentence that names them and the question asked
    again; then the next action is the answer (``answer_at_once``). A corpus whose documents are not one per person or
    work (a team's handbook) gives it nothing to read. Measured where it acts, against the same questions re-run the
    same day without it: 2Wiki dev answerable +0.0, own answers +9.7, stalled −9.7 (19.4 → 9.7 %), model calls level;
    set aside +5.0, stalled −3.1; 24 new +4.2; Medical and the own folder never reach it. Letting the model search on
    after the read instead gave dev +7.5 but set aside +0.0, stalled unchanged and ~11 s more a reached run
    (docs/notebook/2026-12-07-the-second-hop-read.md). Searching each spelling apart (the name as the subject's text
    writes it is often no phrase of the holder's own text) reached 3 more runs: stalled −3.2 on 2Wiki dev, answers
    unchanged; ``resolved_question`` (off) asked after the read: dev +2.5, set aside +0.0, 24 new +0.0 with one more
    stall (docs/notebook/2026-12-07-the-second-hop-spelled-and-resolved.md)."""

    name = "hop_read"
    Settings = HopReadSettings
    summary = (
        "the unread text of the one the question's subject's text names in the asked relation (a father, a director) "
        "is read at a repeated call, and for the first answer (held once)"
    )

    def start(self, run: RunView) -> None:
        self.hops: list[dict[str, str]] = []
        self.held = False
        self.answer_next = False  # answer_at_once: the action after a hop's read is the answer
        settings = self.config if isinstance(self.config, HopReadSettings) else HopReadSettings()
        self.at_once = settings.answer_at_once
        self.resolve = settings.answer_at_once and settings.resolved_question

    def hops_to_read(self, run: RunView) -> list[Hop]:
        read = list(dict.fromkeys(run.read_ids))
        return next_hops(run.toolkit.index, run.question, read, run.toolkit.scope)

    def took(self, hops: list[Hop], when: str, resolved: tuple[Hop, str] | None = None) -> None:
        self.acted()
        self.answer_next = self.at_once
        for hop in hops:
            asked = {"resolved": resolved[1]} if resolved is not None and hop is resolved[0] else {}
            self.hops.append({"name": hop.name, "from": hop.subject_chunk, "read": hop.chunk_id, "at": when, **asked})

    def to_read(self, run: RunView, count: int) -> tuple[list[Hop], tuple[Hop, str] | None]:
        """Up to ``count`` hops to read, and the question resolved to one of them (``resolved_question``, where
        it asks about the one holder), which is read first if it would not be."""
        hops = self.hops_to_read(run)
        resolved = resolution(run.question, hops) if self.resolve else None
        if resolved is not None and resolved[0] not in hops[:count]:
            hops = [resolved[0], *hops]
        return hops[:count], resolved

    def answer_now(self, run: RunView, resolved: tuple[Hop, str] | None) -> str:
        """What the model is asked after the read (answer_at_once): the question resolved, else as asked."""
        if resolved is None:
            return ANSWER_NOW.format(question=run.question)
        return RESOLVED.format(resolved=resolved[1], chunk=resolved[0].chunk_id)

    def allow(self, run: RunView, base: Base) -> Allow | None:
        answer_next, self.answer_next = self.answer_next, False  # for one action
        return Allow(final=True) if answer_next and not base.forced else None

    def on_repeat(self, run: RunView, call: ToolCall) -> ReadInstead | None:
        hops, resolved = self.to_read(run, HOLD_READS if self.at_once else 1)
        if not hops:
            return None
        if self.at_once:
            named = " ".join(NAMED.format(subject=h.subject_chunk, name=h.name, sentence=h.sentence) for h in hops)
            self.took(hops, "repeat", resolved)
            said = (
                f"Instead, the next hop: {named} Here is their own text, read for you. {self.answer_now(run, resolved)}"
            )
            return ReadInstead(tuple(h.chunk_id for h in hops), said, focus=resolved[1] if resolved else "")
        self.took(hops, "repeat")
        hop = hops[0]
        said = READ.format(subject=hop.subject_chunk, name=hop.name, sentence=hop.sentence, question=run.question)
        return ReadInstead((hop.chunk_id,), said)

    def on_answer(self, run: RunView, answer: str) -> Hold | None:
        if self.held:
            return None
        hops, resolved = self.to_read(run, HOLD_READS)
        if not hops:
            return None
        self.held = True
        named = " ".join(NAMED.format(subject=h.subject_chunk, name=h.name, sentence=h.sentence) for h in hops)
        message = HOLD.format(named=named, question=run.question)
        if self.at_once:
            message = f"Before your answer stands, the next hop: {named} Above is their own text, read for you. "
            message += self.answer_now(run, resolved)
        self.took(hops, "answer", resolved)
        focus = resolved[1] if resolved else ""
        return Hold(message, read=[h.chunk_id for h in hops], why="for the next hop", focus=focus)

    def record(self, run: RunView) -> dict[str, Any] | None:
        return {"hops": self.hops} if self.hops else None
