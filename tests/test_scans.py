"""PDF tables, scanned pages and images: a ruled table over three pages kept by rows under its header, text in an
image and on a page with no text layer read by OCR (RapidOCR's models, shipped in its wheel), damaged files reported
once and skipped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arag.citations import locate
from arag.corpus.build import build_index
from arag.corpus.readers import read_source
from arag.errors import IngestError
from arag.index import Index
from conftest import FUZZ_SCALE, fake_settings
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
        # the claim's number picks its row: two rows of one table are nearly the same sentence to the vectors
        assert locate(index, record, "539 crates").sentence == "| Depot 77 | 539 | Manager 77 |"
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


# ---------------------------------------------------------------- any bytes under any of the new suffixes
def _zip_of(members: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def _valid_then_damaged(suffix: str, cut: float, flip: int) -> bytes:
    """A valid file of ``suffix`` cut short at ``cut`` of its length, one byte changed at ``flip``."""
    import tempfile

    from support.office_files import write_docx, write_epub, write_pptx, write_xlsx

    writers = {".docx": write_docx, ".pptx": write_pptx, ".xlsx": write_xlsx, ".epub": write_epub}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"f{suffix}"
        if suffix in writers:
            writers[suffix](path)
        elif suffix == ".pdf":
            write_table_pdf(path)
        else:
            text_image(["Damaged."]).save(path)  # type: ignore[attr-defined]
        data = bytearray(path.read_bytes())
    data = data[: max(1, int(len(data) * cut))]
    data[flip % len(data)] ^= 0xFF
    return bytes(data)


SUFFIXES = [".docx", ".pptx", ".xlsx", ".epub", ".eml", ".csv", ".png", ".jpg", ".tiff", ".pdf"]


@settings(max_examples=40 * FUZZ_SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    suffix=st.sampled_from(SUFFIXES),
    content=st.one_of(
        st.binary(max_size=2000),
        st.builds(
            _zip_of,
            st.dictionaries(
                st.sampled_from(
                    [
                        "[Content_Types].xml",
                        "word/document.xml",
                        "mimetype",
                        "META-INF/container.xml",
                        "xl/workbook.xml",
                    ]
                ),
                st.binary(max_size=300),
                max_size=4,
            ),
        ),
    ),
)
def test_any_bytes_under_a_new_suffix_read_or_raise_one_reason(tmp_path: Path, suffix: str, content: bytes) -> None:
    path = tmp_path / f"fuzz{suffix}"
    path.write_bytes(content)
    try:
        documents = read_source(path)
    except IngestError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert all(d.text.strip() for d in documents)


@settings(max_examples=15 * FUZZ_SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    suffix=st.sampled_from([".docx", ".pptx", ".xlsx", ".epub", ".pdf", ".png"]),
    cut=st.floats(0.05, 1.0),
    flip=st.integers(0, 10**6),
)
def test_a_damaged_real_file_reads_or_raises_one_reason(tmp_path: Path, suffix: str, cut: float, flip: int) -> None:
    path = tmp_path / f"damaged{suffix}"
    path.write_bytes(_valid_then_damaged(suffix, cut, flip))
    try:
        read_source(path)
    except IngestError as exc:
        assert str(exc) and "\n" not in str(exc)


def test_an_xml_entity_bomb_in_a_word_file_is_not_expanded(tmp_path: Path) -> None:
    from support.office_files import write_docx

    write_docx(tmp_path / "ok.docx")
    import zipfile

    bomb = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
        '<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;"><!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;">'
        '<!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">]>'
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r>'
        "<w:t>&lol5;</w:t></w:r></w:p></w:body></w:document>"
    )
    with zipfile.ZipFile(tmp_path / "ok.docx") as source, zipfile.ZipFile(tmp_path / "bomb.docx", "w") as out:
        for item in source.infolist():
            out.writestr(item, bomb if item.filename == "word/document.xml" else source.read(item.filename))
    try:
        (document,) = read_source(tmp_path / "bomb.docx")
    except IngestError:
        return
    assert len(document.text) < 10_000  # never the 2 MB the entities would expand to
