"""The compact view: how the tools' results look to a small model (the compact profile's ``[view]``). Over the
paper's view (arag.tools.view) it leaves scores out, ends a search with how to read its hits, focuses a long read
on the question, and can show a search's top hit, or the hits whose title was searched for, as a read."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from arag.corpus.chunking import count_tokens
from arag.errors import ARagError
from arag.index import Index, SearchHit
from arag.store import ChunkRecord
from arag.tools.view import ResultPresenter, ResultView, Shown, no_hits

_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")
# personal pronouns only: "This chapter explains …", "These tumors …" open guideline sentences with a noun of their
# own, and pairing them with the sentence before changed which sentence Medical's reads named, for the worse
# (docs/notebook/2026-12-06-a-pronoun-and-its-name.md)
PRONOUN_OPENING = re.compile(r"(?:he|she|it|they|his|her|its|their)\b", re.I)
# a sentence's opening name: capitalised words, with the small words names hold ("Bank of England")
LEADING_NAME = re.compile(r"[A-Z][\w'’.&-]*(?:\s+(?:(?:of|the|de|da|del|van|von|and|&)\s+)*[A-Z][\w'’.&-]*)*")
NOT_NAMES = frozenset({"the", "a", "an", "this", "these", "that", "those", "it", "he", "she", "they", "in", "on", "at"})


@dataclass(frozen=True)
class CompactView(ResultView):
    """The paper's view with a small model's presentation on top (each field off by default)."""

    # no scores, a search ends with how to read its hits (both hits of a comparison at once), a hit already read
    # shows no snippets, a read of a one-chunk document shows no neighbour line
    hints: bool = False
    # a read of a chunk longer than this shows its lead sentence and the sentences closest to the question,
    # within this many tokens: a small model finds the fact in 250 tokens, not in 1000 (0: full text)
    focus_tokens: int = 0
    # a search's top hit is shown in full (and counts as read) when it has at most this many tokens
    inline_tokens: int = 0
    # a keyword search's hit whose document title is one of its keywords is shown as a read shows it (and counts
    # as read), at most title_read_limit such hits per search
    title_reads: bool = False
    title_read_limit: int = 2
    flat_calls: bool = False  # hints write a read as the flat JSON action {"chunk_read": [...]}

    def presenter(self, index: Index, encoding: str, read_name: str, full_text: bool) -> CompactPresenter:
        return CompactPresenter(self, index, encoding, read_name, full_text)


class QuestionScores:
    """A chunk's sentences and their cosines with a question, computed once per chunk and question (focused reads
    and the policies ask for the same chunks)."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._question: tuple[str, Any] | None = None
        self._scores: dict[str, tuple[list[str], Any]] = {}
        self._paired: dict[str, Any] = {}  # chunk id → cosines of its pronoun-opening sentences with the one before

    def __call__(self, question: str, record: ChunkRecord) -> tuple[list[str], Any]:
        if self._question is None or self._question[0] != question:
            self._question = (question, self.index.embedder.embed_query(question))
            self._scores.clear()
            self._paired.clear()
        cached = self._scores.get(record.chunk_id)
        if cached is None:
            sentences = self.index.sentences(record)
            scores = self.index.embedder.embed_documents(sentences) @ self._question[1] if sentences else []
            cached = self._scores[record.chunk_id] = (sentences, scores)
        return cached

    def with_antecedents(self, question: str, record: ChunkRecord) -> tuple[list[str], list[str], Any]:
        """A chunk's sentences, for each the sentence before it when it opens with a pronoun ("It was founded in
        2014 by …") else "", and its cosine with the question, a pronoun-opening one's the better of its own and
        that of the sentence with what its pronoun stands for (:func:`resolved`): alone it cannot match the name."""
        sentences, scores = self(question, record)
        antecedents = [
            sentences[i - 1] if i and PRONOUN_OPENING.match(sentence) else "" for i, sentence in enumerate(sentences)
        ]
        paired = [i for i, antecedent in enumerate(antecedents) if antecedent]
        if not paired:
            return sentences, antecedents, scores
        cached = self._paired.get(record.chunk_id)
        if cached is None:
            assert self._question is not None  # set by the call above
            texts = [resolved(antecedents[i], sentences[i]) for i in paired]
            cached = self._paired[record.chunk_id] = self.index.embedder.embed_documents(texts) @ self._question[1]
        best = np.array(scores, dtype=float)
        for i, score in zip(paired, cached, strict=True):
            best[i] = max(best[i], float(score))
        return sentences, antecedents, best


def resolved(antecedent: str, sentence: str) -> str:
    """A pronoun-opening sentence, for embedding, with what its pronoun most likely stands for: the name that
    opens the sentence before ("Kestrel: It was founded …" after "Kestrel builds …"), else that whole sentence
    before it. The name, not the sentence: MiniLM put "Kestrel builds payment infrastructure. It was founded in
    2014 by …" below "Kestrel is a private company." for "Who founded Kestrel?", and "Kestrel: It was founded …"
    above it."""
    match = LEADING_NAME.match(antecedent.lstrip("#*> \t"))
    name = match.group(0) if match else ""
    if not name or name.lower() in NOT_NAMES:
        return f"{antecedent} {sentence}"
    return f"{name}: {sentence}"


class CompactPresenter(ResultPresenter):
    """Writes results by a :class:`CompactView`."""

    view: CompactView

    def __init__(self, view: CompactView, index: Index, encoding: str, read_name: str, full_text: bool) -> None:
        super().__init__(view, index, encoding, read_name, full_text)
        self.scores = QuestionScores(index)

    def question_scores(self, record: ChunkRecord) -> tuple[list[str], Any]:
        """A chunk's sentences and their cosines with the question (``focus_query``)."""
        return self.scores(self.focus_query, record)

    # ------------------------------------------------------------------ reads
    def read_view(self, record: ChunkRecord) -> tuple[str, str]:
        """(focus note, text) of what a read shows of a chunk: its full text (no note), or, with
        ``focus_tokens``, a focused view of a longer one and the note that says so."""
        if self.view.focus_tokens and self.focus_query and record.n_tokens > self.view.focus_tokens:
            try:
                shown, total, text = self._focused(record)
            except ARagError:  # an embedding endpoint that fails costs the focus, not the read
                shown = total = 0
            if shown < total:
                return f"{shown} of {total} sentences: the first and those closest to the question", text
        return "", record.text.strip()

    def neighbours(self, record: ChunkRecord) -> str:
        if self.view.hints and not (record.prev_id or record.next_id):
            return ""  # "prev: -, next: -" on every one-chunk passage cost a small model ~10 tokens
        return super().neighbours(record)

    def _focused(self, record: ChunkRecord) -> tuple[int, int, str]:
        """(sentences shown, sentences in all, text) of a focused read: the lead sentence, then the others by
        cosine with the question while they fit in ``focus_tokens``, in document order, gaps marked "[…]"."""
        sentences = self.index.sentences(record)
        if len(sentences) < 2:
            return len(sentences), len(sentences), record.text.strip()
        scores = self.question_scores(record)[1]
        chosen, used = [0], count_tokens(sentences[0], self.encoding)
        for i in sorted(range(1, len(sentences)), key=lambda i: (-float(scores[i]), i)):
            cost = count_tokens(sentences[i], self.encoding)
            if used + cost <= self.view.focus_tokens:
                chosen.append(i)
                used += cost
        chosen.sort()
        pieces, previous = [], -1
        for i in chosen:
            if i != previous + 1:
                pieces.append("[…]")
            pieces.append(" ".join(sentences[i].split()))
            previous = i
        if previous != len(sentences) - 1:
            pieces.append("[…]")
        return len(chosen), len(sentences), " ".join(pieces)

    def _inline_view(self, record: ChunkRecord | None) -> tuple[str, str] | None:
        """(focus note, text) of a read of a search's top hit when it shows at most ``inline_tokens`` tokens (a
        long chunk's focused view counts by what it shows), else None."""
        if record is None:
            return None
        focus, text = self.read_view(record)
        return None if count_tokens(text, self.encoding) > self.view.inline_tokens else (focus, text)

    # ------------------------------------------------------------------ searches
    def hit_lines(self, rank: int, hit: SearchHit, record: ChunkRecord | None, read: bool) -> list[str]:
        if not self.view.hints:
            return super().hit_lines(rank, hit, record, read)
        # a small model reads ranks and ids; the score only cost it prompt tokens
        lines = [f"[{rank}] chunk {hit.chunk_id}{' [already read]' if read else ''}"]
        if record is not None:
            return [*lines, record.text.strip()]
        if read:
            return lines  # its full text is in the context already: its snippets only cost prompt tokens
        return lines + self.snippet_lines(hit)

    def search(
        self, header: str, hits: list[SearchHit], notes: str, read_ids: set[str], keywords: Sequence[str] = ()
    ) -> Shown:
        """A search's result: its hits (snippets, or text where the view shows them read), and a hint how to go on."""
        view = self.view
        if not hits:
            return Shown(no_hits(notes, header))
        lines = [f"{notes}{header}: {len(hits)} chunks"]
        by_title = view.title_reads and view.hints and not self.full_text and bool(keywords)
        inline = view.inline_tokens and not self.full_text and hits[0].chunk_id not in read_ids
        wanted = [h.row for h in hits] if self.full_text or by_title else [hits[0].row] if inline else []
        records = self.index.store.chunks(wanted) if wanted else {}
        views: dict[int, tuple[str, str]] = {}  # rank → (focus note, text) of the hits shown as read
        for rank in self._title_ranks(keywords, hits, records, read_ids) if by_title else []:
            record = records.get(hits[rank - 1].row)
            if record is not None:
                views[rank] = self.read_view(record)
        top_view = self._inline_view(records.get(hits[0].row)) if inline and 1 not in views else None
        if top_view is not None:
            views[1] = top_view
        shown = Shown("", [h.chunk_id for h in hits], [hits[rank - 1].chunk_id for rank in sorted(views)])
        for rank, hit in enumerate(hits, start=1):
            if rank in views:
                focus, text = views[rank]
                lines.append(
                    f"[{rank}] chunk {hit.chunk_id}{self._score(hit)}, {f'read ({focus})' if focus else 'full text'}:"
                )
                lines.append(text)
                continue
            record = records.get(hit.row) if self.full_text else None
            lines += self.hit_lines(rank, hit, record, hit.chunk_id in read_ids)
        if view.hints and not self.full_text:
            pair = distinct_pair(keywords, hits)
            now_read = read_ids | set(shown.read)
            unread = [i for i, h in enumerate(hits, start=1) if h.chunk_id not in now_read]
            if views:
                # pointing at the next hit here made small models read every hit in turn: point at the next hop
                shown.pair = pair and sorted(views) == [1, 2]
                ranks = sorted(views)
                if len(ranks) == 1:
                    in_full = ranks == [1] and top_view is not None and not top_view[0]
                    how = "shown in full" if in_full else "read above"
                    lines.append(
                        f"Hit {ranks[0]} is {how}. If it gives the fact you need, use it; if the question needs "
                        "another fact (e.g. about a person or place it names), search for that next."
                    )
                else:
                    listed = f"{', '.join(map(str, ranks[:-1]))} and {ranks[-1]}"
                    lines.append(
                        f"Hits {listed} are read above. If they give the facts you need, use them; if the question "
                        "needs another fact (e.g. about a person or place they name), search for that next."
                    )
            elif pair and unread[:2] == [1, 2]:
                # a comparison's two items: reading them one per step spent the steps a bridge comparison's
                # second hop needs (forced answers at max_steps were the largest failure class)
                shown.pair = True
                lines.append(
                    "These are only snippets. Hits 1 and 2 match different keywords: read both at once, "
                    f"{self.read_call('hit 1', 'hit 2')}."
                )
            elif unread:
                read = self.read_call(f"hit {unread[0]}")
                lines.append(f"These are only snippets. Read the most promising hit in full: {read}.")
        shown.text = "\n".join(lines)
        return shown

    def _score(self, hit: SearchHit) -> str:
        return "" if self.view.hints else f" (score {hit.score:.4g})"

    def _title_ranks(
        self, keywords: Sequence[str], hits: list[SearchHit], records: dict[int, ChunkRecord], read_ids: set[str]
    ) -> list[int]:
        """Ranks of the hits whose document title is a keyword (the best unread hit per keyword, at most
        ``title_read_limit`` of them): the page about a name searched for. A title's trailing
        "(…)" does not count ("Philip Ford (film director)" is the page of "Philip Ford")."""
        wanted = {_title_key(k) for k in keywords} - {""}
        limit = self.view.title_read_limit
        ranks: list[int] = []
        for rank, hit in enumerate(hits, start=1):
            record = records.get(hit.row)
            if record is None or hit.chunk_id in read_ids or len(ranks) >= limit:
                continue
            title = _title_key(record.doc_id)
            if title in wanted:
                wanted.discard(title)
                ranks.append(rank)
        return ranks

    def read_call(self, *references: str) -> str:
        """A chunk_read call as the model writes it, for hints."""
        ids = json.dumps(list(references), ensure_ascii=False)
        name = self.read_name
        return f'{{"{name}": {ids}}}' if self.view.flat_calls else f'{name} {{"chunk_ids": {ids}}}'


def distinct_pair(keywords: Sequence[str], hits: list[SearchHit]) -> bool:
    """True when hits 1 and 2 each match a keyword the other does not (by their matching sentences)."""
    if len(keywords) < 2 or len(hits) < 2:
        return False
    matched = [{k.lower() for k in keywords if k.lower() in " ".join(h.snippets).lower()} for h in hits[:2]]
    return bool(matched[0] - matched[1]) and bool(matched[1] - matched[0])


def _title_key(text: str) -> str:
    """A title or keyword as compared for title reads: lower case, one space, a trailing "(…)" left out."""
    return " ".join(_DISAMBIGUATION.sub("", text).split()).strip(" \"'").lower()
