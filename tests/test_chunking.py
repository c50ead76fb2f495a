from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from arag.corpus.chunking import chunk_document, count_tokens, split_sentences


def sentences(text: str) -> list[str]:
    return [text[s.start : s.end].strip() for s in split_sentences(text)]


def test_abbreviations_initials_decimals_quotes() -> None:
    text = (
        "Dr. John Smith worked at St. Louis University. He measured 3.14 ± 0.02 for the ratio. "
        'J. R. R. Tolkien wrote "The Hobbit." It sold well! Did it? Yes, e.g. in the U.S. market. The end.'
    )
    assert sentences(text) == [
        "Dr. John Smith worked at St. Louis University.",
        "He measured 3.14 ± 0.02 for the ratio.",
        'J. R. R. Tolkien wrote "The Hobbit."',
        "It sold well!",
        "Did it?",
        "Yes, e.g. in the U.S. market.",
        "The end.",
    ]


def test_lowercased_reference_text_splits() -> None:
    text = "teutberga ( died 11 november 875 ) was a queen. she was a daughter of boso the elder."
    assert sentences(text) == [
        "teutberga ( died 11 november 875 ) was a queen.",
        "she was a daughter of boso the elder.",
    ]


def test_paragraphs_and_lists_split() -> None:
    text = "# Title\n\nFirst paragraph without a period\n\n- item one\n- item two\nlast line"
    assert sentences(text) == ["# Title", "First paragraph without a period", "- item one", "- item two\nlast line"]


def test_a_numbered_items_marker_stays_with_its_item() -> None:
    # a PDF's list as its text layer gives it: "4." alone would be a sentence, shown as a search's snippet
    text = "Orchard rules\n3. Report any injury on the same day.\n4. Children under 12 stay with an adult.\niv. Dogs."
    assert sentences(text) == [
        "Orchard rules",
        "3. Report any injury on the same day.",
        "4. Children under 12 stay with an adult.",
        "iv. Dogs.",
    ]
    # a number that ends a sentence is not a marker; a marker after a sentence on the same line still is
    assert sentences("The fee went up to 12. It was 10. 4. Children stay with an adult.") == [
        "The fee went up to 12.",
        "It was 10.",
        "4. Children stay with an adult.",
    ]
    assert sentences("Founded in 1990. 2024. Not a marker.") == ["Founded in 1990.", "2024.", "Not a marker."]


def test_a_markdown_heading_is_a_sentence_of_its_own_also_without_a_blank_line_after_it() -> None:
    text = "# Projects\n\n## Deep Carbon\nDeep Carbon measures carbon. It is led by Jonas Berg.\n### Notes\n- one"
    assert sentences(text) == [
        "# Projects",
        "## Deep Carbon",
        "Deep Carbon measures carbon.",
        "It is led by Jonas Berg.",
        "### Notes",
        "- one",
    ]
    assert sentences("#hashtag\nnext line") == ["#hashtag\nnext line"]  # no space after "#": no heading


def test_a_chunk_never_ends_with_a_heading_whose_section_begins_in_the_next() -> None:
    filler = " ".join(f"Sentence number {i} fills the section." for i in range(12))
    text = f"# Guide\n\n{filler}\n\n## Deployments\n\n### Trains\nThe release train leaves every Tuesday. {filler}"
    for budget in range(20, 200, 3):  # every place a chunk boundary can fall near the headings
        chunks = chunk_document(text, budget)
        assert "".join(c.text for c in chunks) == text and all(c.n_tokens <= budget for c in chunks)
        assert not any(re.search(r"(?m)^#{1,6} [^\n]*\s*\Z", c.text) for c in chunks[:-1]), budget
        (holder,) = [c for c in chunks if "## Deployments" in c.text]
        assert "### Trains\nThe release train leaves every Tuesday." in holder.text, budget


def test_etc_before_capital_ends_sentence() -> None:
    assert sentences("We bought apples, pears, etc. Then we left.") == [
        "We bought apples, pears, etc.",
        "Then we left.",
    ]


def test_spans_tile_text_exactly() -> None:
    text = "  Leading space. Trailing space.   \n\n  "
    spans = split_sentences(text)
    assert "".join(text[s.start : s.end] for s in spans) == text


def test_long_sentence_is_cut_and_chunks_respect_budget() -> None:
    text = ("word " * 900).strip() + ". Short one. " + "Another sentence here. " * 30
    chunks = chunk_document(text, chunk_tokens=100)
    assert "".join(c.text for c in chunks) == text
    assert all(c.n_tokens <= 100 for c in chunks)
    assert all(count_tokens(c.text) <= 110 for c in chunks)  # BPE merges across pieces differ by a few tokens


text_strategy = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "Dr.",
                "e.g.",
                "3.14",
                "U.S.",
                "J.",
                "etc.",
                "end.",
                "Why?",
                "Wow!",
                '"Quote."',
                "\n\n",
                "- item",
                "ünïcödé",
                "   ",
                "\t",
            ]
        ),
        st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "Zs")), min_size=1, max_size=12),
    ),
    min_size=0,
    max_size=120,
).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(text_strategy, st.integers(min_value=16, max_value=200))
def test_chunking_properties(text: str, budget: int) -> None:
    spans = split_sentences(text)
    # sentences tile the text: nothing lost, nothing duplicated
    assert "".join(text[s.start : s.end] for s in spans) == text
    assert all(s.end > s.start for s in spans)
    chunks = chunk_document(text, chunk_tokens=budget)
    assert "".join(c.text for c in chunks) == text
    boundaries = {s.start for s in spans} | {len(text)}
    for chunk in chunks:
        assert chunk.n_tokens <= budget
        # chunk sentences tile the chunk
        assert "".join(chunk.text[s.start : s.end] for s in chunk.sentences) == chunk.text
    # a chunk ends on a sentence boundary unless a too-long sentence had to be cut
    for chunk in chunks:
        if chunk.end not in boundaries:
            assert count_tokens(text[chunk.start :]) > budget
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))


def test_dotted_acronym_before_a_name_does_not_split() -> None:
    assert sentences("He was the last U.S. Navy officer to die. Then peace came.") == [
        "He was the last U.S. Navy officer to die.",
        "Then peace came.",
    ]
