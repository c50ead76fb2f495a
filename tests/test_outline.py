"""The levels above the chunk: a document's outline and the text under one of its nodes (arag.corpus.outline), the
tools document_outline and section_read, their surfaces (CLI, HTTP, the agent through native tool calls and JSON
actions).

Exactness: the outline of generated Markdown is the heading tree that was written, and a section read in parts is
the text written under its heading (its subsections included); HTML headings, PDF pages, Word headings and slides
likewise."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arag.agent import Agent
from arag.corpus.build import build_index
from arag.corpus.outline import MAX_PARAGRAPH_SECTIONS, section_number
from arag.filters import parse_filter
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.settings import AgentSettings, LLMSettings
from arag.tools.toolkit import TOOL_NAMES, Toolkit
from conftest import fake_settings
from support.office_files import write_docx, write_pptx, write_xlsx
from support.scripted_server import ScriptedServer, completion, tool_call

_WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "river", "stone", "paper", "light", "north", "seven"])
_SENTENCE = st.lists(_WORDS, min_size=2, max_size=8).map(lambda words: " ".join(words).capitalize() + ".")
_BODY = st.lists(_SENTENCE, min_size=0, max_size=4).map(" ".join)
_HEADINGS = st.lists(st.tuples(st.integers(1, 4), _BODY), min_size=1, max_size=9)


def _document(
    kind: str, preamble: str, headings: list[tuple[int, str]]
) -> tuple[str, list[tuple[tuple[str, ...], str]]]:
    """A Markdown or HTML text, and for each heading its path and the text under it as written (subsections
    included; HTML's text without its tags)."""

    def block(level: int, title: str, body: str) -> str:
        if kind == "html":
            return f"<h{level}>{title}</h{level}><p>{body}</p>"
        return f"{'#' * level} {title}\n\n{body}"

    def written(level: int, title: str, body: str) -> str:
        return f"{title} {body}" if kind == "html" else block(level, title, body)

    titled = [(level, f"Part {i} {['one', 'two', 'three'][i % 3]}", body) for i, (level, body) in enumerate(headings)]
    expected, open_path = [], []
    for i, (level, title, _body) in enumerate(titled):
        while open_path and open_path[-1][0] >= level:
            open_path.pop()
        open_path.append((level, title))
        end = next((j for j in range(i + 1, len(titled)) if titled[j][0] <= level), len(titled))
        expected.append((tuple(t for _lv, t in open_path), " ".join(written(*item) for item in titled[i:end])))
    if kind == "html":
        lead = f"<p>{preamble}</p>" if preamble else ""
        return f"<html><body>{lead}{''.join(block(*item) for item in titled)}</body></html>", expected
    return "\n\n".join([preamble] * bool(preamble) + [block(*item) for item in titled]) + "\n", expected


def _words(text: str) -> str:
    """The text without the "[chunk ID]" lines a section read puts before each chunk's piece, spaces aside."""
    return " ".join(re.sub(r"^\[chunk [^\]]+\]$", "", text, flags=re.M).split())


def _whole_section(index: Index, section_id: str, max_tokens: int) -> tuple[str, list[str], list[int]]:
    first = index.read_section(section_id, 1, max_tokens)
    assert first is not None
    parts = [first] + [index.read_section(section_id, n, max_tokens) for n in range(2, first.parts + 1)]
    assert all(p is not None and p.parts == first.parts for p in parts)
    chunk_ids = [c for p in parts if p for c in p.chunk_ids]
    return " ".join(_words(p.text) for p in parts if p), list(dict.fromkeys(chunk_ids)), [p.tokens for p in parts if p]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(["md", "html"]),
    preamble=_BODY,
    headings=_HEADINGS,
    chunk_tokens=st.integers(16, 60),
    max_tokens=st.integers(24, 80),
)
def test_the_outline_of_generated_markdown_and_html_is_the_tree_written_and_each_section_reads_as_written(
    kind: str, preamble: str, headings: list[tuple[int, str]], chunk_tokens: int, max_tokens: int
) -> None:
    text, expected = _document(kind, preamble, headings)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "docs").mkdir()
        (Path(folder) / "docs" / f"guide.{kind}").write_text(text, encoding="utf-8")
        settings_ = fake_settings(chunker={"chunk_tokens": chunk_tokens})
        build_index([Path(folder) / "docs"], Path(folder) / "idx", settings_)
        index = Index.open_with(Path(folder) / "idx", settings_)
        doc_id = index.find_document(f"guide.{kind}")
        outline = index.outline(doc_id or "")
        assert outline is not None and outline.kind == "headings"
        sections = [s for s in outline.sections if s.number > 0]
        assert [s.path for s in sections] == [path for path, _under in expected]
        assert [s.depth for s in sections] == [len(path) for path, _under in expected]
        assert [s.section_id for s in sections] == [f"{doc_id}#s{n}" for n in range(1, len(expected) + 1)]
        if outline.sections[0].number == 0:  # the text before the first heading: there only when there is some
            assert preamble and _whole_section(index, f"{doc_id}#s0", max_tokens)[0] == _words(preamble)
        else:
            assert not preamble.strip()
        for section, (_path, under) in zip(sections, expected, strict=True):
            shown, chunk_ids, tokens = _whole_section(index, section.section_id, max_tokens)
            assert shown == _words(under)
            assert chunk_ids == list(section.chunk_ids)
            assert all(t <= max_tokens for t in tokens)  # every sentence written is shorter than a part
        index.close()


@settings(max_examples=8, deadline=None)
@given(pages=st.lists(st.lists(_SENTENCE, min_size=1, max_size=3).map(" ".join), min_size=2, max_size=5))
def test_the_outline_of_a_generated_pdf_is_its_pages_each_read_as_written(pages: list[str]) -> None:
    from fpdf import FPDF

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "docs").mkdir()
        pdf = FPDF()
        pdf.set_font("helvetica", size=12)
        for text in pages:
            pdf.add_page()
            pdf.multi_cell(0, 10, text)
        pdf.output(str(Path(folder) / "docs" / "report.pdf"))
        settings_ = fake_settings(chunker={"chunk_tokens": 16})
        build_index([Path(folder) / "docs"], Path(folder) / "idx", settings_)
        index = Index.open_with(Path(folder) / "idx", settings_)
        outline = index.outline(index.find_document("report.pdf") or "")
        assert outline is not None and outline.kind == "pages"
        assert [s.title for s in outline.sections] == [f"page {n}" for n in range(1, len(pages) + 1)]
        for section, text in zip(outline.sections, pages, strict=True):
            assert _whole_section(index, section.section_id, 1000)[0] == _words(text)
        index.close()


def _index(folder: Path, files: dict[str, str], chunk_tokens: int = 1000) -> Index:
    (folder / "docs").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / "docs" / name).write_text(text, encoding="utf-8")
    settings_ = fake_settings(chunker={"chunk_tokens": chunk_tokens})
    build_index([folder / "docs"], folder / "idx", settings_)
    return Index.open_with(folder / "idx", settings_)


HTML = (
    "<html><head><title>Handbook</title></head><body><p>Welcome to the handbook.</p>"
    "<h1>Travel</h1><p>Book through the portal.</p><h2>Flights</h2><p>Economy under six hours.</p>"
    "<h3>Upgrades</h3><p>Upgrades need approval.</p><h2>Hotels</h2><p>Up to 180 a night.</p>"
    "<h1>Leave</h1><p>Twenty-seven days a year.</p></body></html>"
)
GUIDE = "# Install\n\nRun the installer. It takes a minute.\n\n## On Linux\n\nUse apt.\n\n# Usage\n\nCall arag ask.\n"


def test_html_word_and_slide_headings_pdf_pages_and_sheets_are_outlines(tmp_path: Path) -> None:
    from fpdf import FPDF

    (tmp_path / "docs").mkdir()
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for page in (1, 2, 3):
        pdf.add_page()
        pdf.multi_cell(0, 10, f"Page {page} says the depot count is {page * 11}.")
    pdf.output(str(tmp_path / "docs" / "report.pdf"))
    write_docx(tmp_path / "docs" / "policy.docx")
    write_pptx(tmp_path / "docs" / "q3.pptx")
    write_xlsx(tmp_path / "docs" / "headcount.xlsx")
    index = _index(tmp_path, {"handbook.html": HTML}, chunk_tokens=16)

    html = index.outline(index.find_document("handbook.html") or "")
    assert html is not None and html.kind == "headings"
    assert [(s.number, s.path) for s in html.sections] == [
        (0, ("(before the first heading)",)),
        (1, ("Travel",)),
        (2, ("Travel", "Flights")),
        (3, ("Travel", "Flights", "Upgrades")),
        (4, ("Travel", "Hotels")),
        (5, ("Leave",)),
    ]
    flights, _ids, _tokens = _whole_section(index, f"{html.doc_id}#s2", 1000)
    assert flights == "Flights Economy under six hours. Upgrades Upgrades need approval."

    pdf_outline = index.outline(index.find_document("report.pdf") or "")
    assert pdf_outline is not None and pdf_outline.kind == "pages"
    assert [s.title for s in pdf_outline.sections] == ["page 1", "page 2", "page 3"]
    assert _whole_section(index, f"{pdf_outline.doc_id}#s2", 1000)[0] == "Page 2 says the depot count is 22."

    word = index.outline(index.find_document("policy.docx") or "")
    assert word is not None and word.kind == "headings"
    assert ("Hotels", "Europe") in [s.path for s in word.sections]
    europe = next(s for s in word.sections if s.path == ("Hotels", "Europe"))
    assert "Hotels in Europe cost up to $180 a night." in _whole_section(index, europe.section_id, 1000)[0]

    slides = index.outline(index.find_document("q3.pptx") or "")  # a slide's title is its heading
    assert slides is not None and [s.path for s in slides.sections] == [("Q3 results",), ("By region",)]
    sheets = index.outline(index.find_document("headcount.xlsx") or "")  # a sheet's name is its heading
    assert sheets is not None and [s.path for s in sheets.sections] == [("Headcount",), ("Budget",)]
    assert "Laptops" in _whole_section(index, f"{sheets.doc_id}#s2", 1000)[0]


def test_plain_text_is_outlined_by_paragraphs_and_one_paragraph_or_a_long_list_by_chunks(tmp_path: Path) -> None:
    lines = "\n".join(f"Line {i} of the log." for i in range(MAX_PARAGRAPH_SECTIONS + 50))
    index = _index(
        tmp_path,
        {"notes.txt": "First part. Still first.\nSecond part.\n\n  Third part.\n", "one.txt": "Only one. Two.",
         "log.txt": lines},
        chunk_tokens=400,
    )  # fmt: skip
    notes = index.outline(index.find_document("notes.txt") or "")
    assert notes is not None and notes.kind == "paragraphs"
    assert [s.title for s in notes.sections] == ["First part. Still first.", "Second part.", "Third part."]
    assert _whole_section(index, f"{notes.doc_id}#s3", 1000)[0] == "Third part."
    one = index.outline(index.find_document("one.txt") or "")
    assert one is not None and one.kind == "chunks" and [s.title for s in one.sections] == ["Only one. Two."]
    log = index.outline(index.find_document("log.txt") or "")
    assert log is not None and log.kind == "chunks" and len(log.sections) == log.chunks > 1


def test_a_pre_chunked_corpus_without_recorded_structure_is_outlined_by_chunks(chunks_index: Index) -> None:
    doc_id = chunks_index.documents()[0].doc_id
    outline = chunks_index.outline(doc_id)
    assert outline is not None and not outline.located and outline.kind in ("chunks", "paragraphs")
    shown = Toolkit(chunks_index, enabled=TOOL_NAMES).call("document_outline", {"doc_id": doc_id}).observation
    assert shown.startswith(f"document_outline {doc_id}: ") and "--rebuild" not in shown  # format 4: nothing to redo


# ---------------------------------------------------------------------------------------------------- the tools
def test_section_read_marks_whole_chunks_read_refuses_repeats_and_says_where_the_text_goes_on(tmp_path: Path) -> None:
    body = " ".join(f"Install step {i} copies the files to the disk." for i in range(150))
    index = _index(tmp_path, {"guide.md": f"# Install\n\n{body}\n\n# Usage\n\nCall arag ask.\n"}, chunk_tokens=200)
    toolkit = Toolkit(index, enabled=TOOL_NAMES)
    outline = toolkit.call("document_outline", {"doc_id": "guide"})
    assert outline.ok and outline.observation.splitlines()[1].startswith("docs/guide.md#s1 Install (~")
    first = toolkit.call("section_read", {"section_id": "docs/guide.md#s1"})
    part = index.read_section("docs/guide.md#s1", 1)
    assert part is not None and part.parts >= 2
    assert first.ok and first.observation.startswith(f'section_read docs/guide.md#s1 "Install" (part 1 of {part.parts}')
    assert first.observation.endswith('(continues: section_read("docs/guide.md#s1", part=2))')
    assert first.chunk_ids == list(part.chunk_ids) and first.read == list(part.whole) and part.whole
    again = toolkit.call("chunk_read", {"chunk_ids": [part.whole[0]]})
    assert "already read earlier in this session" in again.observation
    repeated = toolkit.call("section_read", {"section_id": "docs/guide.md#s1", "part": 1})
    assert "already read earlier in this session" in repeated.observation and not repeated.read
    last = toolkit.call("section_read", {"section_id": "docs/guide.md#s1", "part": part.parts})
    assert last.observation.endswith("(next section: docs/guide.md#s2 Usage)")
    beyond = toolkit.call("section_read", {"section_id": "docs/guide.md#s1", "part": part.parts + 1})
    assert not beyond.ok and f"has {part.parts} parts" in beyond.observation
    for arguments, reason in [
        ({"section_id": "guide"}, "is not a section id"),
        ({"section_id": "docs/guide.md#s9"}, "no section"),
        ({"section_id": "nowhere.md#s1"}, "no document 'nowhere.md'"),
        ({"section_id": "docs/guide.md#s1", "part": 0}, "part must be at least 1"),
    ]:
        refused = toolkit.call("section_read", arguments)
        assert not refused.ok and reason in refused.observation, refused.observation
    end = toolkit.call("section_read", {"section_id": "docs/guide.md#s2"})
    assert end.observation.endswith("(the end of the document)")
    assert not toolkit.call("document_outline", {"doc_id": "guide", "depth": 0}).ok
    # a chunk id names its document, and the session's scope holds
    assert toolkit.call("document_outline", {"doc_id": "docs/guide.md#0"}).ok
    scoped = Toolkit(index, enabled=TOOL_NAMES, scope=parse_filter("path~elsewhere/*"))
    outside = scoped.call("section_read", {"section_id": "docs/guide.md#s1"})
    assert not outside.ok and "outside the filter" in outside.observation


@settings(max_examples=80, deadline=None)
@given(
    reference=st.one_of(st.text(max_size=40), st.sampled_from(["Lothair II", "Lothair II#0", "Lothair II#s1", "#s"])),
    part=st.integers(-5, 10**9),
    depth=st.integers(-2, 10),
)
def test_any_outline_or_section_arguments_are_answered_or_refused(
    hippo_index: Index, reference: str, part: int, depth: int
) -> None:
    toolkit = Toolkit(hippo_index, enabled=TOOL_NAMES)
    outline = toolkit.call("document_outline", {"doc_id": reference, "depth": depth})
    assert outline.observation.startswith(("Error: ", "document_outline ")), outline.observation
    section = toolkit.call("section_read", {"section_id": reference, "part": part})
    assert section.observation.startswith(("Error: ", "section_read ")), section.observation
    assert section_number(reference) is None or section_number(reference) == (
        reference.rpartition("#s")[0],
        int(reference.rpartition("#s")[2]),
    )


def test_the_agent_reads_by_outline_through_native_tool_calls_and_the_json_grammar_offers_both(
    tmp_path: Path, server: ScriptedServer
) -> None:
    from arag.harness.contract import NextAction
    from arag.harness.grammar import action_schema

    index = _index(tmp_path, {"guide.md": GUIDE, "other.md": "# Other\n\nNothing here.\n"})
    server.replies = [
        completion(tool_calls=[tool_call("list_documents", {})]),
        completion(tool_calls=[tool_call("document_outline", {"doc_id": "guide.md"})]),
        completion(tool_calls=[tool_call("section_read", {"section_id": "docs/guide.md#s2"})]),
        completion("Use apt [chunk docs/guide.md#0]."),
    ]
    model = ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="gpt-4o-mini", max_retries=0))
    agent = Agent(index, model, AgentSettings(profile="extended"))
    result = agent.run("How do I install on Linux?")
    assert [s.tool for s in result.trajectory] == ["list_documents", "document_outline", "section_read"]
    assert "docs/guide.md#s2 On Linux" in result.trajectory[1].observation
    assert result.trajectory[2].observation.startswith('section_read docs/guide.md#s2 "Install › On Linux"')
    assert "Use apt." in result.trajectory[2].observation
    assert result.citations == [{"chunk_id": "docs/guide.md#0", "verified": True}]
    offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert offered == set(TOOL_NAMES)
    assert "document_outline" in server.requests[0]["messages"][0]["content"]
    toolkit = Toolkit(index, enabled=["semantic_search", "document_outline", "section_read"])
    schema = action_schema(
        toolkit, NextAction(("document_outline", "section_read"), answer=True, final=False, constrained=True)
    )
    variants = schema["json_schema"]["schema"]["anyOf"]
    named = {tuple(v["properties"].get("action", {}).get("enum", [])): v for v in variants}
    assert set(named[("section_read",)]["properties"]["arguments"]["properties"]) == {"section_id", "part"}
    assert named[("document_outline",)]["properties"]["arguments"]["required"] == ["doc_id"]


def test_the_agent_calls_each_new_tool_through_json_actions(tmp_path: Path, server: ScriptedServer) -> None:
    index = _index(tmp_path, {"guide.md": GUIDE})
    calls = [
        ("grep", {"pattern": "arag (ask|serve)"}),
        ("search", {"query": "how to use arag"}),
        ("list_documents", {}),
        ("document_outline", {"doc_id": "guide.md"}),
        ("section_read", {"section_id": "docs/guide.md#s3"}),
    ]
    server.replies = [completion(json.dumps({"action": name, "arguments": arguments})) for name, arguments in calls]
    server.replies.append(completion('{"action": "final_answer", "answer": "Call arag ask [chunk docs/guide.md#0]."}'))
    model = ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="gpt-4o-mini", max_retries=0))
    agent = Agent(index, model, AgentSettings(profile="extended"), json_actions=True)
    result = agent.run("How do I use it?")
    assert [s.tool for s in result.trajectory] == [name for name, _ in calls]
    observations = [s.observation for s in result.trajectory]
    assert observations[0].startswith('grep "arag (ask|serve)" (1 matches in 1 chunks)')
    assert observations[1].startswith('search "how to use arag" (by meaning; exact words ["use", "arag"])')
    assert observations[2].startswith("list_documents: 1 document")
    assert "docs/guide.md#s3 Usage" in observations[3] and "Call arag ask." in observations[4]
    assert result.answer.startswith("Call arag ask")


# ---------------------------------------------------------------------------------------------------- surfaces
def test_the_http_api_lists_outlines_and_reads_sections(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from arag.serve.http import create_app
    from arag.settings import Settings

    index = _index(tmp_path, {"guide.md": GUIDE, "other.md": "# Other\n\nNothing here.\n"})
    client = TestClient(create_app(index, Settings()))
    listed = client.get("/api/documents", params={"where": "path=docs/guide*"})
    assert listed.status_code == 200 and listed.json()["total"] == 1
    assert listed.json()["documents"][0]["doc_id"] == "docs/guide.md"
    outline = client.get("/api/documents/outline", params={"doc_id": "guide.md"})
    assert outline.status_code == 200, outline.text
    assert [s["path"] for s in outline.json()["sections"]] == [["Install"], ["Install", "On Linux"], ["Usage"]]
    section = client.get("/api/documents/section", params={"section_id": "docs/guide.md#s2"})
    assert section.status_code == 200 and "Use apt." in section.json()["text"]
    assert section.json()["next_section"] == {"section_id": "docs/guide.md#s3", "title": "Usage"}
    assert client.get("/api/documents/outline", params={"doc_id": "missing"}).status_code == 404
    assert client.get("/api/documents/section", params={"section_id": "docs/guide.md#s2", "part": 2}).status_code == 404
    assert client.get("/api/documents/section", params={"section_id": "x", "part": 0}).status_code == 422
    assert client.get("/api/documents", params={"where": "((("}).status_code == 400
    tool = client.post("/api/tools/document_outline", json={"doc_id": "guide.md"})
    assert tool.status_code == 200 and "docs/guide.md#s3 Usage" in tool.json()["observation"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(st.characters(blacklist_categories=("Cs",)), max_size=60), part=st.integers(-3, 10**7))
def test_any_document_route_input_is_answered_or_refused_with_a_4xx(hippo_index: Index, value: str, part: int) -> None:
    from fastapi.testclient import TestClient

    from arag.serve.http import create_app
    from arag.settings import Settings

    client = TestClient(create_app(hippo_index, Settings()))
    for route, params in [
        ("/api/documents", {"where": value, "top_k": part}),
        ("/api/documents/outline", {"doc_id": value}),
        ("/api/documents/section", {"section_id": value, "part": part}),
    ]:
        response = client.get(route, params=params)
        assert response.status_code in (200, 400, 404, 422), (route, params, response.text)


def test_the_cli_lists_outlines_and_reads_with_one_line_errors(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    _index(tmp_path, {"guide.md": GUIDE}).close()

    def arag(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "arag", "documents", *args, "--index", str(tmp_path / "idx")]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    listed = arag("list", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)["documents"][0]["doc_id"] == "docs/guide.md"
    outline = arag("outline", "guide.md")
    assert outline.returncode == 0 and "  docs/guide.md#s2 On Linux (~" in outline.stdout
    read = arag("read", "docs/guide.md#s2", "--json")
    assert read.returncode == 0 and "Use apt." in json.loads(read.stdout)["text"]
    for args, reason in [(("outline", "nope"), "no document 'nope'"), (("read", "docs/guide.md#s2", "--part", "2"),
                                                                         "has 1 part")]:  # fmt: skip
        failed = arag(*args)
        assert failed.returncode == 1 and reason in failed.stderr and len(failed.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name", ["extended"])
def test_the_extended_profile_offers_every_tool_and_the_paper_profile_the_three(name: str) -> None:
    from arag.eval.methods import METHODS
    from arag.harness import load_profile

    assert load_profile(name).tools == list(TOOL_NAMES)
    assert load_profile("paper").tools is None
    assert METHODS["arag-extended"] == list(TOOL_NAMES)  # the eval method that measures the profile's tools


def test_places_without_headings_and_a_heading_repeated_at_a_chunk_start_are_nodes() -> None:
    from arag.corpus.outline import outline_of
    from arag.store import ChunkRecord

    def chunk(n: int, text: str, **location: object) -> ChunkRecord:
        return ChunkRecord(n, f"d#{n}", "d", text, len(text.split()), None, None, location=dict(location))

    slides = outline_of("d", [chunk(0, "Alpha text. Beta.", places=[[0, "slide 1"], [12, "slide 2"]]),
                              chunk(1, "Gamma.", places=[[0, "slide 2"]])])  # fmt: skip
    assert slides.kind == "places" and [(s.title, s.chunk_ids) for s in slides.sections] == [
        ("slide 1", ("d#0",)),
        ("slide 2", ("d#0", "d#1")),
    ]
    # "## Notes" twice, the second starting a chunk: the same path as the one open there, yet a new heading
    notes = outline_of("d", [chunk(0, "## Notes\n\nFirst.", headings=[[0, ["Notes"]]]),
                             chunk(1, "## Notes\n\nSecond.", headings=[[0, ["Notes"]]]),
                             chunk(2, "Still second.", headings=[[0, ["Notes"]]])])  # fmt: skip
    assert [(s.section_id, s.chunk_ids) for s in notes.sections] == [("d#s1", ("d#0",)), ("d#s2", ("d#1", "d#2"))]


def test_a_pdfs_lines_drawn_larger_or_bold_are_its_headings_and_no_closest_sentence(tmp_path: Path) -> None:
    from fpdf import FPDF

    from arag.corpus.pdf import read_pdf
    from arag.harness.reads import closest_sentences
    from arag.harness.text import chunk_headings
    from conftest import fake_run

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=16)
    pdf.cell(0, 10, "Orchard rules", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", size=11)
    for line in ("1. Ladders are held by a second person.", "2. Bonfires are not allowed.", "2009 was the first year."):
        pdf.cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", style="B", size=11)
    pdf.cell(0, 8, "Dogs", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("helvetica", size=11)
    pdf.cell(0, 8, "Dogs are kept on a lead. A long sentence drawn in the body's size says so.", new_x="LMARGIN")
    (tmp_path / "docs").mkdir()
    pdf.output(str(tmp_path / "docs" / "rules.pdf"))
    text, _pages, _info, _blocks, headings = read_pdf(tmp_path / "docs" / "rules.pdf")
    assert [(level, title) for _at, level, title in headings] == [(1, "Orchard rules"), (2, "Dogs")]
    assert all(text[at : at + len(title)] == title for at, _level, title in headings)
    build_index([tmp_path / "docs"], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    outline = index.outline(index.find_document("rules.pdf") or "")
    assert outline is not None and outline.kind == "headings"
    assert [s.title for s in outline.sections] == ["Orchard rules", "Dogs"]
    # the closest sentence to a question is never the title, however close its words
    (record,), _ = index.read(["docs/rules.pdf#0"])
    assert {"Orchard rules", "Dogs"} <= chunk_headings(record.location) and "Orchard rules" in index.sentences(record)
    run, _ = fake_run(index, question="Orchard rules?")
    closest = [e.sentence for e in closest_sentences(run, ["docs/rules.pdf#0"], k=None)]
    assert closest and "Orchard rules" not in closest and "Dogs" not in closest


def test_a_long_pdf_with_only_a_title_is_still_outlined_by_its_pages(tmp_path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    for page in (1, 2, 3):
        pdf.add_page()
        if page == 1:
            pdf.set_font("helvetica", size=18)
            pdf.cell(0, 10, "Depot report", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("helvetica", size=11)
        pdf.multi_cell(0, 8, f"Page {page} says the depot count is {page * 11}.")
    (tmp_path / "docs").mkdir()
    pdf.output(str(tmp_path / "docs" / "report.pdf"))
    build_index([tmp_path / "docs"], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    outline = index.outline(index.find_document("report.pdf") or "")
    assert outline is not None and outline.kind == "pages"
    assert [s.title for s in outline.sections] == ["page 1", "page 2", "page 3"]
    (record,), _ = index.read([f"{outline.doc_id}#0"])
    assert (record.location or {}).get("headings")  # the title is recorded all the same
