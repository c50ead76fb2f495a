"""Per-document access (issue 51, first part): a principal sees exactly what an index built from the documents it
may read would show — ids, scores, snippets, neighbours, counts, listings, outlines — through every tool."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arag.corpus.build import build_index
from arag.index import Index
from arag.principals import Principal, access_groups
from arag.tools.toolkit import TOOL_NAMES, Toolkit
from conftest import fake_settings
from support.access_corpus import DOCUMENTS, GROUPS, readable_lines, write_documents

CALLS = [
    ("keyword_search", {"keywords": ["salary", "Portland"], "top_k": 20}),
    ("keyword_search", {"keywords": ["budget"], "top_k": 3}),
    ("grep", {"pattern": "(audit|deploy) [a-z]+", "top_k": 20}),
    ("list_documents", {"top_k": 100}),
    ("list_documents", {"where": "title~Doc", "top_k": 100}),
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(documents=DOCUMENTS, groups=st.lists(st.sampled_from(GROUPS), max_size=3, unique=True))
def test_a_principal_sees_exactly_what_an_index_of_the_documents_it_may_read_shows(
    documents: list[tuple[str, list[str] | None]], groups: list[str]
) -> None:
    principal = Principal.of("ana", groups)
    readable = [(text, access) for text, access in documents if access is None or set(access) & set(groups)]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_documents(root / "all", documents)
        build_index([root / "all" / "docs.jsonl"], root / "all-idx", fake_settings(chunker={"chunk_tokens": 24}))
        view = Index.open(root / "all-idx", threads=1).as_principal(principal)
        # the reference: only the documents it may read, under the same ids
        write_documents(root / "own", documents)
        own_lines = readable_lines(root / "own" / "docs.jsonl", documents, groups)
        assert len(own_lines) == len(readable)
        if not own_lines:
            assert view.documents() == [] and view.keyword_search(["salary"], 5) == []
            assert (
                Toolkit(view, enabled=TOOL_NAMES).call("list_documents", {}).observation
                == "list_documents: 0 documents"
            )
            return
        (root / "own" / "docs.jsonl").write_text("\n".join(own_lines) + "\n", encoding="utf-8")
        build_index([root / "own" / "docs.jsonl"], root / "own-idx", fake_settings(chunker={"chunk_tokens": 24}))
        reference = Index.open(root / "own-idx", threads=1)
        seen, expected = Toolkit(view, enabled=TOOL_NAMES), Toolkit(reference, enabled=TOOL_NAMES)
        for name, arguments in CALLS:
            assert seen.call(name, arguments).observation == expected.call(name, arguments).observation, name
        for query in ("travel policy review", "salary budget"):  # every chunk: no cut among near-ties
            assert _close(view.semantic_search(query, 1000), reference.semantic_search(query, 1000))
            fused, expected_fused = view.fused_search(query, 1000)[1], reference.fused_search(query, 1000)[1]
            assert {h.chunk_id: h.snippets for h in fused} == {h.chunk_id: h.snippets for h in expected_fused}
        every_chunk = [r.chunk_id for r in Index.open(root / "all-idx", threads=1).store.iter_chunks()]
        for chunk_id in every_chunk:  # a forbidden chunk reads as one that does not exist
            shown = seen.call("chunk_read", {"chunk_ids": [chunk_id]}).observation
            assert shown == expected.call("chunk_read", {"chunk_ids": [chunk_id]}).observation
        for n in range(len(documents)):
            outline = seen.call("document_outline", {"doc_id": f"doc{n}"}).observation
            assert outline == expected.call("document_outline", {"doc_id": f"doc{n}"}).observation
            section = seen.call("section_read", {"section_id": f"doc{n}#s1"}).observation
            assert section == expected.call("section_read", {"section_id": f"doc{n}#s1"}).observation
        assert view.titles_named_in("about Doc 0 and Doc 1") == reference.titles_named_in("about Doc 0 and Doc 1")
        for word in ("salary", "budget", "nothing"):
            assert view.keyword_chunk_count(word, 1000) == reference.keyword_chunk_count(word, 1000)
        assert view.chunk_count() == reference.chunk_count()
        assert [r.chunk_id for r in view.iter_chunks()] == [r.chunk_id for r in reference.iter_chunks()]


def _close(hits: list, expected: list) -> bool:
    """The same chunks with the same snippets and scores equal within 1e-5: the same search over fewer rows sums its
    floats in another order (and so may order near-ties, and the fused ranks built on them, differently)."""
    seen, wanted = {h.chunk_id: h for h in hits}, {h.chunk_id: h for h in expected}
    return seen.keys() == wanted.keys() and all(
        abs(seen[c].score - wanted[c].score) < 1e-5 and seen[c].snippets == wanted[c].snippets for c in seen
    )


def test_access_is_read_from_a_list_a_text_or_nothing() -> None:
    assert access_groups({"title": "x"}) is None and access_groups(None) is None
    assert access_groups({"access": "hr, finance"}) == ["hr", "finance"]
    assert access_groups({"access": []}) == [] and access_groups({"access": ""}) == []
    assert not Principal.of("bo", ["eng"]).may_read({"access": []})
    assert Principal.of("bo", []).may_read({"title": "open"})


RULES = """
default = "closed"
[[rule]]
path = "hr/*"
groups = ["hr"]
[[rule]]
path = "public/*"
groups = "open"
"""


def _folder(root: Path) -> Path:
    docs = root / "docs"
    for name, text in {
        "hr/salaries.md": "Salaries rise 3 percent in 2026.",
        "hr/private/grievance.md": "The grievance about Portland was settled.",
        "public/handbook.md": "The handbook covers travel and leave.",
        "finance/budget.md": "---\naccess: [finance]\n---\nThe budget for 2026 is 4 million.",
        "notes.md": "Unruled notes about the deploy.",
    }.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text + "\n", encoding="utf-8")
    (docs / ".arag-access.toml").write_text(RULES, encoding="utf-8")
    (docs / "hr" / ".arag-access.toml").write_text(
        '[[rule]]\npath = "private/*"\ngroups = "closed"\n', encoding="utf-8"
    )
    return docs


def test_folder_rules_and_front_matter_decide_who_reads_and_a_changed_rule_is_applied_by_sync(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    build_index([docs], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    access = {d.doc_id: (d.metadata or {}).get("access") for d in index.documents()}
    assert access == {
        "docs/finance/budget.md": ["finance"],  # its own front matter wins
        "docs/hr/private/grievance.md": [],  # the nearest rules file closes it
        "docs/hr/salaries.md": ["hr"],
        "docs/notes.md": [],  # no rule names it: the folder's default
        "docs/public/handbook.md": None,  # open
    }
    seen = {
        groups: sorted(d.doc_id for d in index.as_principal(Principal.of("p", groups)).documents())
        for groups in [(), ("hr",), ("finance", "eng")]
    }
    assert seen == {
        (): ["docs/public/handbook.md"],
        ("hr",): ["docs/hr/salaries.md", "docs/public/handbook.md"],
        ("finance", "eng"): ["docs/finance/budget.md", "docs/public/handbook.md"],
    }
    assert len(index.documents()) == 5  # the local user reads everything
    hr = Toolkit(index.as_principal(Principal.of("p", ["hr"])), enabled=TOOL_NAMES)
    assert "not found" in hr.call("chunk_read", {"chunk_ids": ["docs/finance/budget.md#0"]}).observation
    hidden = hr.call("keyword_search", {"keywords": ["Portland", "budget"]}).observation  # closed, and finance's
    assert hidden.startswith('keyword_search ["Portland", "budget"]: no matching chunks')
    # a rule changed: the next sync rewrites the documents it decides, reusing every sentence vector
    (docs / ".arag-access.toml").write_text(RULES.replace('groups = ["hr"]', 'groups = ["hr", "finance"]'))
    report = build_index([docs], tmp_path / "idx", fake_settings(), sync=True)
    assert report.replaced == ["docs/hr/salaries.md"] and report.embedded == 0 and report.reused_vectors >= 1
    synced = Index.open(tmp_path / "idx", threads=1).as_principal(Principal.of("p", ["finance"]))
    assert sorted(d.doc_id for d in synced.documents()) == [
        "docs/finance/budget.md",
        "docs/hr/salaries.md",
        "docs/public/handbook.md",
    ]


def test_a_rules_file_that_cannot_be_read_stops_indexing(tmp_path: Path) -> None:
    import pytest

    from arag.errors import IngestError

    docs = _folder(tmp_path)
    for text, reason in [
        ("default = [", "cannot read the access rules"),
        ('default = "maybe"', 'groups must be "open", "closed" or a list'),
        ('[[rule]]\ngroups = ["hr"]', "needs a path"),
        ('[[rule]]\npath = "*"\ngroups = ["h r"]', "is not a group name"),
        ('owner = "x"', "unknown key 'owner'"),
    ]:
        (docs / ".arag-access.toml").write_text(text, encoding="utf-8")
        with pytest.raises(IngestError, match=reason):
            build_index([docs], tmp_path / "idx", fake_settings(), rebuild=True)


def test_the_cli_reads_as_the_groups_it_is_given_and_refuses_a_bad_group_in_one_line(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    docs = _folder(tmp_path)
    build_index([docs], tmp_path / "idx", fake_settings())
    environment = {**os.environ, "ARAG_INDEX__EMBEDDER": "fake"}

    def arag(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "arag", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment)

    index = ["--index", str(tmp_path / "idx")]
    everything = arag("export", *index)
    assert everything.returncode == 0 and len(everything.stdout.splitlines()) == 5
    as_hr = arag("--as", "hr,eng", "export", *index)
    assert sorted(json.loads(line)["doc_id"] for line in as_hr.stdout.splitlines()) == [
        "docs/hr/salaries.md",
        "docs/public/handbook.md",
    ]
    found = arag("--as", "eng", "search", "keyword", "Salaries", "handbook", "--json", *index)
    assert [hit["chunk_id"] for hit in json.loads(found.stdout)] == ["docs/public/handbook.md#0"]
    listed = subprocess.run([sys.executable, "-m", "arag", "documents", "list", "--json", *index], capture_output=True,
                            text=True, timeout=120, env={**environment, "ARAG_AS": "finance"})  # fmt: skip
    assert [d["doc_id"] for d in json.loads(listed.stdout)["documents"]] == [
        "docs/finance/budget.md",
        "docs/public/handbook.md",
    ]
    refused = arag("--as", "h r", "export", *index)
    assert refused.returncode == 1 and refused.stderr.strip().splitlines() == [
        "error: 'h r' is not a group name (letters, digits, . @ : _ -, at most 128)"
    ]


def test_a_view_of_a_view_reads_what_both_principals_may_and_never_widens(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    build_index([docs], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    hr_or_finance = index.as_principal(Principal.of("served as", ["hr", "finance"]))  # arag --as hr,finance serve
    finance_token = hr_or_finance.as_principal(Principal.of("token", ["finance", "eng"]))
    assert sorted(d.doc_id for d in finance_token.documents()) == ["docs/finance/budget.md", "docs/public/handbook.md"]
    eng_only = index.as_principal(Principal.of("served as", ["eng"])).as_principal(Principal.of("token", ["finance"]))
    assert [d.doc_id for d in eng_only.documents()] == ["docs/public/handbook.md"]
    assert hr_or_finance.as_principal(None).documents() == hr_or_finance.documents()  # "everything" stays within


def test_a_rule_changed_by_sync_applies_from_the_next_operation_not_mid_question(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    build_index([docs], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    index.follow_updates(every_s=0)  # as arag serve follows a sync
    finance = index.as_principal(Principal.of("p", ["finance"]))
    before = ["docs/finance/budget.md", "docs/public/handbook.md"]
    with finance.snapshot():  # a question under way: it reads one generation from start to end
        assert sorted(d.doc_id for d in finance.documents()) == before
        (docs / ".arag-access.toml").write_text(RULES.replace('groups = ["hr"]', 'groups = ["hr", "finance"]'))
        build_index([docs], tmp_path / "idx", fake_settings(), sync=True)
        assert sorted(d.doc_id for d in finance.documents()) == before
        assert finance.keyword_search(["Salaries"], 5) == []
    assert sorted(d.doc_id for d in finance.documents()) == sorted([*before, "docs/hr/salaries.md"])
    assert [h.chunk_id for h in finance.keyword_search(["Salaries"], 5)] == ["docs/hr/salaries.md#0"]
    index.close()
