"""Text files and HTML pages as text: the decoding every text reader shares, and HTML's visible text with its
headings, its data tables as Markdown tables and its ``<meta>`` fields (used for .html files, EPUB chapters and
HTML e-mail bodies)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from arag.corpus.tables import table_parts
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


_MARK = re.compile("\x02([1-6])(.*?)\x03|\x04(\\d+)\x05", re.S)  # a heading's text, or a table's number

# a site's page chrome, the same on every page of it: its menus, sidebars, footers and banner (ARIA's landmark roles
# for them too); a search for "Contact" or "Privacy" would find every page, and a page's chunk would open with them
CHROME_TAGS = ("nav", "aside", "footer")
CHROME_ROLES = {"navigation", "complementary", "contentinfo", "banner", "search"}
CONTENT_TAGS = ("main", "article")  # a <header> or <footer> inside these is the content's own (a post's byline)


@dataclass
class HtmlText:
    """An HTML page as text: its title, headings (offset, level, text), ``<meta name=… content=…>`` fields and the
    spans of its tables' Markdown parts (kept whole by the chunker)."""

    text: str
    title: str | None = None
    headings: list[tuple[int, int, str]] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    blocks: list[tuple[int, int]] = field(default_factory=list)


def _data_table(table: object) -> list[list[str]] | None:
    """A ``<table>``'s rows as cell texts, if it holds data: no table inside it, at least two rows and two columns
    (a one-column or nested table lays a page out, and reads as text)."""
    if table.find("table") is not None:  # type: ignore[attr-defined]
        return None
    rows = [
        [" ".join(cell.get_text(" ").split()) for cell in row.find_all(["td", "th"])]
        for row in table.find_all("tr")  # type: ignore[attr-defined]
    ]
    rows = [row for row in rows if any(row)]
    if len(rows) < 2 or max(len(row) for row in rows) < 2:
        return None
    return rows


def _chrome(tag: object, marked_content: bool) -> bool:
    """Whether an element is the site's page chrome, not a part of its content: :data:`CHROME_TAGS` and
    :data:`CHROME_ROLES`, a ``<footer>`` outside the content (:data:`CONTENT_TAGS`), and a ``<header>`` outside it
    where the page marks its content (else the header may be the page's own title)."""
    name = tag.name  # type: ignore[attr-defined]
    role = str(tag.get("role") or "").strip().lower()  # type: ignore[attr-defined]
    if role in CHROME_ROLES:
        return True
    if name not in (*CHROME_TAGS, "header"):
        return False
    inside_content = tag.find_parent(CONTENT_TAGS) is not None  # type: ignore[attr-defined]
    if name == "header":
        return marked_content and not inside_content
    return not inside_content if name == "footer" else True


def _without_chrome(soup: object) -> None:
    """Takes the page chrome out of ``soup`` — unless that would leave no text: a page that is all menu is read as
    it is."""
    content = soup.find(CONTENT_TAGS) or soup.find(attrs={"role": "main"})  # type: ignore[attr-defined]
    marked_content = content is not None
    chrome = [tag for tag in soup.find_all(True) if _chrome(tag, marked_content)]  # type: ignore[attr-defined]
    if not chrome:
        return
    marked = {id(tag) for tag in chrome}
    strings = soup.find_all(string=True)  # type: ignore[attr-defined]
    if not any(s.strip() and not any(id(p) in marked for p in s.parents) for s in strings):
        return
    for tag in chrome:
        if not any(id(parent) in marked for parent in tag.parents):
            tag.decompose()


def html_to_text(raw: str) -> HtmlText:
    """An HTML page's visible text, with its headings, data tables (as Markdown) and meta fields."""
    import warnings

    from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning

    # the heading and table marks below are these four characters
    raw = raw.replace("\x02", " ").replace("\x03", " ").replace("\x04", " ").replace("\x05", " ")
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
    _without_chrome(soup)
    raw_tables: list[list[str]] = []  # each data table's Markdown parts
    for table in soup.find_all("table"):
        rows = _data_table(table)
        if rows is None:
            continue
        caption = " ".join(table.caption.get_text(" ").split()) if table.caption else ""
        raw_tables.append([part.text.rstrip("\n") for part in table_parts(rows, caption)])
        table.replace_with(f"\n\n\x04{len(raw_tables) - 1}\x05\n\n")
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
        "main",
        "nav",
        "aside",
        "header",
        "footer",
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
    table_spans: list[tuple[int, int]] = []
    pieces: list[str] = []
    length, last = 0, 0
    for match in _MARK.finditer(text):
        pieces.append(text[last : match.start()])
        length += match.start() - last
        last = match.end()
        if match.group(3) is not None:  # a table: its parts, each a block
            for number, part in enumerate(raw_tables[int(match.group(3))]):
                if number:
                    pieces.append("\n\n")
                    length += 2
                table_spans.append((length, length + len(part)))
                pieces.append(part)
                length += len(part)
            continue
        if match.group(2).strip():
            headings.append((length, int(match.group(1)), match.group(2).strip()))
        pieces.append(match.group(2))
        length += len(match.group(2))
    pieces.append(text[last:])
    return HtmlText("".join(pieces), title, headings, meta, table_spans)
