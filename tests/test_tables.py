"""Tables as data: the tables found in the documents kept as typed tables, the table tools, and their query's
semantics against a plain Python evaluation (arag/store/tabular.py), refused or bounded whatever is sent."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arag.agent import Agent
from arag.corpus.build import build_index
from arag.index import Index
from arag.models.endpoint import ChatModel
from arag.settings import AgentSettings, LLMSettings
from arag.store.embedded.tables import TABLES_DATABASE, TablesFile, TablesWriter
from arag.store.tabular import (
    DataTable,
    TableQueryError,
    column_kind,
    evaluate,
    parse_number,
    plan_query,
    show_value,
    tables_in,
)
from arag.tools.toolkit import TOOL_NAMES, Toolkit
from conftest import fake_settings
from support.office_files import DEPOTS, TEAMS, write_office_folder, write_table_pdf
from support.scripted_server import ScriptedServer, completion, tool_call

SALES = 'Region,Year,Revenue,Units\nNorth,2019,"1,200",10\nSouth,2019,900,\nNorth,2018,$1100,7\nEast,2018,(20),3\n'


# ---------------------------------------------------------------------------------------------------- reading
@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("1,234.5", 1234.5),
        ("$ 12", 12.0),
        ("(3.5)", -3.5),
        ("−4%", -4.0),
        ("-$7", -7.0),
        ("1e3", 1000.0),
        ("12,34", None),
        ("2019 est.", None),
        ("", None),
        ("n/a", None),
        ("1.2.3", None),
    ],
)
def test_cells_read_as_numbers_the_way_reports_write_them(text: str, number: float | None) -> None:
    assert parse_number(text) == number


def test_a_column_is_numeric_only_when_every_filled_cell_is_a_number() -> None:
    assert column_kind(["1", "—", "2,000", ""]) == "number"
    assert column_kind(["1", "two"]) == "text"
    assert column_kind(["", "-"]) == "text"


def test_a_table_split_over_chunks_is_one_table_with_its_caption_and_every_row() -> None:
    first = "Intro sentence.\n\nDepots\n| Depot | Crates |\n|---|---|\n| A | 1 |\n| B | 2 |\n"
    second = "Depots (continued, rows 3–4)\n| Depot | Crates |\n|---|---|\n| C | 3 |\n| D | x |\n\nAfter.\n"
    other = "| Name | Age |\n|---|---|\n| Ann | 31 |\n"
    tables = tables_in("doc", [("doc#0", first), ("doc#1", second), ("doc#2", other)])
    assert [t.info.table_id for t in tables] == ["doc#t1", "doc#t2"]
    depots = tables[0]
    assert depots.info.caption == "Depots" and depots.info.n_rows == 4 and depots.info.chunk_ids == ["doc#0", "doc#1"]
    assert [c.kind for c in depots.info.columns] == ["text", "text"]  # "x" is no number
    assert depots.row_chunks == ["doc#0", "doc#0", "doc#1", "doc#1"]
    assert tables[1].rows == [["Ann", 31.0]] and tables[1].info.caption == ""


def test_a_reports_heading_rows_become_part_of_its_column_names() -> None:
    text = (
        "| Years ended August 31, | 2019 | 2018 |\n|---|---|---|\n| (In thousands of dollars) | $ | $ |\n"
        "|  |  | (restated, Note 3) |\n| Salaries | 345,041 | 317,118 |\n| Customer costs | 100 | 50 |\n"
    )
    (table,) = tables_in("d", [("d#0", text)])
    names = [c.name for c in table.info.columns]
    assert names == ["Years ended August 31, (In thousands of dollars)", "2019 $", "2018 $ (restated, Note 3)"]
    assert [c.kind for c in table.info.columns] == ["text", "number", "number"]
    assert table.rows == [["Salaries", 345041.0, 317118.0], ["Customer costs", 100.0, 50.0]]
    # a column is found by its words, or the words it begins with, when only one column has them
    assert [table.info.column_index(n) for n in ("Years ended August 31", "2019", "2018", "[2018 $]")] == [0, 1, 2, 2]
    change = plan_query(table.info, columns=["[2019] - [2018]"], filters=["Years ended August 31 = customer costs"])
    assert evaluate(change, table).rows == [[50.0]]
    units = "| | 2019 | 2018 |\n|---|---|---|\n| Revenue by country | $M | £'000 |\n| UK | 83.2 | 73.5 |\n"
    (by_country,) = tables_in("u", [("u#0", units)])
    assert [(c.name, c.kind) for c in by_country.info.columns] == [
        ("Revenue by country", "text"), ("2019 $M", "number"), ("2018 £'000", "number")
    ]  # fmt: skip
    # a row of data is never taken for a heading: its cells are values, not signs or remarks
    (people,) = tables_in("p", [("p#0", "| Name | Age |\n|---|---|\n| Ann | (unknown) |\n| Bob | 45 |\n")])
    assert [c.name for c in people.info.columns] == ["Name", "Age"] and len(people.rows) == 2


def test_a_markdown_files_long_table_is_kept_whole_as_data_and_code_is_not_a_table(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    rows = "\n".join(f"| item {i} | {i} | a longer description of item {i}, to take some tokens |" for i in range(300))
    code = "```\n| not | a table |\n|---|---|\n| x | y |\n```\n"
    (folder / "stock.md").write_text(
        f"# Stock\n\nIntro.\n\n| Item | Count | Note |\n|---|---|---|\n{rows}\n\nAfter.\n\n{code}"
    )
    build_index([folder], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    (table,) = index.tables() or []
    assert table.n_rows == 300 and len(table.chunk_ids) > 3  # split between rows over several chunks, one table
    _, _, answer = index.query_table("stock.md#t1", aggregates=["sum(Count)"], filters=["Note contains item 29"])
    assert answer.rows == [[29.0 + sum(range(290, 300))]]
    # each chunk of it holds whole rows: a row is one sentence, searched with its header where the header is
    assert all(r.text.strip().endswith("|") for r in index.store.iter_chunks() if "item 150" in r.text)
    assert not tables_in("d", [("d#0", "| a | b |\n|---|---|\n\ntext\n")])  # a header without rows: no table


def test_columns_without_a_name_or_with_the_same_name_get_one() -> None:
    (table,) = tables_in("d", [("d#0", "| | 2019 | 2019 |\n|---|---|---|\n| Revenue | 5 | 6 |\n")])
    assert [c.name for c in table.info.columns] == ["column 1", "2019", "2019 (2)"]
    assert table.info.column_index("COLUMN 1") == 0 and table.info.column_index("`2019 (2)`") == 2


# ---------------------------------------------------------------------------------------------------- the query
def sales_table() -> DataTable:
    (table,) = tables_in("sales.csv", [("sales.csv#0", _markdown(SALES))])
    return table


def _markdown(csv_text: str) -> str:
    import csv
    import io

    rows = list(csv.reader(io.StringIO(csv_text)))
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows[1:]]) + "\n"


ALL = ["Region", "Year", "Revenue", "Units"]
MEANINGS: list[tuple[dict[str, Any], list[str], list[list[Any]]]] = [
    ({"filters": ["Revenue > 1000"]}, ALL, [["North", 2019, 1200, 10], ["North", 2018, 1100, 7]]),
    ({"filters": ["region = NORTH", "Year == 2018"], "columns": ["Units"]}, ["Units"], [[7]]),
    (
        {"group_by": ["Region"], "aggregates": ["sum(Revenue)", "count(*)", "count(Units)"]},
        ["Region", "sum(Revenue)", "count(*)", "count(Units)"],
        [["North", 2300, 2, 2], ["South", 900, 1, 0], ["East", -20, 1, 1]],
    ),
    (
        {"aggregates": ["avg(Units)", "max(Revenue)", "min(Year)"]},
        ["avg(Units)", "max(Revenue)", "min(Year)"],
        [[20 / 3, 1200, 2018]],
    ),
    (
        {"order_by": "Units", "descending": True, "columns": ["Region", "Units"]},
        ["Region", "Units"],
        [["North", 10], ["North", 7], ["East", 3], ["South", None]],  # an empty cell last, whatever the direction
    ),
    (
        {"filters": ["Region contains t"], "order_by": "Region"},
        ALL,
        [["East", 2018, -20, 3], ["North", 2019, 1200, 10], ["North", 2018, 1100, 7], ["South", 2019, 900, None]],
    ),
    (
        {"columns": ["Region", "[Revenue] / [Units]", "-([Units] - 10) * 2"], "order_by": "[Revenue]/[Units]"},
        ["Region", "[Revenue] / [Units]", "-([Units] - 10) * 2"],
        [["East", -20 / 3, 14], ["North", 120, 0], ["North", 1100 / 7, 6], ["South", None, None]],
    ),
    (
        {"group_by": ["Year"], "aggregates": ["sum(Units)"], "order_by": "sum(Units)"},
        ["Year", "sum(Units)"],
        [[2019, 10], [2018, 10]],  # a tie keeps table order
    ),
]


@pytest.mark.parametrize(("arguments", "header", "rows"), MEANINGS)
def test_queries_mean_what_they_say(arguments: dict[str, Any], header: list[str], rows: list[list[Any]]) -> None:
    table = sales_table()
    answer = evaluate(plan_query(table.info, **arguments), table)
    assert answer.header == header
    assert answer.rows == rows


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"filters": ["Region > North"]}, "text column: use =, != or contains"),
        ({"filters": ["Revenue contains 1"]}, "number column"),
        ({"filters": ["Revenue > lots"]}, "is not a number"),
        ({"filters": ["Profit > 3"]}, 'not "column operator value"'),
        ({"filters": ["Revenue >"]}, "has no value"),
        ({"aggregates": ["sum(Region)"]}, "needs a number column"),
        ({"aggregates": ["median(Units)"]}, "is not one of"),
        ({"aggregates": ["sum(*)"]}, "needs a column"),
        ({"columns": ["Region"], "aggregates": ["count(*)"]}, "neither grouped nor aggregated"),
        ({"group_by": ["Region"], "aggregates": ["count(*)"], "order_by": "Units"}, "grouped query is ordered"),
        ({"columns": ["Profit"]}, "no column 'Profit'"),
        ({"limit": 0}, "limit must be between 1 and 50"),
        ({"columns": ["[Region] + 1"]}, "Region is a text column"),
        ({"columns": ["[Revenue] +"]}, "ends too early"),
        ({"columns": ["([Revenue]"]}, "ends too early"),
        ({"columns": ["[Revenue] 2"]}, "'2' is out of place"),
        ({"columns": ["2 + 3 ["]}, "write number columns in [brackets]"),
        ({"columns": ["(2 + 3) * []"]}, "no column []"),
        ({"columns": ["[Units] % 2"]}, "write number columns in [brackets]"),
        (
            {"columns": ["[Units]"] + ["+ 1"] * 0 + ["[Units]*1"], "aggregates": ["count(*)"]},
            "computed columns are for",
        ),
    ],
)
def test_a_query_the_table_cannot_answer_says_what_to_change(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(TableQueryError, match=re.escape(message)):
        plan_query(sales_table().info, **arguments)


# every way to write a cell a table can hold, and queries over generated columns "k" (text) and "n", "m" (numbers)
_CELLS = st.one_of(
    st.sampled_from(["", "-", "n/a", "Ab", "ab", "AB", "b", "é", "Ω", "a|b", "x y"]),
    st.integers(-50, 50).map(str),
    st.sampled_from(["1,000", "$5", "(7)", "2.5", "12%"]),
)


@st.composite
def generated_tables(draw: st.DrawFn) -> DataTable:
    n_rows = draw(st.integers(1, 25))  # a header without rows is no table (tested apart)
    rows = []
    for _ in range(n_rows):
        text = draw(st.sampled_from(["Ab", "ab", "b", "é", "Ω", "", "x y"]))
        number = draw(st.one_of(st.just(""), st.integers(-9, 9).map(str)))
        other = draw(st.one_of(st.just("-"), st.integers(0, 3).map(str), st.sampled_from(["1,000", "(2)"])))
        rows.append([text, number, other, draw(_CELLS)])
    lines = ["| k | n | m | any |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    half = len(lines) // 2 + 1  # two parts in two chunks, as a long table is written
    first = "T\n" + "\n".join(lines[: max(half, 2)]) + "\n"
    second = "T (continued, rows 9–9)\n" + "\n".join(lines[:2] + lines[max(half, 2) :]) + "\n"
    chunks = [("g#0", first)] + ([("g#1", second)] if len(lines) > max(half, 2) else [])
    (table,) = tables_in("g", chunks)
    return table


_COLUMNS = ["k", "n", "m", "any"]
_NUMBER_FILTERS = st.builds(
    "{} {} {}".format,
    st.sampled_from(["n", "m"]),
    st.sampled_from(["=", "!=", ">", ">=", "<", "<="]),
    st.integers(-5, 5),
)
_TEXT_FILTERS = st.builds(
    "k {} {}".format, st.sampled_from(["=", "!=", "contains"]), st.sampled_from(["ab", "AB", "b", "É", "x"])
)
_FILTERS = st.one_of(_NUMBER_FILTERS, _TEXT_FILTERS)


@st.composite
def generated_queries(draw: st.DrawFn, table: DataTable) -> dict[str, Any]:
    numeric = [c.name for c in table.info.columns if c.kind == "number"]
    arguments: dict[str, Any] = {"filters": draw(st.lists(_FILTERS, max_size=2)), "limit": draw(st.integers(1, 50))}
    if draw(st.booleans()):
        group = draw(st.lists(st.sampled_from(_COLUMNS), max_size=2, unique=True))
        functions = ["count(*)", "count(any)"] + [f"{f}({c})" for f in ("sum", "avg", "min", "max") for c in numeric]
        aggregates = draw(st.lists(st.sampled_from(functions), min_size=0 if group else 1, max_size=3, unique=True))
        arguments |= {"group_by": group, "aggregates": aggregates}
        keys = group + aggregates
    else:
        computed = ["[n] - [m]", "[n] / [m]", "-[n] * 2.5", "([n] + 1) / ([m] - 1)", "[any] * [any]"]
        arguments["columns"] = draw(st.lists(st.sampled_from(_COLUMNS + computed), max_size=3, unique=True))
        keys = _COLUMNS + [c for c in arguments["columns"] if "[" in c]
    if keys and draw(st.booleans()):
        arguments |= {"order_by": draw(st.sampled_from(keys)), "descending": draw(st.booleans())}
    return arguments


def _shown(rows: list[list[Any]]) -> list[list[str]]:
    return [[show_value(v) for v in row] for row in rows]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_stored_table_answers_every_query_as_its_definition_does(tmp_path: Path, data: st.DataObject) -> None:
    table = data.draw(generated_tables())
    folder = tmp_path / f"t{abs(hash(repr(table.rows))) % 10**9}"
    folder.mkdir(exist_ok=True)
    writer = TablesWriter(folder)
    writer.add([table])
    writer.close()
    stored = TablesFile(folder / TABLES_DATABASE)
    try:
        (n, info), *_ = stored.catalog()
        assert info == table.info
        for _ in range(5):
            arguments = data.draw(generated_queries(table))
            try:
                query = plan_query(info, **arguments)
            except TableQueryError:
                continue
            expected, actual = evaluate(query, table), stored.answer(n, info, query)
            assert actual.header == expected.header
            assert _shown(actual.rows) == _shown(expected.rows), arguments
            assert (actual.total, actual.chunk_ids) == (expected.total, expected.chunk_ids), arguments
    finally:
        stored.close()
        (folder / TABLES_DATABASE).unlink()


def test_the_tables_connection_cannot_write_attach_or_read_files(tmp_path: Path) -> None:
    writer = TablesWriter(tmp_path)
    writer.add([sales_table()])
    writer.close()
    before = (tmp_path / TABLES_DATABASE).read_bytes()
    stored = TablesFile(tmp_path / TABLES_DATABASE)
    connection = stored._connection()
    for statement in (
        "DROP TABLE t1",
        "DELETE FROM t1",
        "INSERT INTO data_tables (n) VALUES (9)",
        f"ATTACH DATABASE '{tmp_path / 'x.sqlite'}' AS x",
        "PRAGMA query_only = 0",
        "SELECT load_extension('/tmp/x')",
        "SELECT readfile('/etc/passwd')",
        "CREATE TABLE y (a)",
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r",
    ):
        with pytest.raises(sqlite3.DatabaseError):
            connection.execute(statement).fetchall()
    stored.close()
    assert (tmp_path / TABLES_DATABASE).read_bytes() == before and not (tmp_path / "x.sqlite").exists()


def test_a_query_over_its_time_limit_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import arag.store.embedded.tables as embedded_tables

    rows = [[f"r{i}", str(i)] for i in range(20_000)]
    text = "| name | value |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows) + "\n"
    (table,) = tables_in("big", [("big#0", text)])
    writer = TablesWriter(tmp_path)
    writer.add([table])
    writer.close()
    stored = TablesFile(tmp_path / TABLES_DATABASE)
    (n, info), *_ = stored.catalog()
    query = plan_query(info, group_by=["name"], aggregates=["sum(value)"], order_by="sum(value)")
    monkeypatch.setattr(embedded_tables, "QUERY_TIME_LIMIT_S", 0.0)
    with pytest.raises(TableQueryError, match="longer than 0 s"):
        stored.answer(n, info, query)
    monkeypatch.setattr(embedded_tables, "QUERY_TIME_LIMIT_S", 30.0)
    assert stored.answer(n, info, query).total == 20_000  # the same connection answers the next query
    stored.close()


# ---------------------------------------------------------------------------------------------------- the tools
@pytest.fixture(scope="module")
def office_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    folder = write_office_folder(tmp_path_factory.mktemp("office") / "docs")
    write_table_pdf(folder / "depots.pdf")
    (folder / "sales.csv").write_text(SALES, encoding="utf-8")
    path = tmp_path_factory.mktemp("office-index") / "idx"
    build_index([folder], path, fake_settings())
    return Index.open(path, threads=1)


def test_every_table_read_is_listed_with_its_columns_and_where_it_is(office_index: Index) -> None:
    tables = {t.table_id.split("/")[-1]: t for t in office_index.tables() or []}
    assert set(tables) >= {
        "policy.docx#t1", "q3.pptx#t1", "headcount.xlsx#t1", "headcount.xlsx#t2", "people.csv#t1",
        "scores.tsv#t1", "depots.pdf#t1", "sales.csv#t1",
    }  # fmt: skip
    headcount = tables["headcount.xlsx#t1"]
    assert headcount.n_rows == len(TEAMS) - 1 and len(headcount.chunk_ids) > 1  # split by rows, one table again
    assert [(c.name, c.kind) for c in headcount.columns] == [
        ("Team", "text"),
        ("Engineers", "number"),
        ("Lead", "text"),
    ]
    assert tables["depots.pdf#t1"].n_rows == len(DEPOTS) - 1  # three pages of a PDF table
    listing = Toolkit(office_index, enabled=TOOL_NAMES).call("table_list", {"query": "budget cost", "top_k": 3})
    assert listing.ok and "headcount.xlsx#t2" in listing.observation.split("\n")[1]
    assert "sheet Budget" in listing.observation and "columns: Item (text); Cost (number)" in listing.observation


def test_a_query_sums_the_rows_of_a_table_split_over_chunks_and_names_them(office_index: Index) -> None:
    toolkit = Toolkit(office_index, enabled=TOOL_NAMES)
    result = toolkit.call(
        "table_query", {"table_id": "headcount.xlsx#t1", "aggregates": ["sum(Engineers)", "count(*)"]}
    )
    expected = sum(row[1] for row in TEAMS[1:])
    assert result.ok and f"| {expected} | {len(TEAMS) - 1} |" in result.observation
    assert len(result.chunk_ids) > 1 and set(result.read) == set(result.chunk_ids)
    assert "sheet Headcount" in result.observation
    depots = toolkit.call(
        "table_query", {"table_id": "depots.pdf#t1", "filters": ["Crates >= 600"], "columns": ["Depot"]}
    )
    assert (
        depots.ok and "| Depot 89 |" in depots.observation and "4 matching rows" in depots.observation
    )  # 86 × 7 ≥ 600


def test_a_query_by_a_user_stays_inside_the_scope(office_index: Index) -> None:
    from arag.filters import parse_filter

    toolkit = Toolkit(office_index, enabled=TOOL_NAMES, scope=parse_filter("type=csv"))
    assert "q3.pptx" not in toolkit.call("table_list", {}).observation
    refused = toolkit.call("table_query", {"table_id": "q3.pptx#t1"})
    assert not refused.ok and "no table has the id" in refused.observation


_INJECTIONS = [
    "; DROP TABLE data_tables; --",
    "x'); DROP TABLE t1; --",
    "ATTACH DATABASE '/tmp/evil.sqlite' AS evil",
    "COPY data_rows TO PROGRAM 'touch /tmp/pwned'",
    "pg_read_file('/etc/passwd')",
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r) SELECT * FROM r",
    "Team = x' OR '1'='1",
    "sum(Engineers); DELETE FROM t1",
    "load_extension('x')",
    "\x00",
    "\ud800",
]
_TEXT = st.one_of(st.sampled_from(_INJECTIONS), st.text(max_size=60))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    table_id=st.one_of(st.sampled_from(["headcount.xlsx#t1", "sales.csv#t1"]), _TEXT),
    columns=st.lists(_TEXT, max_size=3),
    filters=st.lists(st.one_of(_TEXT, st.builds("Team = {}".format, _TEXT)), max_size=3),
    aggregates=st.lists(_TEXT, max_size=2),
    order_by=_TEXT,
    limit=st.integers(-5, 10**9),
)
def test_tool_arguments_of_any_kind_are_refused_or_answered_and_the_tables_stay_intact(
    office_index: Index,
    table_id: str,
    columns: list[str],
    filters: list[str],
    aggregates: list[str],
    order_by: str,
    limit: int,
) -> None:
    toolkit = Toolkit(office_index, enabled=TOOL_NAMES)
    for arguments in (
        {"table_id": table_id, "columns": columns, "filters": filters, "order_by": order_by, "limit": limit},
        {"table_id": table_id, "group_by": columns, "aggregates": aggregates, "filters": filters},
        {"query": order_by, "where": table_id, "top_k": limit},
    ):
        name = "table_list" if "query" in arguments else "table_query"
        result = toolkit.call(name, arguments)
        assert result.observation.startswith(("Error: ", name, "(")), result.observation
    assert office_index.store.verify() == []


def test_the_fuzzing_left_every_table_as_it_was(office_index: Index) -> None:
    toolkit = Toolkit(office_index, enabled=TOOL_NAMES)
    tables = office_index.tables() or []
    assert len(tables) >= 8 and not Path("/tmp/pwned").exists() and not Path("/tmp/evil.sqlite").exists()
    everything = toolkit.call("table_query", {"table_id": "headcount.xlsx#t1", "aggregates": ["count(*)"]})
    assert f"| {len(TEAMS) - 1} |" in everything.observation


def test_an_index_built_before_tables_were_kept_says_to_rebuild(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.csv").write_text("x,y\n1,2\n", encoding="utf-8")
    build_index([folder], tmp_path / "idx", fake_settings())
    index = Index.open(tmp_path / "idx", threads=1)
    generation = index.store.path  # type: ignore[attr-defined]
    index.close()
    (generation / TABLES_DATABASE).unlink()  # as a generation written before this a-rag
    import json

    manifest_path = tmp_path / "idx" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"] = {k: v for k, v in manifest["files"].items() if not k.endswith(TABLES_DATABASE)}
    manifest_path.write_text(json.dumps(manifest))
    toolkit = Toolkit(Index.open(tmp_path / "idx", threads=1), enabled=TOOL_NAMES)
    assert "re-index the sources with --rebuild" in toolkit.call("table_list", {}).observation
    refused = toolkit.call("table_query", {"table_id": "a.csv#t1"})
    assert not refused.ok and "--rebuild" in refused.observation


def test_sync_replaces_a_changed_table_and_removes_a_deleted_one(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.csv").write_text("name,n\nx,1\n", encoding="utf-8")
    (folder / "b.csv").write_text("name,n\ny,2\n", encoding="utf-8")
    build_index([folder], tmp_path / "idx", fake_settings())
    (folder / "a.csv").write_text("name,n\nx,1\nz,5\n", encoding="utf-8")
    (folder / "b.csv").unlink()
    build_index([folder], tmp_path / "idx", fake_settings(), sync=True)
    index = Index.open(tmp_path / "idx", threads=1)
    assert [(t.table_id.split("/")[-1], t.n_rows) for t in index.tables() or []] == [("a.csv#t1", 2)]
    assert index.store.verify() == []


# ---------------------------------------------------------------------------------------------------- the agent
def test_the_agent_finds_a_table_sums_it_and_cites_its_rows(office_index: Index, server: ScriptedServer) -> None:
    table_id = next(t.table_id for t in office_index.tables() or [] if t.table_id.endswith("headcount.xlsx#t1"))
    server.replies = [
        completion(tool_calls=[tool_call("table_list", {"query": "engineers per team"})]),
        completion(tool_calls=[tool_call("table_query", {"table_id": table_id, "aggregates": ["sum(Engineers)"]})]),
        completion("It is [answer] engineers [chunk CHUNK]."),
    ]  # fmt: skip
    model = ChatModel(LLMSettings(base_url=server.base_url, api_key="k", model="gpt-4o-mini", max_retries=0))
    agent = Agent(office_index, model, AgentSettings(tools=list(TOOL_NAMES)))
    schemas = {s["function"]["name"] for s in agent._toolkit().schemas()}
    assert {"table_list", "table_query"} <= schemas
    total = sum(row[1] for row in TEAMS[1:])
    first_chunk = next(t.chunk_ids[0] for t in office_index.tables() or [] if t.table_id == table_id)
    server.replies[2] = completion(f"{total} engineers [chunk {first_chunk}].")
    result = agent.run("How many engineers are there in all teams together?")
    assert result.stop_reason == "answered" and str(total) in result.answer
    assert [s.tool for s in result.trajectory] == ["table_list", "table_query"]
    assert f"| {total} |" in result.trajectory[1].observation
    assert result.citations == [{"chunk_id": first_chunk, "verified": True}]
    system = server.requests[0]["messages"][0]["content"]
    assert "table_query" in system and "find the table with table_list" in system


# ---------------------------------------------------------------------------------------------------- surfaces
def test_the_http_api_lists_and_queries_tables_and_refuses_a_bad_query(office_index: Index) -> None:
    from fastapi.testclient import TestClient

    from arag.serve.http import create_app
    from arag.settings import Settings

    client = TestClient(create_app(office_index, Settings()))
    listed = client.get("/api/tables", params={"query": "budget", "top_k": 2})
    assert listed.status_code == 200, listed.text
    first = listed.json()[0]
    assert first["table_id"].endswith("headcount.xlsx#t2") and "sheet Budget" in first["source"]
    assert first["columns"] == [{"name": "Item", "kind": "text"}, {"name": "Cost", "kind": "number"}]
    answered = client.post(
        "/api/tables/query",
        json={"table_id": "headcount.xlsx#t1", "group_by": ["Engineers"], "aggregates": ["count(*)"],
              "order_by": "count(*)", "descending": True, "limit": 2},
    )  # fmt: skip
    assert answered.status_code == 200, answered.text
    body = answered.json()
    assert body["header"] == ["Engineers", "count(*)"] and body["total"] == 17 and len(body["rows"]) == 2
    refused = client.post("/api/tables/query", json={"table_id": "headcount.xlsx#t1", "filters": ["Lead > 3"]})
    assert refused.status_code == 400 and "text column" in refused.json()["detail"]
    unknown = client.post("/api/tables/query", json={"table_id": "; DROP TABLE data_tables"})
    assert unknown.status_code == 400 and "no table has the id" in unknown.json()["detail"]
    too_many = client.post("/api/tables/query", json={"table_id": "x", "limit": 51})
    assert too_many.status_code == 422
    tool = client.post("/api/tools/table_query", json={"table_id": "people.csv#t1", "columns": ["name"]})
    assert tool.status_code == 200 and "| Ana |" in tool.json()["observation"]


def test_the_cli_lists_and_queries_tables_with_one_line_errors(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "sales.csv").write_text(SALES, encoding="utf-8")
    build_index([folder], tmp_path / "idx", fake_settings())

    def arag(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "arag", *args, "--index", str(tmp_path / "idx")]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    listed = arag("tables", "list", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)[0]["n_rows"] == 4
    change = arag("tables", "query", "sales.csv#t1", "-c", "Region", "-c", "[Revenue] / [Units]", "-f", "Year = 2019",
                  "--json")  # fmt: skip
    assert change.returncode == 0, change.stderr
    assert json.loads(change.stdout)["rows"] == [["North", 120.0], ["South", None]]
    shown = arag("tables", "query", "sales.csv#t1", "-g", "Region", "-a", "sum(Revenue)")
    assert shown.returncode == 0 and "2300" in shown.stdout and "North" in shown.stdout
    wrong = arag("tables", "query", "sales.csv#t1", "-f", "Region > 3")
    assert wrong.returncode == 1 and wrong.stderr.strip().count("\n") == 0 and "text column" in wrong.stderr


def test_a_table_is_named_by_its_rank_in_the_latest_listing(office_index: Index) -> None:
    toolkit = Toolkit(office_index, enabled=TOOL_NAMES)
    assert not toolkit.call("table_query", {"table_id": "1"}).ok  # nothing listed yet: "1" is no table
    listing = toolkit.call("table_list", {"query": "budget cost", "top_k": 2})
    second = listing.observation.split("\n[2] table ")[1].split(" ")[0]
    for written in ("1", "[1]", "table 1", "#1"):
        result = toolkit.call("table_query", {"table_id": written, "columns": ["Cost"]})
        assert result.ok and "| 52000 |" in result.observation, (written, result.observation)
    assert second in toolkit.call("table_query", {"table_id": "2", "limit": 1}).observation
    assert not toolkit.call("table_query", {"table_id": "3"}).ok


def test_a_path_written_where_a_filter_goes_is_read_as_one_on_the_path(office_index: Index) -> None:
    toolkit = Toolkit(office_index, enabled=TOOL_NAMES)
    result = toolkit.call("keyword_search", {"keywords": ["Lisbon"], "where": "people.csv"})
    assert result.ok and result.observation.startswith('(read the filter as path~"people.csv")')
    assert all(chunk.split("#")[0].endswith("people.csv") for chunk in result.hits)
    listed = toolkit.call("table_list", {"where": "q3.pptx"})
    assert listed.ok and "q3.pptx#t1" in listed.observation and "people.csv" not in listed.observation
    refused = toolkit.call("keyword_search", {"keywords": ["Lisbon"], "where": "path=="})
    assert not refused.ok and "cannot read the filter" in refused.observation


def test_the_tables_profile_offers_the_table_tools_unless_tools_are_named(office_index: Index) -> None:
    from arag.tools.toolkit import PAPER_TOOLS

    model = ChatModel(LLMSettings(base_url="http://127.0.0.1:9", api_key="k", model="m", max_retries=0))

    def offered(**settings: Any) -> list[str]:
        return Agent(office_index, model, AgentSettings(**settings))._toolkit().enabled

    assert offered(profile="tables") == [*PAPER_TOOLS, "table_list", "table_query"]
    assert offered(profile="tables", tools=["semantic_search", "table_list"]) == ["semantic_search", "table_list"]
    assert offered() == offered(profile="compact") == list(PAPER_TOOLS)
