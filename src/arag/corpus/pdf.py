"""PDF: each page's text (pypdf), its ruled tables as Markdown tables (pdfplumber), and the text of a scanned page
(a page with no text layer, rendered with pypdfium2 and read by OCR, arag.corpus.ocr).

A page without a table keeps pypdf's text as it always was. A page where pdfplumber finds a ruled table is read by
pdfplumber instead: its text above, between and below the tables, and each table as a Markdown table (a block the
chunker keeps whole). A table that goes on from the page before — as wide, the first thing on its page, its
first row not that table's header — is given that header again. Tables drawn without rules are not detected: their
page reads as text, as before."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from arag.corpus.tables import table_parts
from arag.errors import IngestError

T = TypeVar("T")
MIN_PAGE_CHARS = 20  # a page with fewer characters of text than this is read as a scanned image
RENDER_SCALE = 2.0  # 144 dpi: small print stays legible to the OCR models
MIN_TABLE_PATHS = 2  # a table of two rows is at least two drawn paths (two rectangles, or lines)
HEADING_SCALE = 1.15  # a line drawn this much larger than the page's body text is a heading
MAX_HEADING_WORDS = 12
MAX_OCR_PAGES = 500  # a longer scanned document is read up to here (about 2 s a page on 2 cores), and says so


_PDF_INFO = {
    "/Title": "title",
    "/Author": "author",
    "/Subject": "subject",
    "/Keywords": "keywords",
    "/Creator": "creator",
    "/Producer": "producer",
    "/CreationDate": "created",
    "/ModDate": "modified",
}


def _pdf_info(reader: Any) -> dict[str, Any]:
    info: dict[str, Any] = {}
    try:
        fields = reader.metadata or {}
    except Exception:  # a damaged info dictionary costs the metadata, not the text
        return info
    for key, name in _PDF_INFO.items():
        try:
            value = fields.get(key)
        except Exception:
            continue
        if key in ("/CreationDate", "/ModDate"):
            value = _pdf_date(value)
        if isinstance(value, str) and value.strip():
            info[name] = value.strip()
    return info


_PDF_DATE = re.compile(r"^D?:?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?")


def _pdf_date(value: Any) -> str | None:
    """A PDF date ("D:20240131120000+01'00'") as ISO 8601 text (to the precision it has, no time zone)."""
    match = _PDF_DATE.match(str(value or ""))
    if match is None:
        return None
    year, month, day, hour, minute, second = match.groups()
    date = f"{year}-{month or '01'}-{day or '01'}"
    return f"{date}T{hour}:{minute or '00'}:{second or '00'}" if hour else date


class _Lines:
    """What pypdf shows of a page's text runs: each run's text, its font size as drawn, and whether its font is bold."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, float, bool]] = []

    def visit(self, text: str, _cm: Any, tm: Any, font: Any, size: float) -> None:
        if not text.strip():
            return
        scale = abs(float(tm[3])) if tm and float(tm[3]) else 1.0
        name = str((font or {}).get("/BaseFont", "")) if isinstance(font, dict) else ""
        self.runs.append((" ".join(text.split()), float(size or 0.0) * scale, "bold" in name.lower()))

    def headings(self, page_text: str) -> list[tuple[int, int, str]]:
        """The page's headings (offset in ``page_text``, level, text): a short line of its own, without a sentence's
        end, drawn larger than the page's body text (the size most of its characters have) or bold where the body is
        not. Level 1 for the largest such size, 2 for the others."""
        if not self.runs:
            return []
        weight: dict[tuple[float, bool], int] = {}
        for text, size, bold in self.runs:
            weight[(round(size, 1), bold)] = weight.get((round(size, 1), bold), 0) + len(text)
        body_size, body_bold = max(weight, key=lambda key: weight[key])
        found: list[tuple[str, float]] = []
        for text, size, bold in self.runs:
            larger = size >= body_size * HEADING_SCALE
            if not (larger or (bold and not body_bold and size >= body_size)) or not _heading_line(text):
                continue
            found.append((text, size))
        if not found:
            return []
        top = max(size for _text, size in found)
        lines = {" ".join(line.split()): m.start() for m in re.finditer(r"[^\n]+", page_text) if (line := m.group())}
        return [(lines[text], 1 if size == top else 2, text) for text, size in found if text in lines]


def _heading_line(text: str) -> bool:
    return (
        0 < len(text.split()) <= MAX_HEADING_WORDS
        and not text.endswith((".", ",", ";", ":"))
        and any(c.isalpha() for c in text)
    )


def read_pdf(
    path: Path,
) -> tuple[str, list[tuple[int, int]], dict[str, Any], list[tuple[int, int]], list[tuple[int, int, str]]]:
    """(text, the offset where each page with text starts and its number, the document info fields, the spans of
    its tables, its headings as (offset, level, text): lines drawn larger, or bold, than the page's body text)."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path))
        visited: list[_Lines] = []
        pages: list[str] = []
        for page in reader.pages:
            visited.append(_Lines())
            pages.append(page.extract_text(visitor_text=visited[-1].visit) or "")
        info = _pdf_info(reader)
    except (PdfReadError, OSError, ValueError, KeyError) as exc:
        raise IngestError(f"unreadable PDF ({exc})") from None
    except Exception as exc:  # pypdf raises what its parser meets in a damaged file: all mean "unreadable"
        raise IngestError(f"unreadable PDF ({type(exc).__name__}: {str(exc)[:200]})") from None
    scanned = [n for n, text in enumerate(pages, 1) if len("".join(text.split())) < MIN_PAGE_CHARS]
    with _PdfiumPages(path) as pdfium_pages:  # one pdfium document for the path count and the scans' renders
        tabled = _pages_with_tables(path, _ruled_pages(pdfium_pages))
        ocr = _ocr_pages(pdfium_pages, scanned[:MAX_OCR_PAGES]) if scanned else {}
    parts: list[str] = []
    starts: list[tuple[int, int]] = []
    blocks: list[tuple[int, int]] = []
    headings: list[tuple[int, int, str]] = []
    length = 0
    confidences: list[float] = []
    for number, page_text in enumerate(pages, start=1):
        pieces: list[tuple[str, bool]]  # (text, a table part)
        if number in tabled:
            pieces = tabled[number]
        elif number in ocr and ocr[number][0].strip():
            read, confidence = ocr[number]
            pieces = [(read, False)]
            confidences += [confidence] if confidence is not None else []
        else:
            stripped = page_text.strip()
            lead = len(page_text) - len(page_text.lstrip())
            page_start = length + (2 if parts else 0)
            headings += [
                (page_start + offset - lead, level, title)
                for offset, level, title in visited[number - 1].headings(page_text)
                if offset >= lead and offset - lead < len(stripped)
            ]
            pieces = [(stripped, False)]
        pieces = [(text.strip("\n") if is_table else text.strip(), is_table) for text, is_table in pieces]
        pieces = [(text, is_table) for text, is_table in pieces if text.strip()]
        if not pieces:
            continue
        if parts:
            parts.append("\n\n")
            length += 2
        starts.append((length, number))
        for i, (text, is_table) in enumerate(pieces):
            if i:
                parts.append("\n\n")
                length += 2
            if is_table:
                blocks.append((length, length + len(text)))
            parts.append(text)
            length += len(text)
    text = "".join(parts)
    if not text.strip():
        reason = "no text found on its pages, OCR included" if ocr else "no extractable text"
        raise IngestError(f"PDF has {reason}")
    if ocr:
        info["ocr_pages"] = sorted(n for n, (page_text, _c) in ocr.items() if page_text.strip())
        if confidences:
            info["ocr_confidence"] = round(sum(confidences) / len(confidences), 4)
        if len(scanned) > MAX_OCR_PAGES:
            info["ocr_pages_skipped"] = len(scanned) - MAX_OCR_PAGES
    return text, starts, info, blocks, headings


class _PdfiumPages:
    """A PDF's pages as pdfium opens them (None: it cannot), each page closed after use; a damaged page is None."""

    def __init__(self, path: Path) -> None:
        import pypdfium2 as pdfium

        self.error = pdfium.PdfiumError
        try:
            self.document: Any = pdfium.PdfDocument(str(path))
        except (pdfium.PdfiumError, OSError):
            self.document = None

    def __enter__(self) -> _PdfiumPages:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.document is not None:
            self.document.close()

    def __len__(self) -> int:
        return 0 if self.document is None else len(self.document)

    def use(self, number: int, action: Callable[[Any], T]) -> T | None:
        """``action(page)`` on page ``number`` (1-based); None when pdfium cannot load or read that page."""
        if self.document is None:
            return None
        try:
            page = self.document[number - 1]
        except self.error:
            return None
        try:
            return action(page)
        except self.error:
            return None
        finally:
            page.close()


def _ocr_pages(pages: _PdfiumPages, numbers: list[int]) -> dict[int, tuple[str, float | None]]:
    """The OCR text (and confidence) of the given pages (1-based), rendered at RENDER_SCALE; {} without the engine;
    a page pdfium cannot render stays empty."""
    from arag.corpus.ocr import ocr_available, ocr_image

    if not numbers or not ocr_available():
        return {}
    read: dict[int, tuple[str, float | None]] = {}
    for number in numbers:
        image = pages.use(number, lambda page: page.render(scale=RENDER_SCALE).to_pil())
        if image is not None:
            found = ocr_image(image)
            read[number] = (found.text, found.confidence)
    return read


def _pages_with_tables(path: Path, ruled: list[int]) -> dict[int, list[tuple[str, bool]]]:
    """For each page (1-based) where pdfplumber finds a ruled table: its pieces in reading order, the text between
    the tables and each table's Markdown parts. {} when there is none (or pdfplumber cannot read the file: pypdf's
    text stands)."""
    if not ruled:
        return {}
    import pdfplumber

    found: dict[int, list[tuple[str, bool]]] = {}
    previous: tuple[int, list[str], int] | None = None  # (page, header, width) of the last table read
    try:
        with pdfplumber.open(str(path), pages=ruled) as pdf:
            for number, page in zip(ruled, pdf.pages, strict=True):
                tables = sorted(page.find_tables(), key=lambda t: t.bbox[1])
                if not tables:
                    continue
                pieces: list[tuple[str, bool]] = []
                top = 0.0
                for table in tables:
                    _x0, table_top, _x1, bottom = table.bbox
                    above = _text_between(page, top, table_top)
                    rows = [[cell or "" for cell in row] for row in table.extract() if any(cell for cell in row)]
                    top = bottom
                    if above.strip():
                        pieces.append((above, False))
                    if not rows:
                        continue
                    width = max(len(r) for r in rows)
                    goes_on = (
                        previous is not None
                        and previous[0] == number - 1
                        and previous[2] == width
                        and not pieces
                        and [_cell(c) for c in rows[0]] != previous[1]
                    )
                    header = previous[1] if goes_on and previous is not None else [_cell(c) for c in rows[0]]
                    body = rows if goes_on else rows[1:]
                    caption = f"Table (page {number}{', continued' if goes_on else ''})"
                    pieces += [(part.text, True) for part in table_parts([header, *body], caption)]
                    previous = (number, header, width)
                below = _text_between(page, top, float(page.height))
                if below.strip():
                    pieces.append((below, False))
                found[number] = pieces
    except Exception:  # pdfplumber's parser fails on some files pypdf reads: the tables are lost, not the text
        return {}
    return found


def _ruled_pages(pages: _PdfiumPages) -> list[int]:
    """The pages (1-based) drawn with enough paths to hold a ruled table. pdfplumber reads a page about 25 times
    slower than pypdf; pdfium counts a page's paths in microseconds, so only these pages are given to it (a page
    pdfium cannot load is not: pypdf's text of it stands)."""
    import pypdfium2.raw as pdfium_raw

    def drawn(page: Any) -> bool:
        paths = page.get_objects(filter=[pdfium_raw.FPDF_PAGEOBJ_PATH], max_depth=3)
        return sum(1 for _ in zip(range(MIN_TABLE_PATHS), paths, strict=False)) >= MIN_TABLE_PATHS

    return [number for number in range(1, len(pages) + 1) if pages.use(number, drawn)]


def _text_between(page: Any, top: float, bottom: float) -> str:
    if bottom - top < 1:
        return ""
    region = page.crop((0, max(0.0, top), float(page.width), min(float(page.height), bottom)), strict=False)
    return str(region.extract_text() or "")


def _cell(value: object) -> str:
    return " ".join(str(value or "").split())
