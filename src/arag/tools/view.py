"""How the tools' results look to the model, as the paper shows them: a :class:`ResultView` (its settings) and the
:class:`ResultPresenter` that writes a search's hits and a read's text by it. A presenter only writes text: what a
result showed and read is returned as data (:class:`Shown`), and the toolkit records it in its tracker."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from arag.index import Index, SearchHit
from arag.store import ChunkRecord


@dataclass(frozen=True)
class ResultView:
    """How the tools' results look to the model. The defaults are the paper's: scores, five 400-character
    snippets per hit, full-text reads. (A profile of the harness gives a view of its own: arag.harness.view.)"""

    snippets_per_hit: int = 5
    snippet_chars: int = 400
    search_hits: int | None = None  # the top_k of a search that names none (None: the tool's default)
    # False: the schemas leave top_k out (search_hits applies)
    expose_top_k: bool = True
    # False: the schemas leave the metadata filter ("where") out (the user's own scope still applies)
    expose_where: bool = True
    # a read names where each chunk comes from ("source: guide.pdf, pages 3–4"): for clients that cite (MCP, the
    # HTTP tools); the agent's profiles leave it out (its answers cite chunk ids, resolved afterwards)
    sources: bool = False

    def presenter(self, index: Index, encoding: str, read_name: str, full_text: bool) -> ResultPresenter:
        """The presenter that writes results by this view (``read_name``: chunk_read as the model knows it)."""
        return ResultPresenter(self, index, encoding, read_name, full_text)


# what clients outside the agent get (MCP, the HTTP tools): the paper's view, and each read names its source, so
# the client can cite what it read by file, page and heading path
CLIENT_VIEW = ResultView(sources=True)


@dataclass
class Shown:
    """What one search result shows: its text, every chunk whose content it shows, those it shows in full (as a
    read would: they count as read), and whether its hits 1 and 2 are a pair (one for each of two keywords)."""

    text: str
    ids: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    pair: bool = False


class ResultPresenter:
    """Writes results by a :class:`ResultView`; ``focus_query`` is the question the tools are used for (a view of
    its own may focus reads on it; the paper's shows every read in full)."""

    def __init__(self, view: ResultView, index: Index, encoding: str, read_name: str, full_text: bool) -> None:
        self.view, self.index, self.encoding = view, index, encoding
        self.read_name = read_name
        # without chunk_read the agent could never see more than snippets, so searches show full text
        self.full_text = full_text
        self.focus_query = ""

    def search(
        self, header: str, hits: list[SearchHit], notes: str, read_ids: set[str], keywords: Sequence[str] = ()
    ) -> Shown:
        """A search's result: its hits with their scores and snippets (``read_ids``: the chunks read before)."""
        if not hits:
            return Shown(no_hits(notes, header))
        records = self.index.store.chunks([h.row for h in hits]) if self.full_text else {}
        lines = [f"{notes}{header}: {len(hits)} chunks"]
        for rank, hit in enumerate(hits, start=1):
            lines += self.hit_lines(rank, hit, records.get(hit.row), hit.chunk_id in read_ids)
        return Shown("\n".join(lines), [h.chunk_id for h in hits])

    def hit_lines(self, rank: int, hit: SearchHit, record: ChunkRecord | None, read: bool) -> list[str]:
        """One hit: its rank, id and score, then its full text (``record``) or its snippets."""
        mark = " [already read]" if read else ""
        lines = [f"[{rank}] chunk {hit.chunk_id} (score {hit.score:.4g}){mark}"]
        if record is not None:
            return [*lines, record.text.strip()]
        return lines + self.snippet_lines(hit)

    def snippet_lines(self, hit: SearchHit) -> list[str]:
        view = self.view
        lines = [f"  - {shorten(snippet, view.snippet_chars)}" for snippet in hit.snippets[: view.snippets_per_hit]]
        if len(hit.snippets) > view.snippets_per_hit:
            lines.append(f"  (+{len(hit.snippets) - view.snippets_per_hit} more matching sentences)")
        return lines

    def read_view(self, record: ChunkRecord) -> tuple[str, str]:
        """(note, text) of what a read shows of a chunk: the paper's, its full text and no note."""
        return "", record.text.strip()

    def neighbours(self, record: ChunkRecord) -> str:
        """The line of a read that names the chunk's neighbours."""
        return f"prev: {record.prev_id or '-'}, next: {record.next_id or '-'}"


def no_hits(notes: str, header: str) -> str:
    return f"{notes}{header}: no matching chunks. Try other keywords or a semantic_search."


def shorten(text: str, limit: int = 400) -> str:
    """One line of at most ``limit`` characters, cut at a word boundary (a cut word misleads a small model)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 1)
    return text[: cut if cut > limit // 2 else limit - 1] + " …"
