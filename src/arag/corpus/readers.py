"""Reading sources into documents: plain files, folders and the research corpus formats."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from arag.errors import IngestError

TEXT_SUFFIXES = {".txt", ".text", ".md", ".markdown", ".rst"}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | {".pdf", ".json", ".jsonl"}
_REFERENCE_CHUNK = re.compile(r"^(\d+):", re.S)


@dataclass(slots=True)
class Document:
    """One document. ``chunks`` is set when the source is already chunked (A-RAG ``chunks.json``)."""

    doc_id: str
    text: str
    source: str  # what re-indexing replaces: every document from one source is replaced together
    title: str | None = None
    chunks: list[tuple[str, str]] | None = None
    content_hash: str = field(default="")

    def __post_init__(self) -> None:
        # NUL and lone surrogates cannot be stored as text by PostgreSQL (nor encoded as UTF-8): every store
        # gets U+FFFD instead, so both backends hold the same text
        self.doc_id, self.text, self.source = storable(self.doc_id), storable(self.text), storable(self.source)
        self.title = storable(self.title) if self.title is not None else None
        if self.chunks is not None:
            self.chunks = [(storable(cid), storable(text)) for cid, text in self.chunks]
        if not self.content_hash:
            digest = hashlib.sha256(self.doc_id.encode())
            if self.chunks is not None:
                for chunk_id, text in self.chunks:
                    digest.update(f"\x00{chunk_id}\x00{text}".encode())
            else:
                digest.update(b"\x00" + self.text.encode())
            self.content_hash = digest.hexdigest()


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> str:
    """``text`` with NUL and lone surrogates replaced by U+FFFD, as every store holds text."""
    return _UNSTORABLE.sub("\ufffd", text) if _UNSTORABLE.search(text) else text


def never_stored(text: str) -> bool:
    """Whether ``text`` holds a character no stored text can contain (NUL, a lone surrogate): it matches nothing."""
    return _UNSTORABLE.search(text) is not None


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


def discover(paths: list[Path]) -> tuple[list[Path], list[Problem]]:
    """Expand folders (recursively, skipping hidden entries) into files; report what cannot be used."""
    files: list[Path] = []
    problems: list[Problem] = []
    for path in paths:
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                rel = child.relative_to(path)
                if any(part.startswith(".") for part in rel.parts) or not child.is_file():
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
                        f"unsupported file type {path.suffix or '(none)'!r}; use .txt .md .html .pdf .json .jsonl",
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
    if suffix == ".pdf":
        return [Document(doc_id, _read_pdf(path), source, title=path.stem)]
    raw = _read_text(path)
    if suffix in HTML_SUFFIXES:
        text, title = _html_to_text(raw)
        return [Document(doc_id, _non_empty(text, path), source, title=title or path.stem)]
    if suffix == ".jsonl":
        return _read_jsonl(raw, path, doc_id, source)
    if suffix == ".json":
        return _read_json_corpus(raw, path, doc_id, source)
    return [Document(doc_id, _non_empty(raw, path), source, title=path.stem)]


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise IngestError(f"cannot read: {exc.strerror or exc}") from None
    if b"\x00" in data[:8192]:
        raise IngestError("binary file (contains NUL bytes), not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestError(f"not UTF-8 (invalid byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    if not text.strip():
        raise IngestError("empty file")
    return text


def _non_empty(text: str, path: Path) -> str:
    if not text.strip():
        raise IngestError("no text content")
    return text


def _html_to_text(raw: str) -> tuple[str, str | None]:
    import warnings

    from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        soup = BeautifulSoup(raw, "html.parser")
    for tag in soup(["script", "style", "noscript", "template", "head"]):
        if tag.name == "head":
            continue
        tag.decompose()
    title = soup.title.get_text(strip=True) if soup.title else None
    if soup.head:
        soup.head.decompose()
    blocks = [
        "p",
        "div",
        "li",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "tr",
        "pre",
        "blockquote",
        "section",
        "article",
        "br",
        "table",
        "ul",
        "ol",
        "dd",
        "dt",
    ]
    for tag in soup.find_all(blocks):
        tag.insert_after("\n\n" if tag.name != "br" else "\n")
    text = soup.get_text()
    text = re.sub(r"[ \t\r\f\v]+", " ", text)
    text = re.sub(r" ?\n ?", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text, title


def _read_pdf(path: Path) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, OSError, ValueError, KeyError) as exc:
        raise IngestError(f"unreadable PDF ({exc})") from None
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    if not text.strip():
        raise IngestError("PDF has no extractable text (scanned images need OCR first)")
    return text


def _read_jsonl(raw: str, path: Path, doc_id: str, source: str) -> list[Document]:
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
        documents.append(Document(str(rid) if rid is not None else f"{doc_id}:{lineno}", text, source, title=title))
    return _unique_ids(documents)


def _read_json_corpus(raw: str, path: Path, doc_id: str, source: str) -> list[Document]:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise IngestError(f"invalid JSON ({exc.msg}, line {exc.lineno})") from None
    except (ValueError, RecursionError):
        raise IngestError("invalid JSON (nested too deeply or a number too long)") from None
    if isinstance(data, list) and data and all(isinstance(x, str) for x in data):
        return [_reference_chunks(data, doc_id, source)]
    if isinstance(data, list) and data and all(isinstance(x, dict) for x in data):
        if all(isinstance(x.get("text"), str) for x in data):  # HippoRAG / LinearRAG passages
            docs = [
                Document(
                    str(x.get("title") or f"{doc_id}:{i}"),
                    _titled(x.get("title"), x["text"]),
                    source,
                    title=x.get("title"),
                )
                for i, x in enumerate(data)
                if x["text"].strip()
            ]
            return _unique_ids(docs)
        if all(isinstance(x.get("context"), str) for x in data):  # GraphRAG-Bench
            docs = [
                Document(str(x.get("corpus_name") or f"{doc_id}:{i}"), x["context"], source, title=x.get("corpus_name"))
                for i, x in enumerate(data)
                if x["context"].strip()
            ]
            return _unique_ids(docs)
    raise IngestError(
        'unknown JSON corpus format: expected A-RAG chunks ["N:text", ...], HippoRAG '
        '[{"title", "text"}] or GraphRAG-Bench [{"corpus_name", "context"}]'
    )


def _titled(title: object, text: str) -> str:
    return f"{title}\n{text}" if title else text


def _reference_chunks(items: list[str], doc_id: str, source: str) -> Document:
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
    return Document(doc_id, "", source, chunks=[(str(n), text) for n, text in chunks])


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


def iter_sources(paths: list[Path]) -> Iterator[tuple[Path, list[Document] | Problem]]:
    """Yield each discovered file with its documents, or the problem reading it."""
    files, problems = discover(paths)
    for problem in problems:
        yield Path(problem.path), problem
    roots = [p for p in paths if p.is_dir()]
    for file in files:
        root = next((r for r in roots if file.is_relative_to(r)), None)
        prefix = str(file.relative_to(root.parent)) if root is not None else file.name
        try:
            yield file, read_source(file, prefix)
        except IngestError as exc:
            yield file, Problem(str(file), str(exc))
