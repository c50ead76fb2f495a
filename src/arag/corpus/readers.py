"""Reading sources into documents: plain files, folders and the research corpus formats.

Each document carries its metadata (path, file type, title, modification time, and what the file says about
itself: Markdown front matter, HTML ``<meta>``, PDF document info, a JSON Lines record's other fields), which search
filters match, and its structure (the pages of a PDF, the headings of Markdown and HTML), which citations resolve
to."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from arag.corpus.access import RuleFile, access_of, with_access
from arag.corpus.markup import html_to_text, read_text
from arag.corpus.ocr import IMAGE_SUFFIXES, read_image
from arag.corpus.office import OFFICE_SUFFIXES
from arag.corpus.pdf import read_pdf
from arag.corpus.tables import markdown_table_spans
from arag.errors import IngestError
from arag.principals import ACCESS_FIELD, access_groups
from arag.text import storable

MARKDOWN_SUFFIXES = {".md", ".markdown"}
TEXT_SUFFIXES = {".txt", ".text", ".rst"} | MARKDOWN_SUFFIXES
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | {".pdf", ".json", ".jsonl"} | OFFICE_SUFFIXES | IMAGE_SUFFIXES
_REFERENCE_CHUNK = re.compile(r"^(\d+):", re.S)


MetadataValue = str | int | float | bool | list[str | int | float | bool]
MAX_METADATA_FIELDS = 64
MAX_METADATA_CHARS = 1000  # a longer value is cut: metadata is for filtering, not for reading


@dataclass(slots=True)
class Structure:
    """Where the text of a document came from: the offset at which each PDF page starts (with its number, from
    1), the headings (offset, level, text) of Markdown, HTML and the office formats, their places (slides, sheets'
    cell ranges), and how many characters of the file come before
    the text (Markdown front matter), so that offsets are the file's."""

    pages: list[tuple[int, int]] = field(default_factory=list)
    headings: list[tuple[int, int, str]] = field(default_factory=list)
    offset: int = 0
    # where the text at each offset came from, in other terms than pages ("slide 3", "sheet Q3, cells A1:D40";
    # "": nowhere in particular), and the spans the chunker keeps in one chunk (a table's parts)
    places: list[tuple[int, str]] = field(default_factory=list)
    blocks: list[tuple[int, int]] = field(default_factory=list)

    def locate(self, start: int, end: int) -> dict[str, Any]:
        """Where the text ``[start, end)`` comes from, as a chunk records it: its offsets in the file (``start``,
        ``end``), and the page (``pages``) and heading path (``headings``) at each offset of the chunk where they
        change, as ``[offset in the chunk, value]`` pairs, the first at 0."""
        location: dict[str, Any] = {"start": self.offset + start, "end": self.offset + end}
        if self.pages:
            current = [number for page_start, number in self.pages if page_start <= start]
            pages = [[0, current[-1] if current else self.pages[0][1]]]
            pages += [[page_start - start, number] for page_start, number in self.pages if start < page_start < end]
            location["pages"] = pages
        if self.places:
            current_place = [label for place_start, label in self.places if place_start <= start]
            places: list[list[Any]] = [[0, current_place[-1] if current_place else ""]]
            places += [[place_start - start, label] for place_start, label in self.places if start < place_start < end]
            location["places"] = places
        if self.headings:
            path: list[tuple[int, str]] = []  # (level, text) of the open headings
            changes: list[list[Any]] = []
            for heading_start, level, text in self.headings:
                if heading_start >= end:
                    break
                while path and path[-1][0] >= level:
                    path.pop()
                path.append((level, text))
                at = max(0, heading_start - start)
                if changes and changes[-1][0] == at:
                    changes[-1][1] = [h for _level, h in path]
                else:
                    changes.append([at, [h for _level, h in path]])
            if changes:
                if changes[0][0] != 0:
                    changes.insert(0, [0, []])
                location["headings"] = changes
        return location


@dataclass(slots=True)
class Document:
    """One document. ``chunks`` is set when the source is already chunked (A-RAG ``chunks.json``)."""

    doc_id: str
    text: str
    source: str  # what re-indexing replaces: every document from one source is replaced together
    title: str | None = None
    chunks: list[tuple[str, str]] | None = None
    content_hash: str = field(default="")
    metadata: dict[str, MetadataValue] = field(default_factory=dict)
    structure: Structure | None = None

    def __post_init__(self) -> None:
        # NUL and lone surrogates cannot be stored as text by PostgreSQL (nor encoded as UTF-8): every store
        # gets U+FFFD instead, so both backends hold the same text
        self.doc_id, self.text, self.source = storable(self.doc_id), storable(self.text), storable(self.source)
        self.title = storable(self.title) if self.title is not None else None
        if self.chunks is not None:
            self.chunks = [(storable(cid), storable(text)) for cid, text in self.chunks]
        self.metadata = clean_metadata(self.metadata)
        if not self.content_hash:
            digest = hashlib.sha256(self.doc_id.encode())
            if self.chunks is not None:
                for chunk_id, text in self.chunks:
                    digest.update(f"\x00{chunk_id}\x00{text}".encode())
            else:
                digest.update(b"\x00" + self.text.encode())
            # what the file says about itself is part of its content (front matter is not in the text); the
            # modification time is not: a file touched but not changed is not indexed again
            described = {k: v for k, v in self.metadata.items() if k != "mtime"}
            digest.update(b"\x00" + json.dumps(described, sort_keys=True, ensure_ascii=False).encode())
            self.content_hash = digest.hexdigest()


def clean_metadata(fields: dict[str, Any]) -> dict[str, MetadataValue]:
    """Metadata as every store keeps it: lower-case names, scalar values or lists of scalars (nested objects
    flattened as ``a.b``, dates as ISO 8601 text), text made storable and cut at MAX_METADATA_CHARS, at most
    MAX_METADATA_FIELDS fields."""
    out: dict[str, MetadataValue] = {}

    def scalar(value: Any) -> str | int | float | bool | None:
        if isinstance(value, bool | int):
            return value if abs(int(value)) < 2**53 else str(value)
        if isinstance(value, float):
            return value if value == value and abs(value) != float("inf") else None
        if isinstance(value, datetime.datetime | datetime.date):
            return value.isoformat()
        if isinstance(value, str):
            return storable(value.strip())[:MAX_METADATA_CHARS]
        return None

    def add(name: str, value: Any, depth: int) -> None:
        name = storable(name.strip().lower())[:100]
        if not name or len(out) >= MAX_METADATA_FIELDS:
            return
        if isinstance(value, dict) and depth < 3:
            for key, inner in value.items():
                add(f"{name}.{key}", inner, depth + 1)
        elif isinstance(value, list | tuple):
            items = [s for s in (scalar(v) for v in value[:100]) if s is not None]
            if items:
                out[name] = items
        elif (single := scalar(value)) is not None and single != "":
            out[name] = single

    # who may read the document is kept first, whatever else is dropped, and an empty value stays: it closes the
    # document (arag.principals); dropping it would open it
    for key, value in fields.items():
        if str(key).strip().lower() == ACCESS_FIELD:
            groups = access_groups({ACCESS_FIELD: value if isinstance(value, str | list) else [value]}) or []
            out[ACCESS_FIELD] = [storable(group)[:128] for group in groups[:100]]
    for key, value in fields.items():
        if str(key).strip().lower() != ACCESS_FIELD:
            add(str(key), value, 0)
    return out


@dataclass(slots=True)
class Problem:
    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass(slots=True)
class Source:
    """The documents read from one file, or the problem that stopped it."""

    path: Path
    documents: list[Document]


def is_index_dir(folder: Path) -> bool:
    """Whether ``folder`` holds an a-rag index (its manifest): its files are never documents, so an index kept
    inside the folder it indexes does not index itself."""
    manifest = folder / "manifest.json"
    if not manifest.is_file():
        return False
    try:
        head = manifest.read_bytes()[:4096]
    except OSError:
        return False
    return b'"format_version"' in head and b'"embedder"' in head


def discover(paths: list[Path]) -> tuple[list[Path], list[Problem]]:
    """Expand folders (recursively, skipping hidden entries, Office's "~$" owner files and a-rag indexes) into
    files; report what cannot be used."""
    files: list[Path] = []
    problems: list[Problem] = []
    for path in paths:
        if path.is_dir():
            found: list[Path] = []
            for root, folders, names in os.walk(path):
                here = Path(root)
                folders[:] = [f for f in folders if not f.startswith(".") and not is_index_dir(here / f)]
                # hidden files, and the owner files Office keeps beside a document open in it ("~$policy.docx":
                # a few bytes, never a document)
                found.extend(here / name for name in names if not name.startswith((".", "~$")))
            for child in sorted(found):
                if not child.is_file():
                    continue
                if child.suffix.lower() in SUPPORTED_SUFFIXES:
                    files.append(child)
                else:
                    problems.append(Problem(str(child), f"unsupported file type {child.suffix or '(none)'!r}"))
        elif path.is_file():
            if path.suffix.lower() in SUPPORTED_SUFFIXES:
                files.append(path)
            else:
                problems.append(
                    Problem(
                        str(path),
                        f"unsupported file type {path.suffix or '(none)'!r}; "
                        f"use {' '.join(sorted(SUPPORTED_SUFFIXES))}",
                    )
                )
        else:
            problems.append(Problem(str(path), "no such file or directory"))
    return files, problems


def read_source(path: Path, doc_prefix: str | None = None) -> list[Document]:
    """Read one file into documents. Raises :class:`IngestError` with a reason naming the problem."""
    suffix = path.suffix.lower()
    source = str(path.resolve())
    doc_id = doc_prefix if doc_prefix is not None else path.name
    about = _file_metadata(path, doc_id)
    if suffix in OFFICE_SUFFIXES:
        from arag.corpus.office import read_office

        text, built, info, found_title = read_office(path, suffix)
        structure = Structure(headings=built.headings, places=built.places, blocks=built.blocks)
        title = found_title or path.stem
        metadata = {**info, **about, "title": title}
        return [Document(doc_id, text, source, title=title, metadata=metadata, structure=structure)]
    if suffix in IMAGE_SUFFIXES:
        text, places, info = read_image(path)
        metadata = {**info, **about, "title": path.stem}
        structure = Structure(places=places)
        return [Document(doc_id, text, source, title=path.stem, metadata=metadata, structure=structure)]
    if suffix == ".pdf":
        text, pages, info, blocks, headings = read_pdf(path)
        title = str(info.get("title") or path.stem)
        metadata = {**info, **about, "title": title}
        structure = Structure(pages=pages, blocks=blocks, headings=headings)
        return [Document(doc_id, text, source, title=title, metadata=metadata, structure=structure)]
    raw = read_text(path)
    if suffix in HTML_SUFFIXES:
        page = html_to_text(raw)
        title = page.title or str(page.meta.get("title") or "") or path.stem
        metadata = {**page.meta, **about, "title": title}
        structure = Structure(headings=page.headings, blocks=page.blocks)
        document = Document(doc_id, _non_empty(page.text, path), source, title, metadata=metadata, structure=structure)
        return [document]
    if suffix == ".jsonl":
        return _read_jsonl(raw, path, doc_id, source, about)
    if suffix == ".json":
        return _read_json_corpus(raw, path, doc_id, source, about)
    front, text, offset = _front_matter(raw) if suffix in MARKDOWN_SUFFIXES else ({}, raw, 0)
    title = str(front.get("title") or path.stem)
    headings = markdown_headings(text) if suffix in MARKDOWN_SUFFIXES else []
    blocks = markdown_table_spans(text) if suffix in MARKDOWN_SUFFIXES else []
    metadata = {**front, **about, "title": title}
    structure = Structure(headings=headings, offset=offset, blocks=blocks)
    return [Document(doc_id, _non_empty(text, path), source, title=title, metadata=metadata, structure=structure)]


def _file_metadata(path: Path, doc_path: str) -> dict[str, Any]:
    """What every file-backed document records: its path as indexed, its file type and modification time."""
    try:
        modified = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.UTC)
        mtime: str | None = modified.isoformat(timespec="seconds")
    except OSError:
        mtime = None
    return {"path": doc_path, "type": path.suffix.lower().lstrip(".") or "txt", "mtime": mtime}


_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)


def _front_matter(raw: str) -> tuple[dict[str, Any], str, int]:
    """Markdown's YAML front matter: (its fields, the text after it, the characters it took). Text that only looks
    like front matter (not a YAML mapping) is left in the text."""
    import yaml

    match = _FRONT_MATTER.match(raw)
    if match is None:
        return {}, raw, 0
    try:
        fields = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return {}, raw, 0
    if not isinstance(fields, dict):
        return {}, raw, 0
    return fields, raw[match.end() :], match.end()


_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def markdown_headings(text: str) -> list[tuple[int, int, str]]:
    """(offset, level, text) of each ATX (``## Title``) and setext (underlined) heading, outside fenced code."""
    headings: list[tuple[int, int, str]] = []
    offset, fenced, previous = 0, False, None  # previous: (offset, line) of a paragraph line
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        if _FENCE.match(bare):
            fenced, previous = not fenced, None
        elif not fenced:
            atx = _ATX_HEADING.match(bare)
            underline = _SETEXT_UNDERLINE.match(bare)
            if atx:
                headings.append((offset, len(atx.group(1)), atx.group(2).strip()))
                previous = None
            elif underline and previous is not None:
                headings.append((previous[0], 1 if underline.group(1)[0] == "=" else 2, previous[1].strip()))
                previous = None
            else:
                previous = (
                    (offset, bare) if bare.strip() and not bare.lstrip().startswith(("-", "*", "+", ">")) else None
                )
        offset += len(line)
    return headings


def _non_empty(text: str, path: Path) -> str:
    if not text.strip():
        raise IngestError("no text content")
    return text


_JSONL_FIELDS = ("id", "text", "title")  # what a JSON Lines record is made of; its other fields are metadata


def _read_jsonl(raw: str, path: Path, doc_id: str, source: str, about: dict[str, Any]) -> list[Document]:
    documents: list[Document] = []
    for lineno, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise IngestError(f"line {lineno}: invalid JSON ({exc.msg})") from None
        except (ValueError, RecursionError):
            raise IngestError(f"line {lineno}: invalid JSON (nested too deeply or a number too long)") from None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise IngestError(f'line {lineno}: expected an object with a string "text"')
        if not record["text"].strip():
            raise IngestError(f'line {lineno}: empty "text"')
        rid = record.get("id")
        title = record.get("title")
        text = record["text"] if not title else f"{title}\n{record['text']}"
        extra = {k: v for k, v in record.items() if k not in _JSONL_FIELDS}
        metadata = {**extra, **about, **({"title": title} if isinstance(title, str) else {})}
        rid_text = str(rid) if rid is not None else f"{doc_id}:{lineno}"
        documents.append(Document(rid_text, text, source, title=title, metadata=metadata))
    return _unique_ids(documents)


def _read_json_corpus(raw: str, path: Path, doc_id: str, source: str, about: dict[str, Any]) -> list[Document]:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise IngestError(f"invalid JSON ({exc.msg}, line {exc.lineno})") from None
    except (ValueError, RecursionError):
        raise IngestError("invalid JSON (nested too deeply or a number too long)") from None
    if isinstance(data, list) and data and all(isinstance(x, str) for x in data):
        return [_reference_chunks(data, doc_id, source, about)]
    if isinstance(data, list) and data and all(isinstance(x, dict) for x in data):
        if all(isinstance(x.get("text"), str) for x in data):  # HippoRAG / LinearRAG passages
            docs = [
                Document(
                    str(x.get("title") or f"{doc_id}:{i}"),
                    _titled(x.get("title"), x["text"]),
                    source,
                    title=x.get("title"),
                    metadata=_titled_metadata(about, x.get("title")),
                )
                for i, x in enumerate(data)
                if x["text"].strip()
            ]
            return _unique_ids(docs)
        if all(isinstance(x.get("context"), str) for x in data):  # GraphRAG-Bench
            docs = [
                Document(
                    str(x.get("corpus_name") or f"{doc_id}:{i}"),
                    x["context"],
                    source,
                    title=x.get("corpus_name"),
                    metadata=_titled_metadata(about, x.get("corpus_name")),
                )
                for i, x in enumerate(data)
                if x["context"].strip()
            ]
            return _unique_ids(docs)
    raise IngestError(
        'unknown JSON corpus format: expected A-RAG chunks ["N:text", ...], HippoRAG '
        '[{"title", "text"}] or GraphRAG-Bench [{"corpus_name", "context"}]'
    )


def _titled_metadata(about: dict[str, Any], title: object) -> dict[str, Any]:
    return {**about, "title": title} if isinstance(title, str) else dict(about)


def _titled(title: object, text: str) -> str:
    return f"{title}\n{text}" if title else text


def _reference_chunks(items: list[str], doc_id: str, source: str, about: dict[str, Any]) -> Document:
    """The A-RAG reference ``chunks.json``: keep its ids and texts as they are, in id order."""
    chunks: list[tuple[int, str]] = []
    for position, item in enumerate(items):
        match = _REFERENCE_CHUNK.match(item)
        if match is None:
            raise IngestError(f'item {position} is not an A-RAG chunk "N:text"')
        chunks.append((int(match.group(1)), item[match.end() :]))
    chunks.sort(key=lambda c: c[0])
    if len({n for n, _ in chunks}) != len(chunks):
        raise IngestError("duplicate chunk ids in A-RAG chunks file")
    return Document(doc_id, "", source, chunks=[(str(n), text) for n, text in chunks], metadata=dict(about))


def _unique_ids(documents: list[Document]) -> list[Document]:
    seen: dict[str, int] = {}
    for doc in documents:
        count = seen.get(doc.doc_id, 0)
        seen[doc.doc_id] = count + 1
        if count:
            doc.doc_id = f"{doc.doc_id} ({count + 1})"
            doc.content_hash = ""
            doc.__post_init__()
    return documents


def iter_sources(
    paths: list[Path], discovered: tuple[list[Path], list[Problem]] | None = None
) -> Iterator[tuple[Path, list[Document] | Problem]]:
    """Yield each discovered file with its documents, or the problem reading it (``discovered``: what
    :func:`discover` found in ``paths`` already)."""
    files, problems = discovered if discovered is not None else discover(paths)
    for problem in problems:
        yield Path(problem.path), problem
    roots = [p for p in paths if p.is_dir()]
    rules: dict[Path, RuleFile | None] = {}
    for file in files:
        root = next((r for r in roots if file.is_relative_to(r)), None)
        prefix = str(file.relative_to(root.parent)) if root is not None else file.name
        try:
            documents = read_source(file, prefix)
        except IngestError as exc:
            yield file, Problem(str(file), str(exc))
            continue
        # a rules file that cannot be read raises: indexing stops rather than open what it meant to close
        decided = access_of(file, root if root is not None else file.parent, rules)
        changed = [(doc, with_access(doc.metadata, decided)) for doc in documents]
        yield (
            file,
            [
                doc if metadata is None else replace(doc, metadata=metadata, content_hash="")
                for doc, metadata in changed
            ],
        )
