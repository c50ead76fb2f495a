"""Text files and HTML pages as text: the decoding every text reader shares, and HTML's visible text with its
headings and ``<meta>`` fields (used for .html files, EPUB chapters and HTML e-mail bodies)."""

from __future__ import annotations

import re
from pathlib import Path

from arag.errors import IngestError


def read_text(path: Path) -> str:
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


_HEADING_MARK = re.compile("\x02([1-6])(.*?)\x03", re.S)


def html_to_text(raw: str) -> tuple[str, str | None, list[tuple[int, int, str]], dict[str, str]]:
    """(text, title, headings as (offset, level, text), the ``<meta name=… content=…>`` fields) of an HTML page."""
    import warnings

    from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning

    raw = raw.replace("\x02", " ").replace("\x03", " ")  # the heading marks below are these two characters
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        soup = BeautifulSoup(raw, "html.parser")
    meta: dict[str, str] = {}
    for tag in soup.find_all("meta"):
        name = tag.get("name") or tag.get("property")
        content = tag.get("content")
        if isinstance(name, str) and isinstance(content, str) and name.strip():
            meta.setdefault(name.strip().lower(), content)
    for tag in soup(["script", "style", "noscript", "template", "head"]):
        if tag.name == "head":
            continue
        tag.decompose()
    title = soup.title.get_text(strip=True) if soup.title else None
    if soup.head:
        soup.head.decompose()
    for heading in soup.find_all(["h1", "h2", "h3", "h4", "h5", "h6"]):
        text = " ".join(heading.get_text().split())
        heading.clear()
        heading.append(f"\x02{heading.name[1]}{text}\x03")
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
    headings: list[tuple[int, int, str]] = []
    pieces: list[str] = []
    length, last = 0, 0
    for match in _HEADING_MARK.finditer(text):
        pieces.append(text[last : match.start()])
        length += match.start() - last
        if match.group(2).strip():
            headings.append((length, int(match.group(1)), match.group(2).strip()))
        pieces.append(match.group(2))
        length += len(match.group(2))
        last = match.end()
    pieces.append(text[last:])
    return "".join(pieces), title, headings, meta
