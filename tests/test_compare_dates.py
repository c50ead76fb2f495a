"""compare_dates: an either-or question decided by two dates is ordered by the harness from the dates the model
copies; exact date arithmetic, the checks on what was copied, and the policy on a fake run."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arag.corpus.build import build_index
from arag.eval.splice import write_reach
from arag.harness.compose import Harness
from arag.harness.contract import Constraint, Hold, Reread
from arag.harness.policies.compare_dates import (
    Comparison,
    Day,
    compared,
    copied_dates,
    dates_in,
    decide,
    holders_named,
    named_option,
    reading,
)
from arag.index import Index
from conftest import fake_run, fake_settings, guarded_call
from support.agents import local_json_agent
from support.scripted_server import ScriptedServer, completion

FILMS = [
    {"title": "Blue Lake", "text": "Blue Lake is a 1961 drama film directed by Ada Brenner. It was shot in Norway."},
    {"title": "Red Sky", "text": "Red Sky is a 1946 film directed by Karl Olsen. It was remade in 1999."},
    {"title": "Ada Brenner", "text": "Ada Brenner (3 October 1901 – 25 November 1959) was a French film director."},
    {"title": "Karl Olsen", "text": "Karl Olsen (4 March 1938 – 2 August 2007) was a Danish film director."},
    {"title": "Lena Fox", "text": "Lena Fox (born April 5, 1926) is an American director and producer."},
    {"title": "Oslo office", "text": "The Oslo office opened in March 2019. It has 40 engineers."},
    {"title": "Lisbon office", "text": "The Lisbon office opened in 2019 with 12 people."},
]


HOLDERS = {"policy": {"compare_dates": {"read_holders": True}}}  # the setting that reads each director's text


@pytest.fixture(scope="module")
def films_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    folder = tmp_path_factory.mktemp("films")
    (folder / "corpus.json").write_text(json.dumps(FILMS), encoding="utf-8")
    build_index([folder / "corpus.json"], folder / "idx", fake_settings())
    return Index.open(folder / "idx", threads=1)


@pytest.mark.parametrize(
    ("question", "by", "later", "role"),
    [
        ("Which film was released first, Blue Lake or Red Sky?", "date", False, None),
        ("Which album came out later, Sol Niger Within or The Magic Place?", "date", True, None),
        ("Which office opened first, Oslo or Lisbon?", "date", False, None),
        ("Who joined Kestrel first, Oskar Lindqvist or Priya Raman?", "date", False, None),
        ("Who was born first, Ada Brenner or Karl Olsen?", "birth", False, None),
        ("Who is younger, Denise Kandel or Bruce Robinson?", "birth", True, None),
        ("Who died first, Hucbert or Teutberga?", "death", False, None),
        ("Who lived longer, Murad II or Mehmed II?", "life", True, None),
        ("Which film has the director who was born later, Blue Lake or Red Sky?", "birth", True, "director"),
        ("Which film has the director who died earlier, Blue Lake or Red Sky?", "death", False, "director"),
        ("Which film has the director born first, Blue Lake or Red Sky?", "birth", False, "director"),
        ("Which film has the director who is older than the other, Blue Lake or Red Sky?", "birth", False, "director"),
        ("Which film whose director is younger, Blue Lake or Red Sky?", "birth", True, "director"),
        ("Which film has the director died later, Blue Lake or Red Sky?", "death", True, "director"),
        ("Which film is older, Blue Lake or Red Sky?", "date", False, None),  # a film is made, not born
    ],
)
def test_a_question_compared_by_dates_says_by_what_and_which_end(
    question: str, by: str, later: bool, role: str | None
) -> None:
    comparison = compared(question)
    assert comparison is not None and (comparison.by, comparison.later, comparison.role) == (by, later, role)
    assert comparison.options == tuple(question.rsplit(", ", 1)[1].rstrip("?").split(" or "))


@pytest.mark.parametrize(
    "question",
    [
        "Which country is bigger, Norway or Denmark?",  # no date decides it
        "Are Blue Lake and Red Sky from the same country?",  # yes/no
        "When was Blue Lake released?",  # no options
        "Which film came out first and which later, Blue Lake or Red Sky?",  # both ends: undecided
        "Who directed Blue Lake, Ada Brenner or Karl Olsen?",
    ],
)
def test_a_question_no_two_dates_decide_is_left_alone(question: str) -> None:
    assert compared(question) is None


def test_dates_are_read_as_far_as_the_text_gives_them() -> None:
    assert dates_in("3 October 1901 – 25 November 1959") == [Day(1901, 10, 3), Day(1959, 11, 25)]
    assert dates_in("released on February 21st, 2011") == [Day(2011, 2, 21)]
    assert dates_in("March 1938, then 1997") == [Day(1938, 3), Day(1997)]
    assert dates_in("died 864") == [Day(864)]
    assert dates_in("unknown") == []


def test_the_order_is_decided_only_where_the_dates_allow() -> None:
    first = Comparison(("A", "B"), "date", later=False)
    assert decide(first, {"A": [Day(1997)], "B": [Day(2011, 2, 21)]}) == "A"
    assert decide(first, {"A": [Day(2006, 7, 3)], "B": [Day(2006, 10, 3)]}) == "A"  # months decide one year
    assert decide(first, {"A": [Day(2019)], "B": [Day(2019, 3)]}) is None  # the year alone cannot
    assert decide(first, {"A": [Day(2019, 3, 1)], "B": [Day(2019, 3, 1)]}) is None  # the same day
    assert decide(first, {"A": [Day(1997)], "B": []}) is None
    assert decide(first, {"A": [Day(2001, 2, 31)], "B": [Day(1990)]}) is None  # no such date
    later = Comparison(("A", "B"), "birth", later=True)
    assert decide(later, {"A": [Day(1933, 2, 27)], "B": [Day(1946, 5, 2)]}) == "B"
    longer = Comparison(("A", "B"), "life", later=True)
    # 58 years against 69: decided; 46 against 49 in years alone: decided; 50 against 51 in years alone: not
    assert decide(longer, {"A": [Day(1901, 10, 3), Day(1959, 11, 25)], "B": [Day(1938, 3, 4), Day(2007, 8, 2)]}) == "B"
    assert decide(longer, {"A": [Day(1404), Day(1451)], "B": [Day(1432), Day(1481)]}) == "B"
    assert decide(longer, {"A": [Day(1900), Day(1950)], "B": [Day(1800), Day(1851)]}) is None
    assert decide(longer, {"A": [Day(1950), Day(1900)], "B": [Day(1800), Day(1851)]}) is None  # died before born
    assert decide(longer, {"A": [Day(1901)], "B": [Day(1800), Day(1851)]}) is None  # one date of a life


def test_the_copied_lines_are_read_by_their_option_or_else_in_order() -> None:
    options = ("Blue Lake", "Red Sky")
    assert copied_dates("Red Sky: 1946\nBlue Lake: 1961", options) == {"Red Sky": "1946", "Blue Lake": "1961"}
    assert copied_dates("- **Blue Lake**: 1961", options) == {"Blue Lake": "1961"}  # markdown aside
    assert copied_dates("Blue: 1961\nRed: 1946", options) == {}  # heads that are not the options
    assert copied_dates("1961\n1946", options) == {"Blue Lake": "1961", "Red Sky": "1946"}
    assert copied_dates("Blue Lake was made in 1961.", options) == {}
    assert named_option("Blue Lake [chunk Blue Lake#0]", options) == "Blue Lake"
    assert named_option("Blue Lake, not Red Sky", options) is None
    assert named_option("Halloween Kills", options) is None


def read(run, index: Index, *chunk_ids: str):  # type: ignore[no-untyped-def]
    """The run after the model read these chunks."""
    guarded_call(run, [], "chunk_read", {"chunk_ids": list(chunk_ids)})
    return run


def test_an_answer_the_dates_contradict_goes_back_once_with_the_dates(films_index: Index) -> None:
    question = "Which film was released first, Blue Lake or Red Sky?"
    run, (policy,) = fake_run(films_index, "compare_dates", question=question)
    read(run, films_index, "Blue Lake#0", "Red Sky#0")
    answer = "Blue Lake [chunk Blue Lake#0]"
    reread = policy.reread(run, answer)
    assert isinstance(reread, Reread)
    asked = reread.messages[-1]["content"]
    assert "[chunk Red Sky#0] Red Sky is a 1946 film directed by Karl Olsen." in asked
    assert "It was shot in Norway." not in asked  # only sentences with a year
    assert asked.endswith("Blue Lake: <date>\nRed Sky: <date>")
    # the copied dates agree with the answer, or decide nothing: the answer stands
    for reply in ("Blue Lake: 1946\nRed Sky: 1961", "Blue Lake: unknown\nRed Sky: 1946", "", "Red Sky"):
        assert reread.answer(reply) == answer
    assert Harness([policy]).acted() == {}
    # a date no sentence shown holds decides nothing
    assert reread.answer("Blue Lake: 1961\nRed Sky: 1930") == answer
    held = reread.answer("Blue Lake: 1961\nRed Sky: 1946")
    assert isinstance(held, Hold) and not held.read and Harness([policy]).acted() == {"compare_dates": 1}
    assert "Blue Lake — 1961 [chunk Blue Lake#0]; Red Sky — 1946 [chunk Red Sky#0]" in held.message
    assert "So the answer is Red Sky: Red Sky comes earlier." in held.message and held.message.endswith(question)
    assert policy.record(run)["dates"][-1] == {"copied": {"Blue Lake": "1961", "Red Sky": "1946"}, "decided": "Red Sky"}
    assert policy.reread(run, answer) is None  # once per question
    assert policy.constrain(run, None) == Constraint(options=("Red Sky",))  # the answer from now on
    # the answer at the step limit is left alone, and so is a run that read no dated sentence
    forced, (fresh,) = fake_run(films_index, "compare_dates", question=question)
    read(forced, films_index, "Blue Lake#0", "Red Sky#0").stop_reason = "max_steps"
    assert fresh.reread(forced, answer) is None
    unread, (other,) = fake_run(films_index, "compare_dates", question=question)
    assert other.reread(unread, answer) is None and other.constrain(unread, None) is None


def test_a_date_is_an_options_only_from_its_own_text_or_the_text_of_the_person_it_names(films_index: Index) -> None:
    question = "Which film has the director who was born later, Blue Lake or Red Sky?"
    run, (policy,) = fake_run(films_index, "compare_dates", question=question)
    read(run, films_index, "Blue Lake#0", "Red Sky#0", "Ada Brenner#0", "Karl Olsen#0", "Lena Fox#0")
    reread = policy.reread(run, "Blue Lake")
    assert reread is not None and "its director's date of birth" in reread.messages[-1]["content"]
    asked = reread.messages[-1]["content"]
    # the films' sentences naming their directors, the directors' dates; nothing of Lena Fox, who directed neither
    assert "[chunk Blue Lake#0] Blue Lake is a 1961 drama film directed by Ada Brenner." in asked
    assert "[chunk Karl Olsen#0] Karl Olsen (4 March 1938 – 2 August 2007)" in asked and "Lena Fox" not in asked
    # the films' own years are no director's birth; Lena Fox directed neither film
    assert reread.answer("Blue Lake: 1961\nRed Sky: 1946") == "Blue Lake"
    assert reread.answer("Blue Lake: April 5, 1926\nRed Sky: 4 March 1938") == "Blue Lake"
    held = reread.answer("Blue Lake: 3 October 1901\nRed Sky: 4 March 1938")
    assert isinstance(held, Hold)
    assert "[chunk Ada Brenner#0]" in held.message and "[chunk Karl Olsen#0]" in held.message
    assert "its director was born later" in held.message
    # a question that compares the options themselves takes a date from text that names the option
    offices = "Which office opened first, Oslo or Lisbon?"
    other, (fresh,) = fake_run(films_index, "compare_dates", question=offices)
    read(other, films_index, "Oslo office#0", "Lisbon office#0", "Red Sky#0")
    again = fresh.reread(other, "Lisbon")
    assert again is not None and "Red Sky" not in again.messages[-1]["content"]  # a text naming neither office
    assert again.answer("Oslo: March 2019\nLisbon: 2019") == "Lisbon"  # one year without its month: undecided
    assert again.answer("Oslo: March 2019\nLisbon: 1946") == "Lisbon"  # Red Sky's year is not Lisbon's


def test_lives_are_compared_by_their_length(hippo_index: Index) -> None:
    question = "Who lived longer, Murad II or Mehmed II?"
    run, (policy,) = fake_run(hippo_index, "compare_dates", question=question)
    read(run, hippo_index, "Murad II#0", "Mehmed II#0")
    reread = policy.reread(run, "Murad II [chunk Murad II#0]")
    assert reread is not None and "birth date and date of death" in reread.messages[-1]["content"]
    held = reread.answer("Murad II: 16 June 1404 – 3 February 1451\nMehmed II: 30 March 1432 – 3 May 1481")
    assert isinstance(held, Hold) and "So the answer is Mehmed II: Mehmed II lived longer." in held.message
    # three-digit years are dates too
    died = "Who died first, Hucbert or Teutberga?"
    other, (fresh,) = fake_run(hippo_index, "compare_dates", question=died)
    read(other, hippo_index, "Hucbert#0", "Teutberga#0")
    again = fresh.reread(other, "Teutberga [chunk Teutberga#0]")
    assert again is not None and "Hucbert( died 864)" in again.messages[-1]["content"]
    assert isinstance(again.answer("Hucbert: 864\nTeutberga: 11 November 875"), Hold)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("The film was directed by Edwin L. Marin.", ["Edwin L. Marin"]),  # an initial is no full stop
        ("written and directed by Satyajit Ray and based on a story", ["Satyajit Ray"]),
        ("directed by Murray Lerner, Lloyd Ritter and Robert M. Young.", ["Murray Lerner"]),
        ("a 1998 French film, directed by Éric Rohmer, starring Béatrice Romand", ["Éric Rohmer"]),
        ("directed by Ada Brenner. It was shot in Norway.", ["Ada Brenner"]),
        ("directed by Ludwig van Beethoven and produced by X", ["Ludwig van Beethoven"]),
        ("produced by Karl Olsen", []),  # another role's
        ("directed by him in 1950", []),
        ("directed by Madonna", []),  # one word: too little to find a document by
    ],
)
def test_a_text_names_the_holder_of_a_role(text: str, names: list[str]) -> None:
    assert holders_named(text, "director") == names


def test_read_holders_reads_a_role_holder_s_own_text_not_read_once(films_index: Index) -> None:
    question = "Which film has the director who was born later, Blue Lake or Red Sky?"
    off, (default,) = fake_run(films_index, "compare_dates", question=question)
    assert default.on_answer(read(off, films_index, "Blue Lake#0", "Red Sky#0"), "Blue Lake") is None  # off
    run, (policy,) = fake_run(films_index, "compare_dates", question=question, **HOLDERS)
    read(run, films_index, "Blue Lake#0", "Red Sky#0")
    held = policy.on_answer(run, "Blue Lake")
    assert isinstance(held, Hold) and held.read == ["Ada Brenner#0", "Karl Olsen#0"] and held.why
    assert "Blue Lake names its director Ada Brenner; Red Sky names its director Karl Olsen" in held.message
    assert held.message.endswith(question) and Harness([policy]).acted() == {"compare_dates": 1}
    assert policy.record(run) == {
        "holders": [
            {"option": "Blue Lake", "director": "Ada Brenner", "read": "Ada Brenner#0"},
            {"option": "Red Sky", "director": "Karl Olsen", "read": "Karl Olsen#0"},
        ]
    }
    assert policy.on_answer(run, "Blue Lake") is None  # once per question
    # one director read already: only the other's text; both read, or the step limit, or no role: nothing
    one, (fresh,) = fake_run(films_index, "compare_dates", question=question, **HOLDERS)
    read(one, films_index, "Blue Lake#0", "Red Sky#0", "Karl Olsen#0")
    again = fresh.on_answer(one, "Red Sky")
    assert isinstance(again, Hold) and again.read == ["Ada Brenner#0"]
    both, (other,) = fake_run(films_index, "compare_dates", question=question, **HOLDERS)
    read(both, films_index, "Blue Lake#0", "Red Sky#0", "Ada Brenner#0", "Karl Olsen#0")
    assert other.on_answer(both, "Red Sky") is None
    forced, (last,) = fake_run(films_index, "compare_dates", question=question, **HOLDERS)
    read(forced, films_index, "Blue Lake#0", "Red Sky#0").stop_reason = "max_steps"
    assert last.on_answer(forced, "Red Sky") is None
    plain, (dated,) = fake_run(
        films_index, "compare_dates", question="Which film was released first, Blue Lake or Red Sky?"
    )
    read(plain, films_index, "Blue Lake#0", "Red Sky#0")
    assert dated.on_answer(plain, "Blue Lake") is None


def test_read_holders_reads_both_directors_then_the_dates_decide(films_index: Index, server: ScriptedServer) -> None:
    question = "Which film has the director who was born later, Blue Lake or Red Sky?"

    def say(**fields: object) -> dict[str, object]:
        return completion(json.dumps({"found": "x", **fields}))

    films = [say(keyword_search=["Blue Lake", "Red Sky"]), say(chunk_read=["Blue Lake#0", "Red Sky#0"])]
    server.replies = [
        *films,
        say(answer="Blue Lake [chunk Blue Lake#0]"),  # from the films' years: wrong
        say(answer="Blue Lake [chunk Ada Brenner#0]"),  # the directors read: wrong again
        completion("Blue Lake: 3 October 1901\nRed Sky: 4 March 1938"),
        say(answer="Red Sky [chunk Karl Olsen#0]"),
    ]
    agent = local_json_agent(films_index, server, max_steps=6, policies=["+compare_dates", "-hop_read"], **HOLDERS)
    result = agent.run(question)
    assert result.stop_reason == "answered" and result.answer.startswith("Red Sky")
    assert {"Ada Brenner#0", "Karl Olsen#0"} <= set(result.read_chunks) and result.answer_from == "model"
    told = server.requests[3]["messages"][-1]["content"]
    assert "Ada Brenner (3 October 1901" in told and "Blue Lake names its director Ada Brenner" in told
    assert "So the answer is Red Sky: its director was born later." in server.requests[5]["messages"][-1]["content"]
    records = result.policy_records["compare_dates"]
    assert [h["director"] for h in records["holders"]] == ["Ada Brenner", "Karl Olsen"]
    assert records["dates"][0]["decided"] == "Red Sky" and len(server.requests) == 6


@given(question=st.text(max_size=80), answer=st.text(max_size=60), reply=st.text(max_size=120))
def test_compare_dates_takes_any_question_answer_and_reply(
    hippo_index: Index, question: str, answer: str, reply: str
) -> None:
    run, (policy,) = fake_run(hippo_index, "compare_dates", question=question)
    read(run, hippo_index, "Murad II#0", "Mehmed II#0")
    held = policy.on_answer(run, answer)
    assert held is None or (isinstance(held, Hold) and len(held.read) <= 2)
    reread = policy.reread(run, answer)
    assert (reread is None) == (compared(question) is None)
    if reread is not None:
        turned = reread.answer(reply)
        assert turned == answer or isinstance(turned, Hold)
    assert reading(hippo_index, ["no such chunk"], Comparison(("A", "B"), "date", later=False)).sentences == []


@given(
    question=st.sampled_from(
        ["Who lived longer, Murad II or Mehmed II?", "Who was born first, Murad II or Mehmed II?"]
    ),
    reply=st.text(alphabet=st.sampled_from("Murad IMehmd:0123456789 –-\nJunearchFbyuly,"), max_size=120),
)
def test_a_decision_rests_on_dates_the_text_read_holds(hippo_index: Index, question: str, reply: str) -> None:
    run, (policy,) = fake_run(hippo_index, "compare_dates", question=question)
    read(run, hippo_index, "Murad II#0", "Mehmed II#0")
    reread = policy.reread(run, "Murad II")
    assert reread is not None
    turned = reread.answer(reply)
    if isinstance(turned, Hold):
        text = " ".join(r.text for r in hippo_index.read(["Murad II#0", "Mehmed II#0"])[0])
        for option, copied in copied_dates(reply, ("Murad II", "Mehmed II")).items():
            assert all(str(day.year) in text for day in dates_in(copied)), option


def test_the_reach_keeps_every_result_it_does_not_reach_with_the_checks_time(tmp_path, hippo_index: Index) -> None:  # type: ignore[no-untyped-def]
    run = tmp_path / "runs" / "dev"
    run.mkdir(parents=True)
    (run / "config.json").write_text('{"method": "arag-full"}', encoding="utf-8")
    records = [{"id": name, "question": "q?", "latency_s": 10.0} for name in ("no call", "reached", "kept")]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    verdicts = {"no call": None, "reached": True, "kept": False}
    seen: list[Index] = []

    def check(index: Index, record: dict[str, object]) -> bool | None:
        seen.append(index)
        return verdicts[str(record["id"])]

    write_reach([run], tmp_path / "out", "compare_dates", check, index_of=lambda _run: hippo_index)
    written = tmp_path / "out" / "dev"
    assert (written / "compare_dates.ids").read_text() == "reached\n" and seen == [hippo_index] * 3
    kept = [json.loads(line) for line in (written / "results.jsonl").read_text().splitlines()]
    assert [r["id"] for r in kept] == ["no call", "kept"]
    assert kept[0]["latency_s"] == 10.0 and kept[1]["latency_s"] >= 10.0  # the check's call time is added
    assert json.loads((written / "config.json").read_text()) == {"method": "arag-full"}
