"""The office readers (arag.corpus.office) on documents made here with the registries' writers: each kind indexed,
its chunks citing their slide, sheet cells, rows or table; long tables split by rows with the header in every
part; damaged files reported once and skipped."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arag.citations import locate
from arag.corpus.build import build_index
from arag.corpus.chunking import chunk_document, count_tokens
from arag.corpus.readers import read_source
from arag.corpus.tables import PART_TOKENS, table_parts
from arag.errors import IngestError
from arag.index import Index
from conftest import FUZZ_SCALE, fake_settings
from support.office_files import TEAMS, text_image, write_docx, write_epub, write_office_folder, write_pptx, write_xlsx


@pytest.fixture(scope="module")
def office_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    folder = write_office_folder(tmp_path_factory.mktemp("office") / "docs")
    report = build_index([folder], folder.parent / "idx", fake_settings())
    assert not report.problems and report.documents == 7
    return Index.open(folder.parent / "idx", threads=1)


def labels_of(index: Index, keyword: str, claim: str | None = None) -> list[str]:
    hits = index.keyword_search([keyword], 10)
    records, _ = index.read([h.chunk_id for h in hits])
    return [locate(index, record, claim).label for record in records]


def test_each_kind_is_indexed_and_cites_where_its_text_came_from(office_index: Index) -> None:
    assert labels_of(office_index, "Lisbon–Tokyo", "Lisbon–Tokyo $1,400") == ["docs/policy.docx, table 1 › Flights"]
    assert labels_of(office_index, "Hotels in Europe", "Hotels in Europe cost up to $180 a night.") == [
        "docs/policy.docx › Hotels › Europe"
    ]
    notes = "Notes: APAC overtook EMEA for the first time."
    assert labels_of(office_index, "APAC overtook", notes) == ["docs/q3.pptx, slide 2 › By region"]
    assert labels_of(office_index, "APAC overtook") == ["docs/q3.pptx, slide 1 – slide 2 › By region"]
    assert labels_of(office_index, "Laptops", "Laptops 52000") == [
        "docs/headcount.xlsx, sheet Budget, cells B3:C4 › Budget"
    ]
    assert labels_of(office_index, "Oslo") == ["docs/people.csv, rows 1–2"]
    assert labels_of(office_index, "cork oak", "The cork oak grows in Alentejo.") == ["docs/guide.epub › Trees"]
    assert labels_of(office_index, "Porto") == ["docs/offsite.eml › Offsite moved"]
    docs = {d.metadata["path"]: d for d in office_index.documents()}
    assert docs["docs/policy.docx"].title == "Travel policy"
    assert docs["docs/policy.docx"].metadata["author"] == "Maria Castellanos"
    assert docs["docs/q3.pptx"].title == "Q3 results" and docs["docs/q3.pptx"].metadata["slides"] == 2
    assert docs["docs/headcount.xlsx"].metadata["sheets"] == ["Headcount", "Budget", "Empty"]
    assert docs["docs/guide.epub"].metadata["author"] == "Ana Silva"
    offsite = docs["docs/offsite.eml"].metadata
    assert offsite["date"] == "2026-11-03T10:00:00+00:00" and offsite["attachments"] == ["agenda.pdf"]
    assert office_index.keyword_search(["Teutberga"], 5) == []


def test_word_tables_slides_and_notes_read_as_markdown(tmp_path: Path) -> None:
    write_docx(tmp_path / "policy.docx")
    write_pptx(tmp_path / "q3.pptx")
    (policy,) = read_source(tmp_path / "policy.docx")
    assert "| Route | Max fare |\n|---|---|\n| Lisbon–Boston | $900 |\n| Lisbon–Tokyo | $1,400 |\n" in policy.text
    assert policy.text.startswith("# Flights\n\nEmployees fly economy")
    (deck,) = read_source(tmp_path / "q3.pptx")
    assert "# By region" in deck.text and "| EMEA | $1.9M |" in deck.text
    assert "Notes: APAC overtook EMEA for the first time." in deck.text
    assert [label for _offset, label in deck.structure.places] == ["slide 1", "slide 2"]
    write_epub(tmp_path / "guide.epub")
    (guide,) = read_source(tmp_path / "guide.epub")
    assert guide.text.count("Birds") == 1  # the table of contents is not read as a chapter


def test_a_long_sheet_is_split_by_rows_with_its_header_in_every_chunk(tmp_path: Path) -> None:
    write_xlsx(tmp_path / "headcount.xlsx")
    build_index([tmp_path / "headcount.xlsx"], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    records, _ = index.read([f"headcount.xlsx#{n}" for n in range(10)])
    header = "| Team | Engineers | Lead |\n|---|---|---|\n"
    table_chunks = [r for r in records if "| Team " in r.text]
    assert len(table_chunks) >= 3
    seen: list[str] = []
    for record in table_chunks:
        assert header in record.text
        seen += re.findall(r"^\| (Team \d+) \|", record.text, re.M)
        for sentence in index.sentences(record):  # a row is a sentence of its own
            assert sentence.count("\n| Team ") <= 1
    assert seen == [f"Team {i}" for i in range(150)]  # every row once, in order, none cut from its header
    labels = [locate(index, r).label for r in table_chunks]
    assert labels[0].startswith("headcount.xlsx, sheet Headcount, cells A1:C")
    (sheets,) = read_source(tmp_path / "headcount.xlsx")
    places = [label for _offset, label in sheets.structure.places if "Headcount" in label]
    # each part names its rows as the sheet numbers them: the header in row 1, 150 rows below it
    assert places[0] == "sheet Headcount, cells A1:C49" and places[-1].endswith(":C151") and len(places) == 4
    for earlier, later in itertools.pairwise(places):
        assert int(later.split(":C")[0].split("cells A")[1]) == int(earlier.split(":C")[1]) + 1
    index.close()


@pytest.mark.parametrize(
    "name,content,reason",
    [
        ("short.docx", b"PK\x03\x04truncated", "not a readable DOCX"),
        ("short.pptx", b"PK\x03\x04truncated", "not a readable PPTX"),
        ("short.xlsx", b"PK\x03\x04truncated", "not a readable XLSX"),
        ("short.epub", b"PK\x03\x04truncated", "not a readable EPUB"),
        ("text.docx", b"just some text", "not a readable DOCX"),
        ("empty.csv", b"", "empty"),
        ("blank.csv", b"\n\n", "empty"),
        ("noise.eml", b"\x00\x01 not mail", "not an e-mail"),
    ],
)
def test_damaged_files_raise_a_reason(tmp_path: Path, name: str, content: bytes, reason: str) -> None:
    (tmp_path / name).write_bytes(content)
    with pytest.raises(IngestError, match=reason):
        read_source(tmp_path / name)


def test_a_damaged_file_is_reported_once_and_the_rest_indexed(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    write_docx(folder / "policy.docx")
    good = (folder / "policy.docx").read_bytes()
    (folder / "cut.docx").write_bytes(good[: len(good) // 2])
    (folder / "empty.xlsx").write_bytes(b"")
    (folder / "~$policy.docx").write_bytes(b"\x0bMaria Castellanos")  # Word's owner file while it is open
    report = build_index([folder], tmp_path / "idx", fake_settings())
    assert sorted(Path(p.path).name for p in report.problems) == ["cut.docx", "empty.xlsx"]
    assert report.documents == 1


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=30)), min_size=1, max_size=5),
        min_size=1,
        max_size=60,
    ),
    caption=st.text(max_size=20).map(lambda s: " ".join(s.split())),
)
def test_table_parts_keep_every_row_once_under_their_header(rows: list[list[object]], caption: str) -> None:
    parts = table_parts(rows, caption, part_tokens=120)
    lines = [[line for line in part.text.splitlines() if line.startswith("| ")] for part in parts]
    if not parts:
        return
    headers = {part_lines[0] for part_lines in lines}
    assert len(headers) == 1  # the same header on every part
    body = [line for part_lines in lines for line in part_lines[1:]]
    assert [p.first_row for p in parts] == [0, *(p.last_row + 1 for p in parts[:-1])]
    assert len(body) == parts[-1].last_row + 1
    for part in parts:
        if part.last_row > part.first_row:  # more than one row: it kept within its budget
            assert count_tokens(part.text) <= 120 + 40


@settings(max_examples=60, deadline=None)
@given(
    before=st.text(alphabet="ab. \n", max_size=200),
    rows=st.integers(1, 40),
    after=st.text(alphabet="ab. \n", max_size=200),
    limit=st.integers(30, 200),
)
def test_chunks_tile_the_text_and_never_split_a_table_that_fits(before: str, rows: int, after: str, limit: int) -> None:
    table = "".join(part.text for part in table_parts(TEAMS[: rows + 1], part_tokens=PART_TOKENS))
    text = before + table + after
    block = (len(before), len(before) + len(table))
    chunks = chunk_document(text, limit, blocks=[block])
    assert "".join(c.text for c in chunks) == text
    fits = count_tokens(table) <= limit
    inside = [c for c in chunks if c.start < block[1] and c.end > block[0]]
    if fits:
        assert len(inside) == 1 and inside[0].start <= block[0] and inside[0].end >= block[1]
    for chunk in inside:  # a row is never cut: every chunk boundary inside the table is at a line's end
        for edge in (chunk.start, chunk.end):
            if block[0] < edge < block[1]:
                assert text[edge - 1] == "\n"


def test_an_html_data_table_reads_as_a_markdown_table_and_a_layout_table_as_text(tmp_path: Path) -> None:
    rows = "".join(f"<tr><td>Route {i}</td><td>${i * 10}</td></tr>" for i in range(120))
    page = (
        "<html><head><title>Fares</title></head><body><h1>Prices</h1><p>Our prices.</p>"
        f"<table><caption>2026 fares</caption><tr><th>Route</th><th>Fare</th></tr>{rows}</table>"
        "<table><tr><td>Laid out in one cell.</td></tr></table></body></html>"
    )
    (tmp_path / "fares.html").write_text(page, encoding="utf-8")
    (document,) = read_source(tmp_path / "fares.html")
    parts = [document.text[a:b] for a, b in document.structure.blocks]
    assert len(parts) >= 2 and parts[0].startswith("2026 fares\n| Route | Fare |\n|---|---|\n| Route 0 | $0 |")
    assert all("| Route | Fare |\n|---|---|\n" in part for part in parts)
    assert "2026 fares (continued, rows" in parts[1]
    assert document.text.rstrip().endswith("Laid out in one cell.")  # a one-column table lays the page out
    assert [row for part in parts for row in re.findall(r"^\| (Route \d+) \|", part, re.M)] == [
        f"Route {i}" for i in range(120)
    ]
    build_index([tmp_path / "fares.html"], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    try:
        (hit,) = index.keyword_search(["Route 99 |"], 3)
        (record,), _ = index.read([hit.chunk_id])
        assert (
            "| Route | Fare |" in record.text and locate(index, record, "Route 99 $990").label == "fares.html › Prices"
        )
    finally:
        index.close()


def test_pictures_keep_their_alt_text_and_the_text_in_them(tmp_path: Path) -> None:
    import docx
    from docx.shared import Inches
    from pptx import Presentation
    from pptx.util import Inches as PptxInches

    chart = tmp_path / "chart.png"
    text_image(["Revenue rose to 4.1M in the third quarter."]).save(chart)  # type: ignore[attr-defined]
    text_image([]).resize((40, 40)).save(tmp_path / "icon.png")  # type: ignore[attr-defined]  # too small to read
    document = docx.Document()
    document.add_paragraph("See the chart below.")
    document.add_picture(str(chart), width=Inches(5))
    document.inline_shapes[0]._inline.docPr.set("descr", "Bar chart of quarterly revenue")
    document.add_picture(str(tmp_path / "icon.png"))
    document.save(str(tmp_path / "report.docx"))
    (report,) = read_source(tmp_path / "report.docx")
    assert "[Image: Bar chart of quarterly revenue]" in report.text
    assert "[Text in image: Revenue rose to 4.1M in the third quarter.]" in report.text
    assert report.metadata["ocr_figures"] == 1 and float(report.metadata["ocr_confidence"]) > 0.8

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Revenue"
    slide.shapes.add_picture(str(chart), PptxInches(1), PptxInches(2), width=PptxInches(6))
    deck.save(str(tmp_path / "deck.pptx"))
    (slides,) = read_source(tmp_path / "deck.pptx")
    assert "[Text in image: Revenue rose to 4.1M in the third quarter.]" in slides.text
    assert slides.structure.places == [(0, "slide 1")]


def test_a_formula_without_a_cached_value_shows_the_formula(tmp_path: Path) -> None:
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Costs"
    sheet.append(["Item", "Cost"])
    sheet.append(["Laptops", 52000])
    sheet.append(["Total", "=SUM(B2:B2)"])  # written by a program: Excel never computed it
    workbook.save(str(tmp_path / "costs.xlsx"))
    (costs,) = read_source(tmp_path / "costs.xlsx")
    assert "| Laptops | 52000 |" in costs.text and "| Total | =SUM(B2:B2) |" in costs.text


def test_a_table_row_found_by_a_search_is_shown_with_its_header(office_index: Index) -> None:
    (hit,) = [h for h in office_index.keyword_search(["Lead 77"], 5) if h.chunk_id.startswith("docs/headcount")]
    assert "Team: Team 77; Engineers: 9; Lead: Lead 77" in hit.snippets
    (route,) = office_index.keyword_search(["Lisbon–Tokyo"], 3)
    assert route.snippets == ["Route: Lisbon–Tokyo; Max fare: $1,400"]
    semantic = office_index.semantic_search("Team 77 Lead 77", 20)
    rows = [s for h in semantic for s in h.snippets if s.startswith("Team: ")]
    assert rows and all(s.count("; ") == 2 for s in rows)  # every row shown as its three columns
    # prose and a table's own header line stay as they are
    (prose,) = office_index.keyword_search(["economy"], 3)
    assert prose.snippets == ["Employees fly economy on flights under six hours."]
    header = office_index.keyword_search(["Max fare"], 3)[0]
    assert "| Route | Max fare |" in header.snippets


@settings(max_examples=200 * FUZZ_SCALE, deadline=None)
@given(
    header=st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=4),
    values=st.lists(st.one_of(st.text(max_size=8), st.integers()), min_size=4, max_size=4),
)
def test_a_row_reads_back_as_its_header_and_values(header: list[str], values: list[object]) -> None:
    from arag.corpus.tables import cell_text, row_as_fields

    values = values[: len(header)]
    text = table_parts([header, values])[0].text if any(cell_text(v) for v in values) else ""
    lines = text.splitlines(keepends=True)
    if len(lines) < 3 or not any(cell_text(h) for h in header):
        return
    start = len(lines[0]) + len(lines[1])
    shown = row_as_fields(text, start, start + len(lines[2]))

    def unescaped(value: object) -> str:
        return cell_text(value).replace("\\|", "|").replace("\\\\", "\\")

    fields = [(unescaped(h), unescaped(v)) for h, v in zip(header, values, strict=True) if cell_text(v)]
    assert shown == "; ".join(f"{name}: {value}" if name else value for name, value in fields)


def test_a_row_is_embedded_with_its_header(office_index: Index) -> None:
    from arag.embedding.embedders import FakeEmbedder

    (hit,) = [h for h in office_index.keyword_search(["Lisbon–Tokyo"], 3)]
    (record,), _ = office_index.read([hit.chunk_id])
    sentences = office_index.sentences(record)
    row = sentences.index("| Lisbon–Tokyo | $1,400 |")
    fielded = FakeEmbedder().embed_query("Route: Lisbon–Tokyo; Max fare: $1,400")
    scores = office_index.store.sentence_scores(fielded, record.row)
    assert abs(float(scores[row]) - 1.0) < 1e-5  # the stored vector is the fielded text's


def test_a_report_tables_header_over_two_rows_is_one_header() -> None:
    from arag.corpus.tables import header_and_body, row_as_fields

    report = [
        ["", "", "Years Ended September 30,", ""],
        ["", "2019", "2018", "2017"],
        ["Fixed Price", "$ 1,452.4", "$ 1,146.2", "$ 1,036.9"],
        ["Total sales", "$1,496.5", "$1,202.9", "$1,107.7"],
    ]
    header, body = header_and_body(report)
    assert header == ["", "2019", "Years Ended September 30, 2018", "2017"] and body == report[2:]
    text = table_parts(report)[0].text
    row = text.index("| Total sales")
    assert row_as_fields(text, row, text.index("\n", row) + 1) == (
        "Total sales; 2019: $1,496.5; Years Ended September 30, 2018: $1,202.9; 2017: $1,107.7"
    )
    # a table whose rows are not all labelled keeps its first row as the header
    plain = [["", "a"], ["", "b"], ["", "c"]]
    assert header_and_body(plain) == (["", "a"], [["", "b"], ["", "c"]])
    assert header_and_body([["Team", "Lead"], ["Red", "Ana"]]) == (["Team", "Lead"], [["Red", "Ana"]])


def test_sync_follows_office_files_changed_renamed_and_deleted(tmp_path: Path) -> None:
    from openpyxl import load_workbook

    folder = write_office_folder(tmp_path / "docs")
    location = tmp_path / "idx"
    build_index([folder], location, fake_settings(), sync=True)
    workbook = load_workbook(folder / "headcount.xlsx")
    workbook["Budget"]["C4"] = 61000  # the laptops cost more now
    workbook.save(folder / "headcount.xlsx")
    (folder / "q3.pptx").rename(folder / "q3-final.pptx")
    (folder / "offsite.eml").unlink()
    report = build_index([folder], location, fake_settings(), sync=True)
    assert sorted(report.replaced) == ["docs/headcount.xlsx"] and report.added == ["docs/q3-final.pptx"]
    assert report.removed == 2  # the old name of the deck, and the e-mail
    index = Index.open(location, threads=1)
    try:
        assert labels_of(index, "Laptops", "Laptops 61000") == [
            "docs/headcount.xlsx, sheet Budget, cells B3:C4 › Budget"
        ]
        (hit,) = [h for h in index.keyword_search(["Laptops"], 3)]
        assert "Item: Laptops; Cost: 61000" in hit.snippets
        assert index.keyword_search(["Offsite moved"], 3) == []
        assert labels_of(index, "APAC overtook", "Notes: APAC overtook EMEA for the first time.") == [
            "docs/q3-final.pptx, slide 2 › By region"
        ]
    finally:
        index.close()


SITE_CHROME = (
    '<nav><a href="/">Home</a> | <a href="/contact">Contact</a></nav>'
    '<header role="banner"><a href="/">Halden Soil Lab</a> menu</header>'
    '<div role="navigation">Jobs · People</div>'
    "<aside>Latest news: the lab won a prize.</aside>"
    "<footer>© 2026 Halden Soil Lab · Privacy · Cookies</footer>"
)


def test_a_pages_menus_sidebars_and_footer_are_left_out_and_its_contents_own_header_kept(tmp_path: Path) -> None:
    page = (
        f"<html><head><title>About</title></head><body>{SITE_CHROME}<main><article>"
        "<header><h1>About the lab</h1><p>By Mirela Santos</p></header>"
        "<p>The lab was founded in 2011.</p><footer>Filed under: history</footer></article></main></body></html>"
    )
    (tmp_path / "about.html").write_text(page, encoding="utf-8")
    (document,) = read_source(tmp_path / "about.html")
    assert document.text == "About the lab\n\nBy Mirela Santos\n\nThe lab was founded in 2011.\n\nFiled under: history"
    assert [heading for *_, heading in document.structure.headings] == ["About the lab"]


def test_a_pages_header_stays_where_the_page_marks_no_content_of_its_own(tmp_path: Path) -> None:
    page = "<html><body><header><h1>Leave policy</h1></header><p>Full-time staff get 27 days.</p></body></html>"
    (tmp_path / "leave.html").write_text(page, encoding="utf-8")
    (document,) = read_source(tmp_path / "leave.html")
    assert document.text == "Leave policy\n\nFull-time staff get 27 days."


def test_a_page_that_is_all_menu_is_read_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "sitemap.html").write_text(f"<html><body>{SITE_CHROME}</body></html>", encoding="utf-8")
    (document,) = read_source(tmp_path / "sitemap.html")
    assert "Contact" in document.text and "Privacy" in document.text and "Jobs" in document.text


@settings(max_examples=60 * FUZZ_SCALE, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["nav", "aside", "footer", "header", "main", "article", "div", "p", "section"]),
            st.sampled_from(["", ' role="navigation"', ' role="main"', ' role="contentinfo"']),
            st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=20),
        ),
        max_size=8,
    )
)
def test_any_page_keeps_text_and_never_more_than_it_wrote(elements: list[tuple[str, str, str]]) -> None:
    import html as html_module

    from arag.corpus.markup import html_to_text

    body = "".join(f"<{tag}{role}>{html_module.escape(text)}</{tag}>" for tag, role, text in elements)
    kept = html_to_text(f"<html><body>{body}</body></html>").text
    written = " ".join(text for _tag, _role, text in elements)
    assert set(kept.split()) <= set(written.split())
    assert bool(kept.strip()) == bool(written.strip())  # a page with any text keeps some
