"""Citations resolved to their source: the file, the page range of a PDF, the slide or sheet cells of an office file
or the heading path of Markdown and HTML,
and, where one can be found, the sentence of the cited chunk that best supports the claim.

A chunk records where it came from when it is indexed (``corpus.readers.Structure.locate``): its offsets in the
source, and the page and heading path at each offset where they change. The supporting sentence is the chunk's
sentence whose stored vector is closest to the claim (the answer's text before the citation) — among the sentences
that quote most of the claim's numbers, where it has any; below MIN_SUPPORT it is not named, unless it quotes every
number of the claim (the chunk is still located)."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from typing import Any

from arag.errors import ARagError
from arag.index import Index
from arag.store import ChunkRecord

# below this cosine (all-MiniLM-L6-v2) a sentence no longer restates the claim: related text, not support
MIN_SUPPORT = 0.35
# a citation as models write it: "[chunk A#0]", "[A#0]", "[chunks: A#0, B#1]"
CITATION = re.compile(r"\[(?:chunks?\s*:?\s*)?([^\[\]]+?)\]", re.I)
CITED = re.compile(r"\s*" + CITATION.pattern, re.I)  # a citation with the space before it
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


@dataclass
class SourceLocation:
    """Where a chunk (and, found, the sentence supporting a claim) comes from."""

    chunk_id: str
    doc_id: str
    path: str | None = None
    title: str | None = None
    pages: list[int] = field(default_factory=list)  # first and last page (one item: a single page)
    headings: list[str] = field(default_factory=list)  # the heading path, outermost first
    places: list[str] = field(default_factory=list)  # first and last place: "slide 3", "sheet Q3, cells A1:D40"
    start: int | None = None  # the chunk's offsets in the source file (PDF, HTML: in the extracted text)
    end: int | None = None
    sentence: str | None = None  # the sentence that supports the claim
    sentence_start: int | None = None  # its offsets within the chunk's text
    sentence_end: int | None = None
    score: float | None = None  # the sentence's cosine with the claim

    @property
    def label(self) -> str:
        """``guide.pdf, page 12`` / ``guide.md › Anal cancer › Radiation``: what a person looks up."""
        where = self.path or self.doc_id
        if self.pages:
            span = f"page {self.pages[0]}" if len(self.pages) == 1 else f"pages {self.pages[0]}–{self.pages[-1]}"
            where += f", {span}"
        if self.places:
            where += ", " + " – ".join(self.places)
        if self.headings:
            where += " › " + " › ".join(self.headings)
        return where

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "label": self.label}


def locate(index: Index, record: ChunkRecord, claim: str | None = None) -> SourceLocation:
    """Where ``record`` comes from; with ``claim``, down to its sentence that best supports it."""
    document = index.document(record.doc_id)
    metadata = (document.metadata if document else None) or {}
    path = metadata.get("path")
    location = SourceLocation(
        record.chunk_id,
        record.doc_id,
        path=str(path) if path is not None else None,
        title=document.title if document else None,
    )
    recorded = record.location or {}
    location.start, location.end = recorded.get("start"), recorded.get("end")
    at = 0  # where in the chunk: its start, or the supporting sentence's
    if claim and claim.strip():
        sentence = _supporting_sentence(index, record, claim)
        if sentence is not None:
            location.sentence, location.sentence_start, location.sentence_end, location.score = sentence
            at = location.sentence_start or 0
    pages = recorded.get("pages") or []
    if pages:
        first = _value_at(pages, at)
        last = _value_at(pages, location.sentence_end - 1 if location.sentence_end else len(record.text))
        location.pages = [first] if first == last else [first, last]
    places = recorded.get("places") or []
    if places:
        # a sentence's own place; else the first and last places of the chunk's text ("" is no place)
        if location.sentence is not None:
            end = (location.sentence_end or 1) - 1
            found_places = [_value_at(places, at), _value_at(places, end)]
        else:
            found_places = [value for _offset, value in places if value][:1] + [v for _o, v in places if v][-1:]
        location.places = [str(p) for p in dict.fromkeys(found_places) if p]
    headings = recorded.get("headings") or []
    if headings:
        # a sentence's own section; else the section most of the chunk's text is in (a chunk that opens with a
        # heading's line and goes on under its subheading is in the subheading's section)
        found = _value_at(headings, at) if location.sentence is not None else _longest_value(headings, len(record.text))
        location.headings = list(found or [])
    return location


def resolve(index: Index, answer: str, citations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``citations`` (``{"chunk_id", "verified"}``) with where each comes from: the source's label and fields,
    and the sentence of the chunk that best supports the part of ``answer`` it is cited for."""
    claims = claims_by_citation(answer)
    wanted = [c["chunk_id"] for c in citations]
    try:
        records, _missing = index.read(wanted)
    except ARagError:
        return citations
    by_id = {record.chunk_id: record for record in records}
    out = []
    for citation in citations:
        record = by_id.get(citation["chunk_id"])
        if record is None:
            out.append(citation)
            continue
        try:
            located = locate(index, record, claims.get(citation["chunk_id"]))
        except ARagError:  # an embedding endpoint that fails costs the sentence, not the answer
            located = locate(index, record)
        out.append({**citation, **{k: v for k, v in located.to_dict().items() if k != "chunk_id"}})
    return out


def without_citations(text: str) -> str:
    """``text`` with its ``[chunk ID]`` citations (and the space before each) left out, whitespace collapsed."""
    return " ".join(CITED.sub("", text).split())


def ids_in(citation: str, known: Collection[str] = ()) -> list[str]:
    """The chunk ids inside one citation's brackets, in order: "chunks: A#0, B#1" → ["A#0", "B#1"]; a whole that is
    one ``known`` id stays whole (a title with a comma: "Louis of Nassau, Lord of De Lek#0")."""
    whole = re.sub(r"^chunks?\s*:?\s*", "", citation.strip(), flags=re.I).strip()
    if whole in known:
        return [whole]
    ids = (re.sub(r"^chunks?\s*:?\s*", "", part.strip(), flags=re.I).strip() for part in re.split(r"[,;]\s*", citation))
    return [chunk_id for chunk_id in ids if chunk_id]


def cited_ids(answer: str, known: Collection[str] = ()) -> list[str]:
    """Every chunk id ``answer`` cites, once each, in the order first cited (``known``: as for ``ids_in``)."""
    return list(dict.fromkeys(chunk_id for group in CITATION.findall(answer) for chunk_id in ids_in(group, known)))


def claims_by_citation(answer: str) -> dict[str, str]:
    """For each chunk id cited in ``answer``, the text it is cited for: the answer's text from the previous
    citation (or the start) up to this one; the whole answer when that is empty."""
    whole = CITATION.sub(" ", answer).strip()
    claims: dict[str, str] = {}
    previous = 0
    for match in CITATION.finditer(answer):
        text = " ".join(answer[previous : match.start()].split()).strip(" ,;")
        for chunk_id in ids_in(match.group(1)):
            claims.setdefault(chunk_id, text or whole)
        previous = match.end()
    return claims


def _supporting_sentence(index: Index, record: ChunkRecord, claim: str) -> tuple[str, int, int, float] | None:
    spans = list(record.spans) if record.spans is not None else index.store.sentence_spans(record.row)
    if not spans:
        return None
    scores = index.store.sentence_scores(index.embedder.embed_query(claim), record.row)
    if len(scores) != len(spans):
        return None
    # a number of the claim decides before closeness: sentence vectors tell "539" from "595" poorly (two rows of
    # one table are nearly the same sentence), and a quoted figure is the claim's support
    numbers = {n.replace(",", "") for n in _NUMBER.findall(without_citations(claim))}
    held = [
        len(numbers & {n.replace(",", "") for n in _NUMBER.findall(record.text[start:end])}) for start, end in spans
    ]
    best = max(range(len(spans)), key=lambda i: (held[i], float(scores[i]), -i))
    quotes_every_number = bool(numbers) and held[best] == len(numbers)
    if float(scores[best]) < MIN_SUPPORT and not quotes_every_number:
        return None
    start, end = spans[best]
    return record.text[start:end].strip(), start, end, round(float(scores[best]), 4)


def _longest_value(changes: list[list[Any]], length: int) -> Any:
    """The value of a ``[[offset, value], …]`` change list that holds the most of ``[0, length)``; the earliest of
    equals."""
    spans: dict[tuple[str, ...], tuple[int, int, Any]] = {}  # heading path -> (characters, first offset, value)
    for i, (start, value) in enumerate(changes):
        end = changes[i + 1][0] if i + 1 < len(changes) else length
        size = max(0, min(end, length) - max(start, 0))
        key = tuple(value or ())
        held, first, _ = spans.get(key, (0, start, value))
        spans[key] = (held + size, first, value)
    if not spans:
        return None
    return max(spans.values(), key=lambda span: (span[0], -span[1]))[2]


def _value_at(changes: list[list[Any]], offset: int) -> Any:
    """The value of a ``[[offset, value], …]`` change list (offsets ascending, the first at 0) at ``offset``."""
    value = changes[0][1] if changes else None
    for start, current in changes:
        if start > offset:
            break
        value = current
    return value
