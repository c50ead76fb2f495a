"""The retrieval tools the agent calls: the paper's three (§3.2), and two over the tables found in the documents
(tables as data, the paper's future work: structured sources).

Each tool is a typed method whose docstring is the description the model reads; the JSON schema
sent to the model is derived from the signature. A bad argument never raises: it becomes an
observation that tells the model what to fix.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from arag.citations import locate
from arag.corpus.chunking import count_tokens
from arag.corpus.outline import section_number
from arag.filters import OPERATORS as FILTER_OPERATORS
from arag.filters import Filter, FilterError, parse_filter
from arag.index import GrepError, Index, SearchHit
from arag.store.base import METADATA_SINCE
from arag.store.tabular import NOT_BUILT, TableQueryError
from arag.tools.arguments import (
    MAX_ARGUMENT_CHARS,
    MAX_QUERY_CHARS,
    ToolArgumentError,
    parse_arguments,
    tool_schema,
    validate_arguments,
    validated_arguments_for_record,
)
from arag.tools.documents import continues, outline_text, part_header
from arag.tools.tables import list_tables, rank_tables, show_answer
from arag.tools.tracker import ContextTracker
from arag.tools.view import ResultPresenter, ResultView, shorten

MAX_TOP_K = 20
MAX_KEYWORDS = 10
MAX_READ = 10
MAX_TABLE_ROWS = 50
MAX_DOCUMENTS_LISTED = 100
MAX_OUTLINE_DEPTH = 6
PAPER_TOOLS = ("keyword_search", "semantic_search", "chunk_read")
TABLE_TOOLS = ("table_list", "table_query")
DOCUMENT_TOOLS = ("list_documents", "document_outline", "section_read", "grep")
TOOL_NAMES = (*PAPER_TOOLS, "search", *DOCUMENT_TOOLS, *TABLE_TOOLS)


@dataclass
class ToolCall:
    """A call of a tool by name, as the model made it (``call_id``: a native tool call's id, which its result must
    answer)."""

    name: str
    arguments: Any
    call_id: str | None = None


@dataclass(slots=True)
class ToolResult:
    name: str
    arguments: dict[str, Any]
    observation: str
    retrieved_tokens: int
    latency_s: float
    ok: bool = True
    chunk_ids: list[str] = field(default_factory=list)  # every chunk whose content the result shows
    hits: list[str] = field(default_factory=list)  # a search's chunk ids in rank order ("hit 1" is the first)
    neighbours: list[str] = field(default_factory=list)  # a read's prev/next chunk ids
    # a search whose hits 1 and 2 matched different keywords (one chunk for each of two names)
    pair: bool = False
    read: list[str] = field(default_factory=list)  # the chunks it showed in full for the first time: now read
    header: str = ""  # a search's first words, which say what it searched for


@dataclass
class _Output:
    """What one tool run shows: the text, and as data what the tracker records of it."""

    text: str
    shown: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    hits: list[str] = field(default_factory=list)
    neighbours: list[str] = field(default_factory=list)
    pair: bool = False
    header: str = ""


class Toolkit:
    """The tools over one shared :class:`Index`, with one :class:`ContextTracker` per session: the paper's three
    unless ``enabled`` names others (clients outside the agent — MCP, HTTP — get every tool, TOOL_NAMES)."""

    def __init__(
        self,
        index: Index,
        tracker: ContextTracker | None = None,
        enabled: Sequence[str] = PAPER_TOOLS,
        exact: bool | None = None,
        encoding: str = "cl100k_base",
        names: dict[str, str] | None = None,
        view: ResultView | None = None,
        scope: Filter | None = None,
    ) -> None:
        unknown = (set(enabled) | set(names or {})) - set(TOOL_NAMES)
        if unknown:
            raise ValueError(f"unknown tools: {sorted(unknown)}")
        # the names the model sees (the authors' code calls chunk_read "read_chunk"); canonical names still work
        self.names = {name: (names or {}).get(name) or name for name in TOOL_NAMES}
        self._canonical = {exposed: name for name, exposed in self.names.items()}
        self.index = index
        self.tracker = tracker or ContextTracker()
        self.enabled = [name for name in TOOL_NAMES if name in enabled]
        # an index built with an IVF (--ann) was built for approximate search: the tools use it
        self.exact = not index.manifest.ann if exact is None else exact
        self.encoding = encoding
        self._view = view or ResultView()
        self.presenter: ResultPresenter = self._presenter(self._view)
        self.last_hits: list[str] = []  # the latest search's chunk ids in rank order: "hit 1" refers to them
        self.last_tables: list[str] = []  # the latest table_list's ids in rank order: table "1" refers to them
        self.scope = scope  # the user's filter: every call stays within it (and within the model's own where)

    def _presenter(self, view: ResultView) -> ResultPresenter:
        return view.presenter(self.index, self.encoding, self.names["chunk_read"], "chunk_read" not in self.enabled)

    @property
    def view(self) -> ResultView:
        return self._view

    @view.setter
    def view(self, view: ResultView) -> None:
        focus = self.presenter.focus_query
        self._view, self.presenter = view, self._presenter(view)
        self.presenter.focus_query = focus

    @property
    def focus_query(self) -> str:
        """The question the tools are used for (a view may focus reads on it)."""
        return self.presenter.focus_query

    @focus_query.setter
    def focus_query(self, query: str) -> None:
        self.presenter.focus_query = query

    # ------------------------------------------------------------------ the tools
    def keyword_search(self, keywords: list[str], top_k: int = 5, where: str = "") -> str:
        """Exact keyword search over the corpus (case-insensitive substring match).

        Use it for specific names, dates, numbers and rare terms. Each chunk is scored by the sum over
        keywords of (occurrences × keyword length), so longer, more specific keywords weigh more.
        Returns chunk ids with the sentences that contain a keyword; call chunk_read for full text.

        Args:
            keywords: Short exact terms to find, e.g. ["Lothair II", "Ermengarde"]. Not a full question.
            top_k: Number of chunks to return (1-20).
            where: Optional filter on the documents' metadata, e.g. "path=guides/*" or "year>=2020".
        """
        return self._track(self._keyword_search(keywords, top_k, where)).text

    def semantic_search(self, query: str, top_k: int = 5, where: str = "") -> str:
        """Semantic (embedding) search: finds sentences similar in meaning to the query.

        Use it when you do not know the exact wording. Each chunk is scored by its best-matching
        sentence. Returns chunk ids with their best-matching sentences; call chunk_read for full text.

        Args:
            query: A natural-language description of what you are looking for.
            top_k: Number of chunks to return (1-20).
            where: Optional filter on the documents' metadata, e.g. "path=guides/*" or "year>=2020".
        """
        return self._track(self._semantic_search(query, top_k, where)).text

    def chunk_read(self, chunk_ids: list[str], where: str = "") -> str:
        """Read the full text of chunks by id (from search results).

        The output shows each chunk's previous and next chunk ids, so you can read its neighbours
        when an answer may continue across the boundary. Chunks you already read are not repeated.

        Args:
            chunk_ids: Chunk ids to read, e.g. ["12", "13"] (at most 10).
            where: Optional filter on the documents' metadata: a chunk of another document is not read.
        """
        return self._track(self._chunk_read(chunk_ids, where)).text

    def search(self, query: str, top_k: int = 5, where: str = "") -> str:
        """Search by exact words and by meaning at once: the two rankings are fused into one.

        Use it when you are unsure whether keyword_search or semantic_search fits. The query's distinctive words
        (and phrases in "double quotes") are matched exactly, the whole query by meaning. Returns chunk ids with
        their matching sentences; call chunk_read for full text.

        Args:
            query: What you are looking for, e.g. 'director of "Fortunella" birthplace'.
            top_k: Number of chunks to return (1-20).
            where: Optional filter on the documents' metadata, e.g. "path=guides/*" or "year>=2020".
        """
        return self._track(self._search(query, top_k, where)).text

    def list_documents(self, where: str = "", top_k: int = 20) -> str:
        """List the documents of the collection, in order: each with its title, path, size and first sentence.

        Use it to see what the collection holds (or what a filter lets through) before searching it.

        Args:
            where: Optional filter on the documents' metadata, e.g. "path=guides/*" or "year>=2020".
            top_k: Number of documents to list (1-100).
        """
        return self._track(self._list_documents(where, top_k)).text

    def grep(self, pattern: str, top_k: int = 5, where: str = "") -> str:
        """Regular-expression search over the full text of every chunk (case-insensitive, RE2 syntax).

        Use it for what a keyword cannot say: a number or code of a given form, a word and its variants, a date.
        Returns the exact number of matches and of chunks holding one, then the chunks with the most matches and
        their sentences that hold one; call chunk_read for full text.

        Args:
            pattern: A regular expression, e.g. "ISO ?9001" or "(19|20)[0-9]{2}" (no backreferences or lookaround;
                \\w \\d \\s are ASCII, \\pL is any letter).
            top_k: Number of chunks to return (1-20).
            where: Optional filter on the documents' metadata, e.g. "path=guides/*" or "year>=2020".
        """
        return self._track(self._grep(pattern, top_k, where)).text

    def document_outline(self, doc_id: str, depth: int = 3) -> str:
        """Show a document's outline: its headings as a tree (or its pages, slides, sheets or paragraphs), each
        with a section id and its size in tokens.

        Use it to see how a long document is organised; then call section_read with a section id to read the
        text under that heading.

        Args:
            doc_id: A document's id, path or title (from list_documents or a search result; a chunk id such as
                "guide.md#3" names its document).
            depth: How many levels of headings to show (1-6).
        """
        return self._track(self._document_outline(doc_id, depth)).text

    def section_read(self, section_id: str, part: int = 1) -> str:
        """Read the text under one heading of a document's outline, its subsections included, in parts of at
        most 1000 tokens.

        Shows the chunk ids the text comes from (cite those) and where it continues: the next part of a long
        section, or the next section.

        Args:
            section_id: A section id from document_outline, e.g. "guide.md#s3".
            part: Which part of a long section to read (1 is the first).
        """
        return self._track(self._section_read(section_id, part)).text

    def table_list(self, query: str = "", top_k: int = 5, where: str = "") -> str:
        """List the tables in the documents (spreadsheets, CSV files, and tables in Word, PowerPoint, PDF and web
        pages), best matches for the query first.

        Each table shows its id, caption, source, row count, its columns with their types (number or text) and its
        first rows. Then call table_query with a table's id to filter, sort, count or add up its rows.

        Args:
            query: Words for what the table should hold, e.g. "revenue by region 2019" (empty: every table).
            top_k: Number of tables to list (1-20).
            where: Optional filter on the documents' metadata, e.g. "path=reports/*".
        """
        return self._track(self._table_list(query, top_k, where)).text

    def table_query(
        self,
        table_id: str,
        columns: list[str] | None = None,
        filters: list[str] | None = None,
        group_by: list[str] | None = None,
        aggregates: list[str] | None = None,
        order_by: str = "",
        descending: bool = False,
        limit: int = 20,
    ) -> str:
        """Query one table's rows, read-only: choose columns, filter rows, group them, add them up, sort them.

        Numbers compare as numbers; text compares without regard to case. Returns the rows as a table with the
        chunk ids they come from (cite those).

        Args:
            table_id: A table's id from table_list, e.g. "report.xlsx#t1".
            columns: Columns to show, by name as table_list shows them (default: every column), or computed from
                number columns written in [brackets], e.g. "[2019] - [2018]" or "([2019] - [2018]) / [2018] * 100".
            filters: Conditions every row must meet, each "column operator value" with an operator of = != > >= < <=
                contains, e.g. ["Region = North", "Revenue > 1000"].
            group_by: Columns to group the rows by (with aggregates).
            aggregates: Values computed over the rows (of each group): "count(*)", "sum(column)", "avg(column)",
                "min(column)", "max(column)".
            order_by: A column, a computed column or an aggregate to sort by, e.g. "Revenue" or "sum(Revenue)".
            descending: Sort from the largest to the smallest.
            limit: Maximum rows to return (1-50).
        """
        return self._track(
            self._table_query(table_id, columns, filters, group_by, aggregates, order_by, descending, limit)
        ).text

    # ------------------------------------------------------------------ what each tool shows
    def _list_documents(self, where: str = "", top_k: int = 20) -> _Output:
        if top_k < 1:
            raise ToolArgumentError(f"top_k must be at least 1 (got {top_k})")
        notes = ""
        if top_k > MAX_DOCUMENTS_LISTED:
            notes = f"(top_k {top_k} is above the maximum; clamped to {MAX_DOCUMENTS_LISTED})\n"
            top_k = MAX_DOCUMENTS_LISTED
        where_filter, scoped = self._filter(where)
        total, entries = self.index.list_documents(where_filter, top_k)
        more = f", the first {len(entries)} shown" if total > len(entries) else ""
        lines = [f"{scoped}{notes}list_documents: {total} document{'' if total == 1 else 's'}{more}"]
        for rank, entry in enumerate(entries, start=1):
            lines.append(f"[{rank}] {entry.title} ({entry.path}; {entry.chunks} chunks, {entry.tokens} tokens)")
            if entry.first_sentence:
                lines.append(f"  {shorten(entry.first_sentence, self.view.snippet_chars)}")
        return _Output("\n".join(lines))

    def _grep(self, pattern: str, top_k: int = 5, where: str = "") -> _Output:
        top_k, notes = _clamp_top_k(top_k)
        where_filter, scoped = self._filter(where)
        try:
            found = self.index.grep(pattern, top_k, where_filter)
        except GrepError as exc:
            raise ToolArgumentError(str(exc)) from None
        counted = f"{found.matches} matches in {found.chunks} chunks"
        if not found.complete:
            counted += f", in the first {found.scanned} chunks searched within the time limit"
        header = f"grep {json.dumps(pattern, ensure_ascii=False)} ({counted})"
        return self._search_output(header, found.hits, scoped, notes)

    def _document_outline(self, doc_id: str, depth: int = 3) -> _Output:
        if not 1 <= depth <= MAX_OUTLINE_DEPTH:
            raise ToolArgumentError(f"depth must be between 1 and {MAX_OUTLINE_DEPTH} (got {depth})")
        found = self._document(doc_id)
        outline = self.index.outline(found)
        if outline is None:  # replaced since it was found: the next call sees the new one
            raise ToolArgumentError(f"the document {found!r} changed while it was read; call document_outline again")
        note = ""
        if not outline.located and self.index.manifest.format_version < METADATA_SINCE:
            note = "(this index was built before a-rag recorded headings and pages: re-index with --rebuild for them)"
        return _Output(outline_text(outline, depth, self.names["section_read"], note))

    def _section_read(self, section_id: str, part: int = 1) -> _Output:
        if part < 1:
            raise ToolArgumentError(f"part must be at least 1 (got {part})")
        wanted = section_id.strip().strip("[]").strip()[:MAX_ARGUMENT_CHARS]
        section = section_number(wanted)
        if section is None:
            raise ToolArgumentError(
                f'{wanted!r} is not a section id; section ids look like "guide.md#s3": call document_outline first'
            )
        self._document(section[0])  # in scope, or an error that says so
        shown = self.index.read_section(wanted, part)
        if shown is None:
            raise ToolArgumentError(f"no section {wanted!r}; call document_outline for the document's section ids")
        if part > shown.parts:
            many = f"{shown.parts} parts" if shown.parts > 1 else "one part"
            raise ToolArgumentError(f"the section {shown.section.section_id} has {many}; part {part} does not exist")
        key = f"{shown.section.section_id}/{shown.part}"
        header = part_header(shown)
        ahead = continues(shown, self.names["section_read"])
        if key in self.tracker.sections_read or set(shown.chunk_ids) <= self.tracker.read_ids:
            chunks = ", ".join(shown.chunk_ids)
            return _Output(f"{header}: already read earlier in this session (chunks {chunks}); not repeated {ahead}")
        self.tracker.sections_read.add(key)
        text = f"{header}\n{shown.text}\n{ahead}"
        return _Output(text, list(shown.chunk_ids), list(shown.whole))

    def _document(self, reference: str) -> str:
        """The id of the document ``reference`` names, within the session's scope."""
        reference = reference.strip().strip("[]").strip()[:MAX_ARGUMENT_CHARS]
        if not reference:
            raise ToolArgumentError('doc_id is empty; pass a document id from list_documents, e.g. "guide.md"')
        found = self.index.find_document(reference)
        if found is None:
            raise ToolArgumentError(f"no document {reference!r}; call list_documents for the documents' ids")
        allowed = self.index.scope(self.scope)
        if allowed is not None and found not in allowed.doc_ids:
            raise ToolArgumentError(f"the document {found!r} is outside the filter ({self.scope}); not read")
        return found

    def _table_list(self, query: str = "", top_k: int = 5, where: str = "") -> _Output:
        top_k, notes = _clamp_top_k(top_k)
        where_filter, scoped = self._filter(where)
        tables = self.index.tables(where_filter)
        if tables is None:
            return _Output(f"table_list: {NOT_BUILT}")
        ranked = rank_tables(self.index, tables, query[:MAX_QUERY_CHARS], where_filter)
        self.last_tables = [table.table_id for table in ranked[:top_k]]
        return _Output(scoped + notes + list_tables(self.index, ranked, top_k).text)

    def _table_query(
        self,
        table_id: str,
        columns: list[str] | None,
        filters: list[str] | None,
        group_by: list[str] | None,
        aggregates: list[str] | None,
        order_by: str,
        descending: bool,
        limit: int,
    ) -> _Output:
        notes = ""
        if limit > MAX_TABLE_ROWS:
            notes, limit = f"(limit {limit} is above the maximum; clamped to {MAX_TABLE_ROWS})\n", MAX_TABLE_ROWS
        try:
            table, query, answer = self.index.query_table(
                self._resolve_table_id(table_id[:MAX_ARGUMENT_CHARS]),
                [c[:MAX_ARGUMENT_CHARS] for c in columns or []],
                [f[:MAX_ARGUMENT_CHARS] for f in filters or []],
                [g[:MAX_ARGUMENT_CHARS] for g in group_by or []],
                [a[:MAX_ARGUMENT_CHARS] for a in aggregates or []],
                order_by[:MAX_ARGUMENT_CHARS],
                descending,
                limit,
                self.scope,
            )
        except TableQueryError as exc:
            raise ToolArgumentError(str(exc)) from None
        shown = show_answer(self.index, table, query, answer, f"table_query {table.table_id}")
        return _Output(notes + shown.text, shown.chunk_ids, shown.chunk_ids)

    def _keyword_search(self, keywords: list[str], top_k: int = 5, where: str = "") -> _Output:
        keywords, notes = self._check_keywords(keywords)
        top_k, note = _clamp_top_k(top_k)
        where_filter, scoped = self._filter(where)
        hits = self.index.keyword_search(keywords, top_k, where_filter)
        header = f"keyword_search {json.dumps(keywords, ensure_ascii=False)}"
        return self._search_output(header, hits, scoped, notes + note, keywords)

    def _semantic_search(self, query: str, top_k: int = 5, where: str = "") -> _Output:
        query = query[:MAX_QUERY_CHARS].strip()
        if not query:
            raise ToolArgumentError("query is empty; describe what you are looking for")
        top_k, notes = _clamp_top_k(top_k)
        where_filter, scoped = self._filter(where)
        hits = self.index.semantic_search(query, top_k, exact=self.exact, where=where_filter)
        header = f"semantic_search {json.dumps(query, ensure_ascii=False)}"
        return self._search_output(header, hits, scoped, notes)

    def _search(self, query: str, top_k: int = 5, where: str = "") -> _Output:
        query = query[:MAX_QUERY_CHARS].strip()
        if not query:
            raise ToolArgumentError("query is empty; describe what you are looking for")
        top_k, notes = _clamp_top_k(top_k)
        where_filter, scoped = self._filter(where)
        keywords, hits = self.index.fused_search(query, top_k, exact=self.exact, where=where_filter)
        exact = f"; exact words {json.dumps(keywords, ensure_ascii=False)}" if keywords else "; no exact words"
        header = f"search {json.dumps(query, ensure_ascii=False)} (by meaning{exact})"
        return self._search_output(header, hits, scoped, notes, keywords)

    def _search_output(
        self, header: str, hits: list[SearchHit], scoped: str, notes: str, keywords: Sequence[str] = ()
    ) -> _Output:
        self.last_hits = [h.chunk_id for h in hits]
        shown = self.presenter.search(header, hits, notes, self.tracker.read_ids, keywords)
        return _Output(scoped + shown.text, shown.ids, shown.read, list(self.last_hits), [], shown.pair, header)

    def _chunk_read(self, chunk_ids: list[str], where: str = "") -> _Output:
        notes = ""
        if len(chunk_ids) > MAX_READ:
            notes = f"(only the first {MAX_READ} of {len(chunk_ids)} ids were read)\n"
            chunk_ids = chunk_ids[:MAX_READ]
        ids = [c for c in (self._resolve_id(c) for c in chunk_ids) if c]
        if not ids:
            raise ToolArgumentError('chunk_ids is empty; pass ids from a search result, e.g. ["12"]')
        where_filter, scoped = self._filter(where)
        notes = scoped + notes
        found, _missing = self.index.read(ids)  # unknown ids are reported inline, in the order asked
        allowed = self.index.scope(where_filter)
        by_id = {r.chunk_id: r for r in found}
        parts, read, neighbour_ids = [], [], []
        for chunk_id in dict.fromkeys(ids):
            record = by_id.get(chunk_id)
            if record is None:
                parts.append(f"[chunk {chunk_id}] not found: no chunk has this id; use ids from search results.")
                continue
            if allowed is not None and record.doc_id not in allowed.doc_ids:
                parts.append(f"[chunk {chunk_id}] is outside the filter ({where_filter}); not read.")
                continue
            neighbours = self.presenter.neighbours(record)
            neighbour_ids += [n for n in (record.prev_id, record.next_id) if n]
            if chunk_id in self.tracker.read_ids:
                about = f" ({neighbours})" if neighbours else ""
                parts.append(f"[chunk {chunk_id}] already read earlier in this session; not repeated{about}.")
                continue
            read.append(chunk_id)
            focus, text = self.presenter.read_view(record)
            source = f"source: {locate(self.index, record).label}" if self.view.sources else ""
            about = "; ".join(part for part in (neighbours, focus, source) if part)
            parts.append(f"[chunk {chunk_id}]{f' ({about})' if about else ''}\n{text}")
        return _Output(notes + "\n\n".join(parts), read, read, neighbours=list(dict.fromkeys(neighbour_ids)))

    def _track(self, output: _Output) -> _Output:
        """The context tracker records what a result showed, and what it showed in full: a read."""
        self.tracker.seen_ids.update(output.shown)
        self.tracker.read_ids.update(output.read)
        return output

    # ------------------------------------------------------------------ helpers
    def _filter(self, where: str) -> tuple[Filter | None, str]:
        """The filter a call searches with (the session's scope and the call's ``where``), and a note for the
        model when it lets no document through or some documents have no metadata to match."""
        note = ""
        try:
            own = parse_filter(where)
        except FilterError as exc:
            # a model often writes a document's path where a filter goes: read it as one on the path
            as_path = f"path~{json.dumps(where.strip(), ensure_ascii=False)}"
            try:
                if any(op in where for op in FILTER_OPERATORS):
                    raise exc from None
                own, note = parse_filter(as_path), f"(read the filter as {as_path})\n"
            except FilterError:
                raise ToolArgumentError(str(exc)) from None
        combined = own.also(self.scope) if own is not None else self.scope
        if combined is None:
            return None, note
        missing = self.index.without_metadata()
        if missing:
            note += (
                f"({missing} documents were indexed before a-rag recorded metadata: no filter matches them; "
                "re-index them with --rebuild)\n"
            )
        scope = self.index.scope(combined)
        if scope is not None and not scope.doc_ids:
            fields = ", ".join(self.index.metadata_fields()) or "none"
            note += f"(no document matches the filter {combined}; fields in this index: {fields})\n"
        return combined, note

    def canonical(self, name: str) -> str:
        """The tool's own name for a name the model saw ("read_chunk" → "chunk_read"); others unchanged."""
        return self._canonical.get(name, name)

    def call_key(self, name: str, arguments: dict[str, Any]) -> str:
        """What makes two calls the same call: a read's "hit 1" means the chunk it names now, not the text."""
        if self.canonical(name) == "chunk_read" and isinstance(arguments.get("chunk_ids"), list):
            arguments = {"chunk_ids": [self._resolve_id(str(c)) for c in arguments["chunk_ids"]]}
        return f"{name}:{json.dumps(arguments, sort_keys=True, default=str)}"

    def _check_keywords(self, keywords: list[str]) -> tuple[list[str], str]:
        notes = ""
        if len(keywords) > MAX_KEYWORDS:
            notes += f"(only the first {MAX_KEYWORDS} of {len(keywords)} keywords were used)\n"
            keywords = keywords[:MAX_KEYWORDS]
        cleaned = [k.strip() for k in keywords if k.strip()]
        if not cleaned:
            raise ToolArgumentError('keywords is empty; pass one or more exact terms, e.g. ["Lothair II"]')
        if any(len(k) > MAX_ARGUMENT_CHARS for k in cleaned):
            notes += f"(keywords longer than {MAX_ARGUMENT_CHARS} characters were cut)\n"
            cleaned = [k[:MAX_ARGUMENT_CHARS] for k in cleaned]
        return cleaned, notes

    def _resolve_table_id(self, value: str) -> str:
        """A table id as the model wrote it: the id, "table ID", or the rank in the latest table_list ("1", "[2]",
        "table 1")."""
        text = value.strip().strip("[]").strip()
        if text[:6].lower() == "table " and len(text) > 6:
            text = text[6:].strip()
        match = _TABLE_RANK.match(text)
        if match and 1 <= int(match.group(1)) <= len(self.last_tables):
            return self.last_tables[int(match.group(1)) - 1]
        return text

    def _resolve_id(self, value: str) -> str:
        """A chunk id as the model wrote it: the id itself, "chunk 12", "[12]", or "hit 2" / "#2" for the
        second hit of the latest search."""
        text = _bare_chunk_id(value)
        match = _HIT_REFERENCE.match(text)
        if match and 1 <= int(match.group(1)) <= len(self.last_hits):
            return self.last_hits[int(match.group(1)) - 1]
        return text

    # ------------------------------------------------------------------ dispatch
    def functions(self) -> dict[str, Callable[..., str]]:
        """The enabled tools by the names the model sees."""
        return {self.names[name]: getattr(self, name) for name in self.enabled}

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI ``tools=`` entries derived from the enabled tools' signatures and docstrings."""
        schemas = [tool_schema(getattr(self, name)) for name in self.enabled]
        hidden = [p for p, shown in (("top_k", self.view.expose_top_k), ("where", self.view.expose_where)) if not shown]
        fields = self.index.metadata_fields() if self.view.expose_where else []
        for schema in schemas:
            parameters = schema["function"]["parameters"]
            for name in hidden:
                parameters["properties"].pop(name, None)
                if name in parameters.get("required", []):
                    parameters["required"].remove(name)
            if "where" in parameters["properties"]:
                # the fields this index's documents actually have: the model cannot guess them
                listed = f" Fields: {', '.join(fields)}." if fields else " (This index records no metadata.)"
                parameters["properties"]["where"]["description"] += listed
        if self.names != {name: name for name in TOOL_NAMES}:
            for schema in schemas:
                function = schema["function"]
                function["name"] = self.names[function["name"]]
                for canonical, exposed in self.names.items():
                    function["description"] = function["description"].replace(canonical, exposed)
        return schemas

    def call(self, name: str, arguments: dict[str, Any] | str | None) -> ToolResult:
        """Run a tool by name. Never raises for anything the model could get wrong."""
        with self.index.consistent():  # one call reads one state of the index, whatever is committed meanwhile
            return self._call(name, arguments)

    def retitle(self, result: ToolResult, header: str) -> ToolResult:
        """A search's result whose first words say ``header`` instead (the call was changed before it ran, and
        the result says how), its tokens counted as shown."""
        if not result.header:
            return result
        observation = result.observation.replace(result.header, header, 1)
        tokens = count_tokens(observation, self.encoding)
        self.tracker.record(tokens - result.retrieved_tokens, calls=0)
        return replace(result, observation=observation, retrieved_tokens=tokens, header=header)

    def _call(self, name: str, arguments: dict[str, Any] | str | None) -> ToolResult:
        started = time.perf_counter()
        args: dict[str, Any] = {}
        output = _Output("")
        try:
            canonical = self.canonical(name)
            if canonical not in self.enabled:
                available = ", ".join(self.names[n] for n in self.enabled)
                raise ToolArgumentError(f"unknown tool {name!r}; available tools: {available}")
            function = getattr(self, canonical)
            args = parse_arguments(arguments)
            if (
                self.view.search_hits
                and canonical in ("keyword_search", "semantic_search", "search", "grep")
                and "top_k" not in args
            ):
                args["top_k"] = self.view.search_hits
            validated = validate_arguments(function, args)
            # an unused filter is left out of the record: a call without one reads as it always did
            args = {k: v for k, v in validated_arguments_for_record(validated).items() if k != "where" or v}
            output, ok = self._track(getattr(self, f"_{canonical}")(**validated)), True
        except ToolArgumentError as exc:
            output, ok = _Output(f"Error: {exc}"), False
        tokens = count_tokens(output.text, self.encoding)
        self.tracker.record(tokens)
        return ToolResult(
            name,
            args,
            output.text,
            tokens,
            time.perf_counter() - started,
            ok,
            chunk_ids=list(output.shown),
            hits=list(output.hits),
            neighbours=list(output.neighbours),
            pair=output.pair,
            read=list(output.read),
            header=output.header,
        )


def _clamp_top_k(top_k: int) -> tuple[int, str]:
    if top_k < 1:
        raise ToolArgumentError(f"top_k must be at least 1 (got {top_k})")
    if top_k > MAX_TOP_K:
        return MAX_TOP_K, f"(top_k {top_k} is above the maximum; clamped to {MAX_TOP_K})\n"
    return top_k, ""


_HIT_REFERENCE = re.compile(r"^(?:hit\s*#?\s*|#)(\d{1,3})$", re.I)
_TABLE_RANK = re.compile(r"^(?:hit\s*#?\s*|#)?(\d{1,2})$", re.I)


def _bare_chunk_id(value: str) -> str:
    """Models often write "chunk 12" or "[12]" for the id "12"."""
    text = value.strip()[:MAX_ARGUMENT_CHARS]
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1].strip()
    if text[:6].lower() == "chunk " and len(text) > 6:
        text = text[6:].strip()
    return text
