"""The three retrieval tools the agent calls (paper §3.2), and the context tracker.

Each tool is a typed method whose docstring is the description the model reads; the JSON schema
sent to the model is derived from the signature. A bad argument never raises: it becomes an
observation that tells the model what to fix.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from pydantic import ValidationError, create_model

from arag.chunking import count_tokens
from arag.errors import ARagError
from arag.index import Index, SearchHit
from arag.store import ChunkRecord

MAX_TOP_K = 20
MAX_KEYWORDS = 10
MAX_READ = 10
MAX_ARGUMENT_CHARS = 500
MAX_QUERY_CHARS = 2000
MAX_ARGUMENTS_JSON = 100_000  # a tool call's arguments as JSON text; real ones are a few hundred characters
MAX_JSON_DEPTH = 20
MAX_SHORTENINGS = 6  # searches tried per keyword that matches nothing (compact hints)
# a keyword in fewer chunks than this is never "common": in a small collection every word is in a few texts
MIN_COMMON_CHUNKS = 50
TOOL_NAMES = ("keyword_search", "semantic_search", "chunk_read")


@dataclass
class ContextTracker:
    """What this session has already read, and how many tokens the tools returned."""

    read_ids: set[str] = field(default_factory=set)
    seen_ids: set[str] = field(default_factory=set)  # every chunk id shown to the model, incl. in search results
    retrieved_tokens: int = 0
    calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, tokens: int) -> None:
        with self._lock:
            self.retrieved_tokens += tokens
            self.calls += 1


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


@dataclass(frozen=True)
class ResultView:
    """How the tools' results look to the model. The defaults are the paper's: scores, five 400-character
    snippets per hit, full-text reads. A profile (arag/agent/profiles) gives the small-model view."""

    # small-model presentation: no scores, a search ends with how to read its hits (both hits of a comparison
    # at once), a hit already read shows no snippets, a read of a one-chunk document shows no neighbour line
    hints: bool = False
    snippets_per_hit: int = 5
    snippet_chars: int = 400
    search_hits: int | None = None  # the top_k of a search that names none (None: the tool's default)
    # False: the schemas leave top_k out (search_hits applies); each search a small model writes is ~7 tokens
    # shorter, and it never asked for anything but the example's 5
    expose_top_k: bool = True
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


class Toolkit:
    """The tools over one shared :class:`Index`, with one :class:`ContextTracker` per session."""

    def __init__(
        self,
        index: Index,
        tracker: ContextTracker | None = None,
        enabled: Sequence[str] = TOOL_NAMES,
        exact: bool | None = None,
        encoding: str = "cl100k_base",
        names: dict[str, str] | None = None,
        view: ResultView | None = None,
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
        self.view = view or ResultView()
        # Without chunk_read the agent could never see more than snippets, so searches return full text.
        self.full_text_results = "chunk_read" not in self.enabled
        self.last_hits: list[str] = []  # the latest search's chunk ids in rank order: "hit 1" refers to them
        self.focus_query = ""  # what focused reads are focused on (the question)
        self._focus_vector: tuple[str, Any] | None = None
        self._sentence_scores: dict[str, tuple[list[str], Any]] = {}
        # what the current call shows, for its ToolResult
        self._shown: list[str] = []
        self._neighbours: list[str] = []
        self._pair = False
        self._header: str | None = None

    # ------------------------------------------------------------------ the tools
    def keyword_search(self, keywords: list[str], top_k: int = 5) -> str:
        """Exact keyword search over the corpus (case-insensitive substring match).

        Use it for specific names, dates, numbers and rare terms. Each chunk is scored by the sum over
        keywords of (occurrences × keyword length), so longer, more specific keywords weigh more.
        Returns chunk ids with the sentences that contain a keyword; call chunk_read for full text.

        Args:
            keywords: Short exact terms to find, e.g. ["Lothair II", "Ermengarde"]. Not a full question.
            top_k: Number of chunks to return (1-20).
        """
        keywords, notes = self._check_keywords(keywords)
        top_k, note = _clamp_top_k(top_k)
        hits = self.index.keyword_search(keywords, top_k)
        header = self._header or f"keyword_search {json.dumps(keywords, ensure_ascii=False)}"
        pair = self.view.hints and _distinct_pair(keywords, hits)
        return self._format_hits(header, hits, notes + note, pair, keywords)

    def semantic_search(self, query: str, top_k: int = 5) -> str:
        """Semantic (embedding) search: finds sentences similar in meaning to the query.

        Use it when you do not know the exact wording. Each chunk is scored by its best-matching
        sentence. Returns chunk ids with their best-matching sentences; call chunk_read for full text.

        Args:
            query: A natural-language description of what you are looking for.
            top_k: Number of chunks to return (1-20).
        """
        query = query[:MAX_QUERY_CHARS].strip()
        if not query:
            raise ToolArgumentError("query is empty; describe what you are looking for")
        top_k, notes = _clamp_top_k(top_k)
        hits = self.index.semantic_search(query, top_k, exact=self.exact)
        header = self._header or f"semantic_search {json.dumps(query, ensure_ascii=False)}"
        return self._format_hits(header, hits, notes)

    def chunk_read(self, chunk_ids: list[str]) -> str:
        """Read the full text of chunks by id (from search results).

        The output shows each chunk's previous and next chunk ids, so you can read its neighbours
        when an answer may continue across the boundary. Chunks you already read are not repeated.

        Args:
            chunk_ids: Chunk ids to read, e.g. ["12", "13"] (at most 10).
        """
        notes = ""
        if len(chunk_ids) > MAX_READ:
            notes = f"(only the first {MAX_READ} of {len(chunk_ids)} ids were read)\n"
            chunk_ids = chunk_ids[:MAX_READ]
        ids = [c for c in (self._resolve_id(c) for c in chunk_ids) if c]
        if not ids:
            raise ToolArgumentError('chunk_ids is empty; pass ids from a search result, e.g. ["12"]')
        found, _missing = self.index.read(ids)  # unknown ids are reported inline, in the order asked
        by_id = {r.chunk_id: r for r in found}
        parts = []
        for chunk_id in dict.fromkeys(ids):
            record = by_id.get(chunk_id)
            if record is None:
                parts.append(f"[chunk {chunk_id}] not found: no chunk has this id; use ids from search results.")
                continue
            neighbours = f"prev: {record.prev_id or '-'}, next: {record.next_id or '-'}"
            if self.view.hints and not (record.prev_id or record.next_id):
                neighbours = ""  # "prev: -, next: -" on every one-chunk passage cost a small model ~10 tokens
            self._neighbours += [n for n in (record.prev_id, record.next_id) if n]
            if chunk_id in self.tracker.read_ids:
                about = f" ({neighbours})" if neighbours else ""
                parts.append(f"[chunk {chunk_id}] already read earlier in this session; not repeated{about}.")
                continue
            self.tracker.read_ids.add(chunk_id)
            self.tracker.seen_ids.add(chunk_id)
            self._shown.append(chunk_id)
            focus, text = self._read_view(record)
            about = "; ".join(part for part in (neighbours, focus) if part)
            parts.append(f"[chunk {chunk_id}]{f' ({about})' if about else ''}\n{text}")
        return notes + "\n\n".join(parts)

    def _read_view(self, record: ChunkRecord) -> tuple[str, str]:
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

    # ------------------------------------------------------------------ helpers
    def canonical(self, name: str) -> str:
        """The tool's own name for a name the model saw ("read_chunk" → "chunk_read"); others unchanged."""
        return self._canonical.get(name, name)

    def call_key(self, name: str, arguments: dict[str, Any]) -> str:
        """What makes two calls the same call: a read's "hit 1" means the chunk it names now, not the text."""
        if self.canonical(name) == "chunk_read" and isinstance(arguments.get("chunk_ids"), list):
            arguments = {"chunk_ids": [self._resolve_id(str(c)) for c in arguments["chunk_ids"]]}
        return f"{name}:{json.dumps(arguments, sort_keys=True, default=str)}"

    def keyword_chunk_share(self, keyword: str, share: float) -> bool:
        """Whether ``keyword`` is in more than ``share`` of the chunks (and in more than MIN_COMMON_CHUNKS)."""
        limit = max(MIN_COMMON_CHUNKS, math.ceil(share * self.index.store.n_chunks))
        return self.index.keyword_chunk_count(keyword, limit + 1) > limit

    def _inline_view(self, record: ChunkRecord | None) -> tuple[str, str] | None:
        """(focus note, text) of a read of a search's top hit when it shows at most ``inline_tokens`` tokens (a
        long chunk's focused view counts by what it shows), else None."""
        if record is None:
            return None
        focus, text = self._read_view(record)
        return None if count_tokens(text, self.encoding) > self.view.inline_tokens else (focus, text)

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

    def question_scores(self, record: ChunkRecord) -> tuple[list[str], Any]:
        """A chunk's sentences and their cosines with ``focus_query`` (the question), computed once per chunk and
        question (focused reads and the agent's policies ask for the same chunks)."""
        if self._focus_vector is None or self._focus_vector[0] != self.focus_query:
            self._focus_vector = (self.focus_query, self.index.embedder.embed_query(self.focus_query))
            self._sentence_scores.clear()
        cached = self._sentence_scores.get(record.chunk_id)
        if cached is None:
            sentences = self.index.sentences(record)
            scores = self.index.embedder.embed_documents(sentences) @ self._focus_vector[1] if sentences else []
            cached = self._sentence_scores[record.chunk_id] = (sentences, scores)
        return cached

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

    def _resolve_id(self, value: str) -> str:
        """A chunk id as the model wrote it: the id itself, "chunk 12", "[12]", or "hit 2" / "#2" for the
        second hit of the latest search."""
        text = _bare_chunk_id(value)
        match = _HIT_REFERENCE.match(text)
        if match and 1 <= int(match.group(1)) <= len(self.last_hits):
            return self.last_hits[int(match.group(1)) - 1]
        return text

    def _format_hits(
        self, header: str, hits: list[SearchHit], notes: str, pair: bool = False, keywords: Sequence[str] = ()
    ) -> str:
        self.last_hits = [h.chunk_id for h in hits]
        view = self.view
        if not hits:
            return f"{notes}{header}: no matching chunks. Try other keywords or a semantic_search."
        lines = [f"{notes}{header}: {len(hits)} chunks"]
        by_title = view.title_reads and view.hints and not self.full_text_results and bool(keywords)
        inline = view.inline_tokens and not self.full_text_results and hits[0].chunk_id not in self.tracker.read_ids
        wanted = [h.row for h in hits] if self.full_text_results or by_title else [hits[0].row] if inline else []
        records = self.index.store.chunks(wanted) if wanted else {}
        views: dict[int, tuple[str, str]] = {}  # rank → (focus note, text) of the hits shown as read
        for rank in self._title_ranks(keywords, hits, records) if by_title else []:
            record = records.get(hits[rank - 1].row)
            if record is not None:
                views[rank] = self._read_view(record)
        top_view = self._inline_view(records.get(hits[0].row)) if inline and 1 not in views else None
        if top_view is not None:
            views[1] = top_view
        for rank, hit in enumerate(hits, start=1):
            self.tracker.seen_ids.add(hit.chunk_id)
            self._shown.append(hit.chunk_id)
            mark = " [already read]" if hit.chunk_id in self.tracker.read_ids else ""
            # a small model reads ranks and ids; the score only cost it prompt tokens
            score = "" if view.hints else f" (score {hit.score:.4g})"
            if rank in views:
                self.tracker.read_ids.add(hit.chunk_id)
                focus, text = views[rank]
                lines.append(f"[{rank}] chunk {hit.chunk_id}{score}, {f'read ({focus})' if focus else 'full text'}:")
                lines.append(text)
                continue
            record = records.get(hit.row) if self.full_text_results else None
            lines.append(f"[{rank}] chunk {hit.chunk_id}{score}{mark}")
            if record is not None:
                lines.append(record.text.strip())
                continue
            if mark and view.hints:
                continue  # its full text is in the context already: its snippets only cost prompt tokens
            for snippet in hit.snippets[: view.snippets_per_hit]:
                lines.append(f"  - {shorten(snippet, view.snippet_chars)}")
            if len(hit.snippets) > view.snippets_per_hit:
                lines.append(f"  (+{len(hit.snippets) - view.snippets_per_hit} more matching sentences)")
        if view.hints and not self.full_text_results:
            unread = [i for i, h in enumerate(hits, start=1) if h.chunk_id not in self.tracker.read_ids]
            if views:
                # pointing at the next hit here made small models read every hit in turn: point at the next hop
                self._pair = pair and sorted(views) == [1, 2]
                ranks = sorted(views)
                if len(ranks) == 1:
                    in_full = ranks == [1] and top_view is not None and not top_view[0]
                    shown = "shown in full" if in_full else "read above"
                    lines.append(
                        f"Hit {ranks[0]} is {shown}. If it gives the fact you need, use it; if the question needs "
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
                self._pair = True
                lines.append(
                    "These are only snippets. Hits 1 and 2 match different keywords: read both at once, "
                    f"{self.read_call('hit 1', 'hit 2')}."
                )
            elif unread:
                read = self.read_call(f"hit {unread[0]}")
                lines.append(f"These are only snippets. Read the most promising hit in full: {read}.")
        return "\n".join(lines)

    def _title_ranks(
        self, keywords: Sequence[str], hits: list[SearchHit], records: dict[int, ChunkRecord]
    ) -> list[int]:
        """Ranks of the hits whose document title is a keyword (the best unread hit per keyword, at most
        ``title_read_limit`` of them): the page about a name searched for. A title's trailing
        "(…)" does not count ("Philip Ford (film director)" is the page of "Philip Ford")."""
        wanted = {_title_key(k) for k in keywords} - {""}
        limit = self.view.title_read_limit
        ranks: list[int] = []
        for rank, hit in enumerate(hits, start=1):
            record = records.get(hit.row)
            if record is None or hit.chunk_id in self.tracker.read_ids or len(ranks) >= limit:
                continue
            title = _title_key(record.doc_id)
            if title in wanted:
                wanted.discard(title)
                ranks.append(rank)
        return ranks

    def read_call(self, *references: str) -> str:
        """A chunk_read call as the model writes it, for hints."""
        ids = json.dumps(list(references), ensure_ascii=False)
        name = self.names["chunk_read"]
        return f'{{"{name}": {ids}}}' if self.view.flat_calls else f'{name} {{"chunk_ids": {ids}}}'

    # ------------------------------------------------------------------ dispatch
    def functions(self) -> dict[str, Callable[..., str]]:
        """The enabled tools by the names the model sees."""
        return {self.names[name]: getattr(self, name) for name in self.enabled}

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI ``tools=`` entries derived from the enabled tools' signatures and docstrings."""
        schemas = [tool_schema(getattr(self, name)) for name in self.enabled]
        if not self.view.expose_top_k:
            for schema in schemas:
                parameters = schema["function"]["parameters"]
                parameters["properties"].pop("top_k", None)
                if "top_k" in parameters.get("required", []):
                    parameters["required"].remove("top_k")
        if self.names != {name: name for name in TOOL_NAMES}:
            for schema in schemas:
                function = schema["function"]
                function["name"] = self.names[function["name"]]
                for canonical, exposed in self.names.items():
                    function["description"] = function["description"].replace(canonical, exposed)
        return schemas

    def call(self, name: str, arguments: dict[str, Any] | str | None, header: str | None = None) -> ToolResult:
        """Run a tool by name. Never raises for anything the model could get wrong. ``header`` replaces the first
        words of a search's result (a policy that changed the call says so there)."""
        started = time.perf_counter()
        args: dict[str, Any] = {}
        self._shown, self._neighbours, self._pair, self._header = [], [], False, header
        try:
            canonical = self.canonical(name)
            if canonical not in self.enabled:
                available = ", ".join(self.names[n] for n in self.enabled)
                raise ToolArgumentError(f"unknown tool {name!r}; available tools: {available}")
            function = getattr(self, canonical)
            args = parse_arguments(arguments)
            if self.view.search_hits and canonical != "chunk_read" and "top_k" not in args:
                args["top_k"] = self.view.search_hits
            validated = validate_arguments(function, args)
            args = validated_arguments_for_record(validated)
            observation, ok = function(**validated), True
        except ToolArgumentError as exc:
            observation, ok = f"Error: {exc}", False
        finally:
            self._header = None
        tokens = count_tokens(observation, self.encoding)
        self.tracker.record(tokens)
        searched = ok and self.canonical(name) != "chunk_read"
        return ToolResult(
            name,
            args,
            observation,
            tokens,
            time.perf_counter() - started,
            ok,
            chunk_ids=list(self._shown),
            hits=list(self.last_hits) if searched else [],
            neighbours=list(dict.fromkeys(self._neighbours)),
            pair=self._pair,
        )


class ToolkitSessions:
    """One :class:`Toolkit` (so one context tracker) per session id over a shared index; the least recently used
    sessions are forgotten beyond ``keep``. A call without a session id gets a shared toolkit."""

    def __init__(self, index: Index, keep: int = 1024) -> None:
        self.index, self.keep = index, keep
        self.shared = Toolkit(index)
        self._toolkits: OrderedDict[str, Toolkit] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session_id: str | None) -> Toolkit:
        if not session_id:
            return self.shared
        with self._lock:
            toolkit = self._toolkits.pop(session_id, None) or Toolkit(self.index)
            self._toolkits[session_id] = toolkit
            while len(self._toolkits) > self.keep:
                self._toolkits.popitem(last=False)
        return toolkit


class ToolArgumentError(Exception):
    """A tool argument the model got wrong; its message is shown to the model."""


def _distinct_pair(keywords: list[str], hits: list[SearchHit]) -> bool:
    """True when hits 1 and 2 each match a keyword the other does not (by their matching sentences)."""
    if len(keywords) < 2 or len(hits) < 2:
        return False
    matched = [{k.lower() for k in keywords if k.lower() in " ".join(h.snippets).lower()} for h in hits[:2]]
    return bool(matched[0] - matched[1]) and bool(matched[1] - matched[0])


def _clamp_top_k(top_k: int) -> tuple[int, str]:
    if top_k < 1:
        raise ToolArgumentError(f"top_k must be at least 1 (got {top_k})")
    if top_k > MAX_TOP_K:
        return MAX_TOP_K, f"(top_k {top_k} is above the maximum; clamped to {MAX_TOP_K})\n"
    return top_k, ""


def shorten(text: str, limit: int = 400) -> str:
    """One line of at most ``limit`` characters, cut at a word boundary (a cut word misleads a small model)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 1)
    return text[: cut if cut > limit // 2 else limit - 1] + " …"


def _title_key(text: str) -> str:
    """A title or keyword as compared for title reads: lower case, one space, a trailing "(…)" left out."""
    return " ".join(_DISAMBIGUATION.sub("", text).split()).strip(" \"'").lower()


_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")
_POSSESSIVE = re.compile(r"['’]s?(?=\s|$)")
_HIT_REFERENCE = re.compile(r"^(?:hit\s*#?\s*|#)(\d{1,3})$", re.I)


def parse_arguments(arguments: Any) -> dict[str, Any]:
    """The model's arguments as a dict of clean values, or :class:`ToolArgumentError` saying what to fix.

    Accepts a JSON object or its text. Bounds what the model can send: text length, nesting depth, integer
    size (json refuses integers of more than 4,300 digits), and lone UTF-16 surrogates (which no encoder,
    database or tokenizer accepts) are replaced with U+FFFD."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, (bytes, bytearray)):
        arguments = bytes(arguments).decode("utf-8", "replace")
    if isinstance(arguments, str):
        if len(arguments) > MAX_ARGUMENTS_JSON:
            raise ToolArgumentError(f"arguments are longer than {MAX_ARGUMENTS_JSON} characters; send short values")
        try:
            arguments = loads_bounded(arguments)
        except RecursionError:
            raise ToolArgumentError("arguments are nested too deeply; send a flat JSON object") from None
        except ValueError as exc:  # JSONDecodeError, and integers too long to convert
            detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc).split(";")[0]
            raise ToolArgumentError(f"arguments are not valid JSON ({detail}); send a JSON object") from None
    if not isinstance(arguments, dict):
        raise ToolArgumentError(
            f"arguments must be a JSON object with named parameters, not {_json_type(arguments)}; "
            'e.g. {"keywords": ["Lothair II"]}'
        )
    if json_depth(arguments, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise ToolArgumentError("arguments are nested too deeply; send a flat JSON object")
    cleaned = clean_json_value(arguments)
    assert isinstance(cleaned, dict)
    return cleaned


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_json_value(value: Any) -> Any:
    """``value`` with lone UTF-16 surrogates replaced by U+FFFD and integers bounded to 18 digits: no encoder,
    database or tokenizer accepts the former, and an integer of thousands of digits cannot even be printed."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {clean_json_value(str(key)): clean_json_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_json_value(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return max(-(10**18), min(10**18, value))
    return value


def loads_bounded(text: str | bytes) -> Any:
    """``json.loads`` with integers bounded to 18 digits (json refuses, or spends quadratic time on, integers of
    thousands of digits; no field a-rag reads needs more)."""
    return json.loads(text, parse_int=_bounded_int)


def _bounded_int(digits: str) -> int:
    magnitude = digits.lstrip("-")
    if len(magnitude) > 18:
        return -(10**18) if digits.startswith("-") else 10**18
    return int(digits)


def json_depth(value: Any, limit: int) -> int:
    """Nesting depth of a JSON value, counted iteratively and no further than ``limit + 1``."""
    stack = [(value, 1)]
    deepest = 0
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            break
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((child, depth + 1) for child in item)
    return deepest


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return names.get(type(value), "null" if value is None else type(value).__name__)


def _bare_chunk_id(value: str) -> str:
    """Models often write "chunk 12" or "[12]" for the id "12"."""
    text = value.strip()[:MAX_ARGUMENT_CHARS]
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1].strip()
    if text[:6].lower() == "chunk " and len(text) > 6:
        text = text[6:].strip()
    return text


def validated_arguments_for_record(validated: dict[str, Any]) -> dict[str, Any]:
    """The arguments as the tool received them, bounded for the trajectory record."""
    return {
        key: value[:MAX_QUERY_CHARS] if isinstance(value, str) else value[:100] if isinstance(value, list) else value
        for key, value in validated.items()
    }


def _docstring_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    doc = inspect.cleandoc(fn.__doc__ or "")
    description, _, args_block = doc.partition("\nArgs:\n")
    params: dict[str, str] = {}
    current = None
    for line in args_block.splitlines():
        match = re.match(r"^\s{0,8}(\w+):\s*(.*)$", line)
        if match:
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif current and line.strip():
            params[current] += " " + line.strip()
    return " ".join(description.split()), params


def _arguments_model(fn: Callable[..., Any]) -> Any:
    # one model per function, not per call: building a pydantic model costs about a millisecond
    return _cached_arguments_model(getattr(fn, "__func__", fn))


@functools.cache
def _cached_arguments_model(fn: Callable[..., Any]) -> Any:
    hints = get_type_hints(fn)
    _, docs = _docstring_parts(fn)
    from pydantic import Field

    fields: dict[str, Any] = {}
    for name, param in inspect.signature(fn).parameters.items():
        if name == "self":
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (hints[name], Field(default, description=docs.get(name)))
    return create_model(f"{fn.__name__}_arguments", __config__={"extra": "forbid"}, **fields)


def tool_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """The OpenAI function-tool schema of a typed function, from its signature and docstring."""
    return copy.deepcopy(_cached_tool_schema(getattr(fn, "__func__", fn)))


@functools.cache
def _cached_tool_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    description, _ = _docstring_parts(fn)
    schema = _arguments_model(fn).model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return {"type": "function", "function": {"name": fn.__name__, "description": description, "parameters": schema}}


@functools.cache
def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    return get_type_hints(fn)


def validate_arguments(fn: Callable[..., Any], args: dict[str, Any]) -> dict[str, Any]:
    hints = _type_hints(getattr(fn, "__func__", fn))
    # Models often pass a single string where a list is expected; accept it rather than fail the step.
    fixed = {
        key: [value] if isinstance(value, str) and hints.get(key) == list[str] else value for key, value in args.items()
    }
    try:
        model = _arguments_model(fn).model_validate(fixed)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()[:3]
        )
        raise ToolArgumentError(f"invalid arguments for {fn.__name__}: {problems}") from None
    return {name: getattr(model, name) for name in type(model).model_fields}
