"""Document metadata, scoped search (filters) and citations resolved to the page and heading."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arag.citations import cited_ids, claims_by_citation, ids_in, locate, resolve
from arag.corpus.build import build_index
from arag.corpus.readers import markdown_headings, read_source
from arag.filters import Filter, FilterError, parse_filter
from arag.index import Index
from arag.store import FORMAT_VERSION
from arag.tools import Toolkit
from conftest import FIXTURES, fake_settings
from support.documents import GUIDELINES_MD, PAGE_HTML, write_pdf

PDF_PAGES = [
    ["Screening overview.", "Colonoscopy is the main screening test."],
    ["Staging uses CT scans of the chest.", "Stage II means the tumor grew through the wall."],
    ["Surveillance after surgery uses colonoscopy every year."],
]


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of documents of every kind, with known metadata, pages and headings."""
    folder = tmp_path_factory.mktemp("library") / "docs"
    (folder / "guides").mkdir(parents=True)
    (folder / "guides" / "treatment.md").write_text(GUIDELINES_MD, encoding="utf-8")
    (folder / "kidney.html").write_text(PAGE_HTML, encoding="utf-8")
    write_pdf(folder / "colon.pdf", PDF_PAGES, {"Title": "Colon cancer", "Author": "NCCN"})
    records = [
        {"id": "n1", "text": "Note one about screening.", "year": 2019, "team": "a"},
        {"id": "n2", "text": "Note two about radiation dose.", "year": 2024, "team": ["a", "b"]},
    ]
    (folder / "notes.jsonl").write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def library_index(library: Path, tmp_path_factory: pytest.TempPathFactory) -> Index:
    path = tmp_path_factory.mktemp("library-index") / "idx"
    # small chunks, so one document spans several chunks (and the PDF's pages and the headings several chunks)
    build_index([library], path, fake_settings(chunker={"chunk_tokens": 20}))
    return Index.open(path, threads=1)


# ------------------------------------------------------------------ metadata
def test_every_document_records_its_path_type_title_time_and_what_its_file_says(library_index: Index) -> None:
    docs = {d.doc_id: d.metadata or {} for d in library_index.documents()}
    guide = docs["docs/guides/treatment.md"]
    assert guide["path"] == "docs/guides/treatment.md" and guide["type"] == "md"
    assert guide["title"] == "Treatment guidelines" and guide["year"] == 2024
    assert guide["tags"] == ["oncology", "radiation"] and guide["review.status"] == "final"
    assert guide["mtime"].startswith("20") and "T" in guide["mtime"]
    page = docs["docs/kidney.html"]
    assert page["author"] == "Dr. Lee" and page["keywords"] == "kidney, renal" and page["title"] == "Kidney page"
    pdf = docs["docs/colon.pdf"]
    assert pdf["type"] == "pdf" and pdf["title"] == "Colon cancer" and pdf["author"] == "NCCN"
    assert docs["n2"]["team"] == ["a", "b"] and docs["n2"]["year"] == 2024 and docs["n1"]["path"] == "docs/notes.jsonl"
    assert library_index.manifest.format_version == FORMAT_VERSION
    assert library_index.metadata_fields()[:4] == ["path", "type", "title", "mtime"]


def test_front_matter_is_metadata_not_text(library: Path) -> None:
    (doc,) = read_source(library / "guides" / "treatment.md", "guides/treatment.md")
    assert not doc.text.startswith("---") and doc.text.startswith("# Guidelines")
    assert doc.structure is not None and doc.structure.offset == GUIDELINES_MD.index("# Guidelines")


def test_markdown_headings_skip_code_and_read_setext() -> None:
    text = "Title\n=====\n\n```\n# not a heading\n```\n\nSub\n---\n\n## Real one ##\n"
    assert [(level, title) for _offset, level, title in markdown_headings(text)] == [
        (1, "Title"),
        (2, "Sub"),
        (2, "Real one"),
    ]


# ------------------------------------------------------------------ filters
@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("path=docs/guides/*", {"docs/guides/treatment.md"}),
        ("type=pdf", {"docs/colon.pdf"}),
        ("year>=2020", {"docs/guides/treatment.md", "n2"}),
        ("year<2020", {"n1"}),
        ("team=b", {"n2"}),
        ("team!=b", {"n1"}),
        ('title~"kidney"', {"docs/kidney.html"}),
        ("tags=radiation, year=2024", {"docs/guides/treatment.md"}),
        ("type=md and review.status=final", {"docs/guides/treatment.md"}),
        ("author=nobody", set()),
        ("no_such_field!=x", set()),
    ],
)
def test_a_filter_lets_through_exactly_the_documents_it_describes(
    library_index: Index, where: str, expected: set[str]
) -> None:
    scope = library_index.scope(parse_filter(where))
    assert scope is not None and set(scope.doc_ids) == expected


def test_searches_and_reads_stay_within_the_filter(library_index: Index) -> None:
    pdf_only = parse_filter("type=pdf")
    hits = library_index.keyword_search(["colonoscopy", "radiation"], 10, pdf_only)
    assert hits and all(h.chunk_id.startswith("docs/colon.pdf#") for h in hits)
    everywhere = library_index.keyword_search(["colonoscopy", "radiation"], 10)
    assert {h.chunk_id.split("#")[0] for h in everywhere} > {"docs/colon.pdf"}
    semantic = library_index.semantic_search("radiation dose", 10, where=pdf_only)
    assert semantic and all(h.chunk_id.startswith("docs/colon.pdf#") for h in semantic)
    found, missing = library_index.read(["docs/colon.pdf#0", "n1#0"], pdf_only)
    assert [r.chunk_id for r in found] == ["docs/colon.pdf#0"] and missing == ["n1#0"]


def test_a_filter_that_matches_nothing_gives_an_empty_result_with_a_note(library_index: Index) -> None:
    toolkit = Toolkit(library_index)
    result = toolkit.call("keyword_search", {"keywords": ["cancer"], "where": "type=docx"})
    assert result.ok and "no document matches the filter type=docx" in result.observation
    assert "fields in this index: path, type, title, mtime" in result.observation
    assert "no matching chunks" in result.observation and result.hits == []


def test_a_malformed_filter_is_one_clear_error_for_the_model_and_for_the_user(library_index: Index) -> None:
    result = Toolkit(library_index).call("semantic_search", {"query": "dose", "where": "year >> 2020"})
    assert not result.ok and result.observation.startswith("Error: cannot read the filter")
    with pytest.raises(FilterError, match="expected a value"):
        parse_filter("year>=")
    with pytest.raises(FilterError, match="closing"):
        parse_filter('title="open')


def test_the_users_scope_bounds_every_call_and_the_models_where_narrows_it(library_index: Index) -> None:
    toolkit = Toolkit(library_index, scope=parse_filter("year>=2020"))
    result = toolkit.call("keyword_search", {"keywords": ["radiation", "screening"]})
    assert result.hits and {h.split("#")[0] for h in result.hits} <= {"docs/guides/treatment.md", "n2"}
    narrowed = toolkit.call("keyword_search", {"keywords": ["radiation", "screening"], "where": "type=jsonl"})
    assert narrowed.hits == ["n2#0"]
    read = toolkit.call("chunk_read", {"chunk_ids": ["n1#0"]})
    assert "outside the filter" in read.observation and "n1#0" not in toolkit.tracker.read_ids


def test_the_schemas_offer_the_filter_with_this_indexs_fields(library_index: Index) -> None:
    (schema, *_rest) = Toolkit(library_index).schemas()
    description = schema["function"]["parameters"]["properties"]["where"]["description"]
    assert "Fields: path, type, title, mtime" in description and "review.status" in description
    from arag.tools import ResultView

    hidden = Toolkit(library_index, view=ResultView(expose_where=False)).schemas()
    assert all("where" not in s["function"]["parameters"]["properties"] for s in hidden)


_FIELDS = st.sampled_from(["path", "type", "year", "team", "title"])
_VALUES = st.one_of(
    st.integers(-5, 3000).map(str),
    st.sampled_from(["docs/*", "md", "pdf", "a", "b", "2024", "x y", 'q"t', "and", "*"]),
    st.text(alphabet="abc*?, ;=<>", min_size=1, max_size=6),
)
_OPS = st.sampled_from(["=", "!=", ">=", "<=", ">", "<", "~"])


@given(st.lists(st.tuples(_FIELDS, _OPS, _VALUES), min_size=1, max_size=4), st.sampled_from([",", " and ", ";"]))
def test_a_filter_printed_back_parses_to_the_same_filter(clauses: list[tuple[str, str, str]], joiner: str) -> None:
    from arag.filters import Clause

    original = Filter(tuple(Clause(f, op, v.strip() or "v") for f, op, v in clauses))
    assert parse_filter(joiner.join(str(c) for c in original.clauses)) == original


@given(st.text(max_size=60))
def test_any_text_is_a_filter_or_a_filter_error(text: str) -> None:
    try:
        parsed = parse_filter(text)
    except FilterError as exc:
        assert "filter" in str(exc)
    else:
        assert parsed is None or parsed.clauses


# ------------------------------------------------------------------ citations
def test_a_pdf_citation_resolves_to_its_page_and_sentence(library_index: Index) -> None:
    hits = library_index.keyword_search(["every year"], 1)
    (record,), _ = library_index.read([hits[0].chunk_id])
    located = locate(library_index, record, "Surveillance after surgery uses colonoscopy every year.")
    assert located.pages == [3] and located.label == "docs/colon.pdf, page 3"
    assert located.sentence == "Surveillance after surgery uses colonoscopy every year."
    staging = library_index.keyword_search(["CT scans"], 1)
    (record,), _ = library_index.read([staging[0].chunk_id])
    assert locate(library_index, record, "Staging uses CT scans of the chest.").pages == [2]


def test_a_markdown_citation_resolves_to_its_heading_path(library_index: Index) -> None:
    hits = library_index.keyword_search(["54 Gy"], 1)
    (record,), _ = library_index.read([hits[0].chunk_id])
    located = locate(library_index, record, "The usual dose is 54 Gy over six weeks.")
    assert located.headings == ["Guidelines", "Anal cancer", "Radiation"]
    assert located.label == "docs/guides/treatment.md › Guidelines › Anal cancer › Radiation"
    assert located.sentence == "The usual dose is 54 Gy over six weeks."
    start, end = located.sentence_start, located.sentence_end
    assert start is not None and end is not None and record.text[start:end].strip() == located.sentence
    source = GUIDELINES_MD[located.start : located.end]  # offsets into the file, front matter included
    assert source == record.text


def test_an_html_citation_resolves_to_its_heading(library_index: Index) -> None:
    hits = library_index.keyword_search(["adrenal"], 1)
    (record,), _ = library_index.read([hits[0].chunk_id])
    assert locate(library_index, record, "It can spread to the adrenal glands.").headings == ["Kidney cancer", "Spread"]


def test_every_citation_of_an_answer_gets_the_claim_before_it() -> None:
    answer = "Colonoscopy every year [chunk a#1]; the dose is 54 Gy [chunk b#0, c#2]."
    assert claims_by_citation(answer) == {
        "a#1": "Colonoscopy every year",
        "b#0": "the dose is 54 Gy",
        "c#2": "the dose is 54 Gy",
    }


def test_cited_ids_are_read_from_every_way_a_model_writes_a_citation() -> None:
    answer = "A [chunk a#1]; B [chunks: b#0, c#2] and [a#1] [Chunk:d#3;e#4] [ ] [chunk ]"
    assert cited_ids(answer) == ["a#1", "b#0", "c#2", "d#3", "e#4"]
    assert ids_in("chunks: b#0, c#2") == ["b#0", "c#2"] and ids_in(" , ;") == []


@given(st.text(max_size=120))
def test_cited_ids_are_stripped_bracket_free_and_once_each(answer: str) -> None:
    ids = cited_ids(answer)
    assert len(ids) == len(set(ids))
    assert all(i and i == i.strip() and "[" not in i and "]" not in i and "," not in i for i in ids)
    assert set(ids) == set(claims_by_citation(answer))


def test_resolved_citations_keep_what_they_said_and_add_the_source(library_index: Index) -> None:
    hit = library_index.keyword_search(["54 Gy"], 1)[0]
    cited = [{"chunk_id": hit.chunk_id, "verified": True}, {"chunk_id": "made up", "verified": False}]
    resolved = resolve(library_index, f"It is 54 Gy over six weeks [chunk {hit.chunk_id}].", cited)
    assert resolved[0]["verified"] and resolved[0]["label"].endswith("› Radiation")
    assert resolved[1] == {"chunk_id": "made up", "verified": False}


# ------------------------------------------------------------------ older indexes
def test_an_index_of_the_previous_format_opens_and_its_documents_match_no_filter(tmp_path: Path) -> None:
    """A format-3 index (written before metadata and locations): rewritten here by dropping the columns, as the
    previous version wrote it."""
    import sqlite3

    build_index([FIXTURES / "guide.md"], tmp_path / "idx", fake_settings())
    manifest_path = tmp_path / "idx" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    generation = next(p for p in (tmp_path / "idx").iterdir() if p.name.startswith("gen-"))
    db = generation / "chunks.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("ALTER TABLE docs DROP COLUMN metadata")
        conn.execute("ALTER TABLE chunks DROP COLUMN location")
    manifest["format_version"] = 3
    for name, digest in manifest["files"].items():  # the checksums of the rewritten file
        if name.endswith("chunks.sqlite"):
            from arag.files import sha256_file

            digest.update(size=db.stat().st_size, sha256=sha256_file(db))
    manifest_path.write_text(json.dumps(manifest))
    index = Index.open(tmp_path / "idx", threads=1)
    assert index.keyword_search(["Portland"], 1)[0].chunk_id == "guide.md#0"
    assert index.without_metadata() == 1 and index.keyword_search(["Portland"], 1, parse_filter("type=md")) == []
    result = Toolkit(index).call("keyword_search", {"keywords": ["Portland"], "where": "type=md"})
    assert "indexed before a-rag recorded metadata" in result.observation and "--rebuild" in result.observation
    (record,), _ = index.read(["guide.md#0"])
    assert locate(index, record).label == "guide.md" and record.location is None  # the document, no page
    from arag.tools.toolkit import TOOL_NAMES

    outlined = Toolkit(index, enabled=TOOL_NAMES)  # no recorded headings: its chunks or paragraphs, and why
    outline = outlined.call("document_outline", {"doc_id": "guide.md"}).observation
    assert outline.startswith("document_outline guide.md: ") and "re-index with --rebuild" in outline
    assert "Portland" in outlined.call("section_read", {"section_id": "guide.md#s1"}).observation
    # adding a document to it writes format 4; the old document keeps no metadata until it is re-indexed
    shutil.copy(FIXTURES / "page.html", tmp_path / "page.html")
    build_index([tmp_path / "page.html"], tmp_path / "idx", fake_settings())
    upgraded = Index.open(tmp_path / "idx", threads=1)
    assert upgraded.manifest.format_version == FORMAT_VERSION and upgraded.without_metadata() == 1
