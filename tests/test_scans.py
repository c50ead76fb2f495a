"""PDF tables, scanned pages and images: a ruled table over three pages kept by rows under its header, text in an
image and on a page with no text layer read by OCR (RapidOCR's models, shipped in its wheel), damaged files reported
once and skipped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from arag.citations import locate
from arag.corpus.build import build_index
from arag.corpus.readers import read_source
from arag.errors import IngestError
from arag.index import Index
from conftest import fake_settings
from support.office_files import DEPOTS, text_image, write_table_pdf

MEMO = "Scanned memo: the Tromso depot closes on 12 March."


def test_a_pdf_table_over_three_pages_keeps_its_header_in_every_part(tmp_path: Path) -> None:
    write_table_pdf(tmp_path / "depots.pdf")
    (document,) = read_source(tmp_path / "depots.pdf")
    assert document.text.startswith("Quarterly shipments by depot, 2026.")
    assert document.text.rstrip().endswith("All depots report monthly.")  # the text around the table stays
    assert [number for _offset, number in document.structure.pages] == [1, 2, 3]
    header = "| Depot | Crates | Manager |\n|---|---|---|\n"
    parts = [document.text[a:b] for a, b in document.structure.blocks]
    assert len(parts) >= 3 and all(header in part for part in parts)
    assert "continued" in parts[-1]  # the header given again to the rows that go on from the page before
    rows = [r for part in parts for r in re.findall(r"^\| (Depot \d+) \|", part, re.M)]
    assert rows == [values[0] for values in DEPOTS[1:]]  # every row once, in order

    build_index([tmp_path / "depots.pdf"], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    try:
        (hit,) = index.keyword_search(["Depot 77 |"], 3)
        (record,), _ = index.read([hit.chunk_id])
        assert header in record.text and "| Depot 77 | 539 | Manager 77 |" in record.text
        assert locate(index, record, "Depot 77 539 Manager 77").label == "depots.pdf, page 3"
    finally:
        index.close()


def test_text_in_an_image_is_read_with_its_confidence(tmp_path: Path) -> None:
    text_image([MEMO, "Invoices go to billing@kestrel.example."]).save(tmp_path / "memo.png")  # type: ignore[attr-defined]
    (document,) = read_source(tmp_path / "memo.png")
    assert MEMO in document.text and "Invoices go to billing" in document.text
    assert 0.8 < float(document.metadata["ocr_confidence"]) <= 1.0 and document.metadata["type"] == "png"
    # a two-page TIFF: each page's text cites its page
    first, second = text_image(["The first page talks of ferries."]), text_image(["The second page names Narvik."])
    first.save(tmp_path / "pages.tiff", save_all=True, append_images=[second])  # type: ignore[attr-defined]
    (tiff,) = read_source(tmp_path / "pages.tiff")
    assert [label for _offset, label in tiff.structure.places] == ["page 1", "page 2"]
    assert tiff.text.index("ferries") < tiff.text.index("Narvik")


def test_a_scanned_pdf_page_is_read_by_ocr_and_cites_its_page(tmp_path: Path) -> None:
    text_image([MEMO]).save(tmp_path / "scan.pdf")  # type: ignore[attr-defined]  # a page that is an image only
    build_index([tmp_path / "scan.pdf"], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    try:
        (hit,) = index.keyword_search(["Tromso depot"], 3)
        (record,), _ = index.read([hit.chunk_id])
        assert MEMO in record.text and locate(index, record).label == "scan.pdf, page 1"
        (document,) = index.documents()
        assert document.metadata["ocr_pages"] == [1] and float(document.metadata["ocr_confidence"]) > 0.8
    finally:
        index.close()


def encrypted_pdf(path: Path) -> None:
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt("secret")
    with path.open("wb") as out:
        writer.write(out)


@pytest.mark.parametrize(
    "name,make,reason",
    [
        ("empty.png", lambda p: p.write_bytes(b""), "not a readable image"),
        ("cut.jpg", lambda p: p.write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF"), "not a readable image"),
        ("blank.png", lambda p: text_image([]).save(p), "no text found"),  # type: ignore[attr-defined]
        ("locked.pdf", encrypted_pdf, "unreadable PDF"),
    ],
)
def test_damaged_images_and_locked_pdfs_raise_a_reason(tmp_path: Path, name: str, make, reason: str) -> None:  # type: ignore[no-untyped-def]
    make(tmp_path / name)
    with pytest.raises(IngestError, match=reason):
        read_source(tmp_path / name)


def test_a_damaged_scan_is_reported_once_and_the_rest_indexed(tmp_path: Path) -> None:
    folder = tmp_path / "scans"
    folder.mkdir()
    text_image([MEMO]).save(folder / "memo.png")  # type: ignore[attr-defined]
    (folder / "empty.png").write_bytes(b"")
    encrypted_pdf(folder / "locked.pdf")
    report = build_index([folder], tmp_path / "idx", fake_settings())
    assert sorted(Path(p.path).name for p in report.problems) == ["empty.png", "locked.pdf"]
    assert report.documents == 1


def test_reading_is_counted_file_by_file(tmp_path: Path) -> None:
    folder = tmp_path / "scans"
    folder.mkdir()
    text_image([MEMO]).save(folder / "memo.png")  # type: ignore[attr-defined]
    (folder / "note.md").write_text("The ferry leaves at nine.\n", encoding="utf-8")
    (folder / "empty.png").write_bytes(b"")
    stages: dict[str, list[int]] = {}

    def progress(stage: str, total: int):  # type: ignore[no-untyped-def]
        stages[stage] = [total, 0]

        def advance(done: int) -> None:
            stages[stage][1] += done

        return advance

    build_index([folder], tmp_path / "idx", fake_settings(), progress=progress)
    assert stages["reading"] == [3, 3]  # every file, the one it could not read too
