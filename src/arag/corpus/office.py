"""Readers for what a team's folder holds besides text, HTML and PDF: Word (.docx), PowerPoint (.pptx), Excel
(.xlsx, .xlsm), CSV and TSV, EPUB and e-mail (.eml), each with the registry's reader for it (python-docx,
python-pptx, openpyxl, ebooklib; csv and email from the standard library).

Each becomes one document whose text reads like Markdown: headings as ``#`` lines (Word's heading styles, a
slide's title, an EPUB's HTML headings), paragraphs, and every table as a Markdown table (arag.corpus.tables),
split by rows with its header repeated where it is long. Where a part of the text came from is recorded as a
*place* — ``slide 3``, ``sheet Revenue, cells A1:D40``, ``rows 1–50``, ``table 2`` — which a chunk's citation
names, like a PDF's page. What the file says about itself (author, created, subject, sheet names, an e-mail's
sender and date) is metadata, for filters.

A file a reader cannot open (a truncated zip, a password, a format it is not) raises IngestError with the reason:
the file is reported once and skipped, and nothing else is lost.
"""

from __future__ import annotations

import csv
import datetime
import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from arag.corpus.markup import HtmlText
from arag.corpus.tables import TablePart, table_parts
from arag.errors import IngestError

OFFICE_SUFFIXES = {".docx", ".pptx", ".xlsx", ".xlsm", ".csv", ".tsv", ".epub", ".eml"}
MAX_SNIFF_CHARS = 64 * 1024


class TextBuilder:
    """A document's text built piece by piece, with the structure of what was added (headings, places, tables)."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.length = 0
        self.headings: list[tuple[int, int, str]] = []  # (offset, level, text)
        self.places: list[tuple[int, str]] = []  # (offset, where the text from there on came from)
        self.blocks: list[tuple[int, int]] = []  # spans kept in one chunk (a table's parts)
        self.tables = 0
        self.figures_read = 0  # pictures read by OCR (at most MAX_FIGURES)
        self.confidences: list[float] = []

    def _add(self, text: str) -> None:
        self.pieces.append(text)
        self.length += len(text)

    def place(self, label: str) -> None:
        """From here on the text comes from ``label`` ("" : from no particular place)."""
        places = self.places
        if places and places[-1][0] == self.length:
            places[-1] = (self.length, label)
        elif not places or places[-1][1] != label:
            places.append((self.length, label))

    def heading(self, level: int, text: str) -> None:
        text = " ".join(text.split())
        if text:
            self.headings.append((self.length, max(1, min(6, level)), text))
            self._add(f"{'#' * max(1, min(6, level))} {text}\n\n")

    def paragraph(self, text: str) -> None:
        text = text.strip()
        if text:
            self._add(text + "\n\n")

    def html(self, page: HtmlText) -> None:
        """An HTML page's text, with its headings and tables where they are in it."""
        if page.text.strip():
            start = self.length
            self.headings += [(start + offset, level, heading) for offset, level, heading in page.headings]
            self.blocks += [(start + a, start + b) for a, b in page.blocks]
            self._add(page.text.rstrip() + "\n\n")

    def table(
        self,
        rows: Sequence[Sequence[object]],
        caption: str = "",
        place: Callable[[TablePart], str] | None = None,
        heading: int = 0,
    ) -> None:
        """A table, its first row the header: each part one block of the text (kept in one chunk). With
        ``heading``, its caption is a heading of that level (a sheet's name)."""
        parts = table_parts(rows, caption)
        if parts:
            self.tables += 1
        for number, part in enumerate(parts):
            if place is not None:
                self.place(place(part))
            start = self.length
            if heading and caption and number == 0:
                self.headings.append((start, heading, " ".join(caption.split())))
            self._add(part.text)
            self.blocks.append((start, self.length))
            self._add("\n")

    def figure(self, alt: str, blob: bytes | None) -> None:
        """A picture: its alt text, and the text read off it (with the OCR's confidence recorded)."""
        from arag.corpus.ocr import MAX_FIGURES, ocr_figure

        alt = " ".join(alt.split())
        if alt:
            self.paragraph(f"[Image: {alt}]")
        if blob is None or self.figures_read >= MAX_FIGURES:
            return
        read = ocr_figure(blob)
        if read is None:
            return
        self.figures_read += 1
        if read.lines:
            self.paragraph("[Text in image: " + " ".join(read.lines) + "]")
            if read.confidence is not None:
                self.confidences.append(read.confidence)

    def ocr_metadata(self) -> dict[str, Any]:
        """What the document records of the pictures it read: how many, the mean confidence of their text."""
        if not self.figures_read:
            return {}
        found: dict[str, Any] = {"ocr_figures": self.figures_read}
        if self.confidences:
            found["ocr_confidence"] = round(sum(self.confidences) / len(self.confidences), 4)
        return found

    @property
    def text(self) -> str:
        return "".join(self.pieces)


def read_office(path: Path, suffix: str) -> tuple[str, TextBuilder, dict[str, Any], str | None]:
    """(text, what was built — its headings, places and table blocks —, metadata, title) of an office file;
    IngestError when it cannot be read."""
    readers: dict[str, Callable[[Path], tuple[TextBuilder, dict[str, Any], str | None]]] = {
        ".docx": _read_docx,
        ".pptx": _read_pptx,
        ".xlsx": _read_xlsx,
        ".xlsm": _read_xlsx,
        ".csv": _read_csv,
        ".tsv": _read_csv,
        ".epub": _read_epub,
        ".eml": _read_eml,
    }
    try:
        built, metadata, title = readers[suffix](path)
    except IngestError:
        raise
    except OSError as exc:
        raise IngestError(f"cannot read: {exc.strerror or exc}") from None
    except Exception as exc:  # each library raises its own errors for a damaged file: all mean "cannot read"
        kind = suffix.lstrip(".").upper()
        raise IngestError(f"not a readable {kind} file ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not built.text.strip():
        raise IngestError("no text content")
    return built.text, built, metadata, title


def _when(value: object) -> str | None:
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return value.isoformat(timespec="seconds")
    return None


def _core(properties: Any) -> tuple[dict[str, Any], str | None]:
    """The Office core properties a filter can use (author, created, modified, subject, keywords), and the title."""
    metadata = {
        "author": getattr(properties, "author", None) or getattr(properties, "creator", None) or None,
        "created": _when(getattr(properties, "created", None)),
        "modified": _when(getattr(properties, "modified", None)),
        "subject": getattr(properties, "subject", None) or None,
        "keywords": getattr(properties, "keywords", None) or None,
    }
    title = getattr(properties, "title", None) or None
    return {k: v for k, v in metadata.items() if v}, str(title) if title else None


# ---------------------------------------------------------------- Word
def _read_docx(path: Path) -> tuple[TextBuilder, dict[str, Any], str | None]:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = docx.Document(str(path))
    built = TextBuilder()
    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            style = (item.style.name if item.style is not None else "") or ""
            level = _heading_level(style)
            if level:
                built.place("")
                built.heading(level, item.text)
            else:
                built.paragraph(item.text)
            for described, embedded in _docx_figures(document, item):
                built.figure(described, embedded)
        elif isinstance(item, Table):
            number = built.tables + 1
            built.table(_docx_rows(item), place=lambda part, n=number: f"table {n}")  # type: ignore[misc]
            built.place("")
    metadata, title = _core(document.core_properties)
    return built, {**metadata, **built.ocr_metadata()}, title


def _docx_figures(document: Any, paragraph: Any) -> list[tuple[str, bytes | None]]:
    """The pictures of a paragraph: (alt text, image bytes) each."""
    figures = []
    for drawing in paragraph._p.xpath(".//w:drawing"):
        described = " ".join(str(d) for d in drawing.xpath(".//wp:docPr/@descr"))
        blob = None
        for rid in drawing.xpath(".//a:blip/@r:embed"):
            part = document.part.related_parts.get(rid)
            blob = getattr(part, "blob", None)
        figures.append((described, blob))
    return figures


def _heading_level(style: str) -> int:
    if style == "Title":
        return 1
    if style.startswith("Heading "):
        number = style.removeprefix("Heading ").strip()
        return int(number) if number.isdigit() else 0
    return 0


def _docx_rows(table: Any) -> list[list[str]]:
    rows = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            # a merged cell is returned once per grid column it spans: its text once, the rest empty
            cells.append("" if cell._tc is previous else cell.text)
            previous = cell._tc
        rows.append(cells)
    return rows


# ---------------------------------------------------------------- PowerPoint
def _read_pptx(path: Path) -> tuple[TextBuilder, dict[str, Any], str | None]:
    from pptx import Presentation
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    deck = Presentation(str(path))
    built = TextBuilder()
    first_title = None
    for number, slide in enumerate(deck.slides, 1):
        built.place(f"slide {number}")
        title_shape = slide.shapes.title
        title = title_shape.text_frame.text.strip() if title_shape is not None and title_shape.has_text_frame else ""
        built.heading(1, title or f"Slide {number}")
        first_title = first_title or title or None
        for shape in _shapes(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if shape.has_table:
                built.table([[cell.text for cell in row.cells] for row in shape.table.rows])
            elif shape.has_text_frame:
                built.paragraph("\n".join(p.text for p in shape.text_frame.paragraphs if p.text.strip()))
            described = shape.element.xpath("./*/p:cNvPr/@descr") if hasattr(shape.element, "xpath") else []
            alt = str(described[0]) if described else ""
            image = getattr(shape, "image", None) if shape.shape_type == MSO_SHAPE_TYPE.PICTURE else None
            if alt.strip() or image is not None:
                built.figure(alt, image.blob if image is not None else None)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame.text if slide.notes_slide.notes_text_frame else ""
            if notes.strip():
                built.paragraph(f"Notes: {notes.strip()}")
    metadata, title = _core(deck.core_properties)
    metadata["slides"] = len(deck.slides)
    return built, {**metadata, **built.ocr_metadata()}, title or first_title


def _shapes(shapes: Any) -> list[Any]:
    """Every shape, a group's members in its place, top to bottom then left to right as a reader scans a slide."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    found: list[Any] = []
    for shape in shapes:
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            found += _shapes(shape.shapes)
        else:
            found.append(shape)
    return sorted(found, key=lambda s: (s.top or 0, s.left or 0))


# ---------------------------------------------------------------- Excel
def _read_xlsx(path: Path) -> tuple[TextBuilder, dict[str, Any], str | None]:
    import warnings

    from openpyxl import load_workbook
    from openpyxl.utils import get_column_letter

    with warnings.catch_warnings():  # openpyxl warns about features it does not read (data validation, styles)
        warnings.simplefilter("ignore")
        workbook = load_workbook(str(path), read_only=True, data_only=True)
        # a formula's value is what Excel cached when it saved the file; a file written by a program (openpyxl,
        # pandas) caches none: such a cell shows its formula
        formulas = load_workbook(str(path), read_only=True, data_only=False)
    built = TextBuilder()
    names = []
    try:
        for sheet, written in zip(workbook.worksheets, formulas.worksheets, strict=True):
            names.append(sheet.title)
            rows = [
                [_shown(value, written) for value, written in zip(r, w, strict=False)]
                for r, w in zip(
                    sheet.iter_rows(min_row=1, min_col=1, values_only=True),
                    written.iter_rows(min_row=1, min_col=1, values_only=True),
                    strict=False,
                )
            ]
            # the used range: rows and columns up to the last value; its top-left is where the table starts
            top = next((i for i, r in enumerate(rows) if any(v not in (None, "") for v in r)), None)
            if top is None:
                continue
            left = min(
                next(j for j, v in enumerate(r) if v not in (None, ""))
                for r in rows
                if any(v not in (None, "") for v in r)
            )
            table = [r[left:] for r in rows[top:]]
            first_row, first_col = 1 + top, 1 + left  # the rows and columns counted from A1
            width = max(len(r) for r in table)
            last_col = get_column_letter(first_col + width - 1)

            def place(
                part: TablePart,
                name: str = sheet.title,
                top: int = first_row,
                left: str = get_column_letter(first_col),
                right: str = last_col,
            ) -> str:
                first = top if part.first_row == 0 else top + 1 + part.first_row  # the header row, else the part's
                return f"sheet {name}, cells {left}{first}:{right}{top + 1 + part.last_row}"

            built.table(table, caption=sheet.title, place=place, heading=1)
            built.place("")
    finally:
        workbook.close()
        formulas.close()
    metadata, title = _core(workbook.properties)
    metadata["sheets"] = names
    return built, metadata, title


def _shown(value: object, written: object) -> object:
    """A cell as shown: its value, else (no value cached) its formula."""
    return written if value is None and isinstance(written, str) and written.startswith("=") else value


# ---------------------------------------------------------------- CSV
def _read_csv(path: Path) -> tuple[TextBuilder, dict[str, Any], str | None]:
    from arag.corpus.markup import read_text

    raw = read_text(path)
    if path.suffix.lower() == ".tsv":
        dialect: Any = csv.excel_tab
    else:
        try:
            dialect = csv.Sniffer().sniff(raw[:MAX_SNIFF_CHARS], delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
    rows = list(csv.reader(io.StringIO(raw), dialect))
    built = TextBuilder()

    def place(part: TablePart) -> str:
        return f"rows {part.first_row + 1}–{part.last_row + 1}"

    built.table(rows, place=place)
    return built, {"rows": max(0, len(rows) - 1), "columns": len(rows[0]) if rows else 0}, None


# ---------------------------------------------------------------- EPUB
def _read_epub(path: Path) -> tuple[TextBuilder, dict[str, Any], str | None]:
    import warnings

    import ebooklib
    from ebooklib import epub

    from arag.corpus.markup import html_to_text

    with warnings.catch_warnings():  # ebooklib warns about options it will change in a future version
        warnings.simplefilter("ignore")
        book = epub.read_epub(str(path), {"ignore_ncx": True})
    built = TextBuilder()
    for item_id, _linear in book.spine:
        item = book.get_item_with_id(item_id)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT or isinstance(item, epub.EpubNav):
            continue  # the table of contents repeats the chapters' titles: the chapters are read
        built.html(html_to_text(item.get_content().decode("utf-8", errors="replace")))

    def first(name: str) -> str | None:
        values = book.get_metadata("DC", name)
        return str(values[0][0]) if values and values[0] and values[0][0] else None

    metadata = {k: v for k, v in {"author": first("creator"), "language": first("language")}.items() if v}
    return built, metadata, first("title")


# ---------------------------------------------------------------- e-mail
def _read_eml(path: Path) -> tuple[TextBuilder, dict[str, Any], str | None]:
    import email
    import email.policy
    from email.utils import parsedate_to_datetime

    from arag.corpus.markup import html_to_text

    message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    if not any(message.get(h) for h in ("From", "To", "Subject", "Date")):
        raise IngestError("not an e-mail message (no From, To, Subject or Date header)")
    built = TextBuilder()
    subject = str(message.get("Subject") or "").strip()
    header = "\n".join(f"{name}: {message.get(name)}" for name in ("From", "To", "Cc", "Date") if message.get(name))
    built.heading(1, subject or path.stem)
    built.paragraph(header)
    body = message.get_body(preferencelist=("plain", "html"))
    if body is not None:
        content = body.get_content()
        if body.get_content_type() == "text/html":
            built.html(html_to_text(str(content)))
        else:
            built.paragraph(str(content))
    attachments = [part.get_filename() for part in message.iter_attachments() if part.get_filename()]
    try:
        sent = _when(parsedate_to_datetime(str(message.get("Date")))) if message.get("Date") else None
    except (TypeError, ValueError):
        sent = None
    metadata = {
        "from": str(message.get("From") or "") or None,
        "to": str(message.get("To") or "") or None,
        "date": sent,
        "subject": subject or None,
        "attachments": [str(a) for a in attachments] or None,
    }
    return built, {k: v for k, v in metadata.items() if v}, subject or None
