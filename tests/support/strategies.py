"""Hypothesis strategies shared by the fuzz tests of several surfaces."""

from __future__ import annotations

from hypothesis import strategies as st

# JSON-like values with the awkward parts: lone surrogates, huge integers, deep nesting, odd floats.
texts = st.text(alphabet=st.characters(codec=None, blacklist_categories=()), max_size=40) | st.sampled_from(
    ["\ud800", "a\udfffb", "", "   ", "Lothair II", "x" * 3000, "chunk 12", "[Waldrada#0]", '"', "\\", "\x00"]
)
numbers = (
    st.integers()
    | st.sampled_from([10**4000, -(10**4000), 0, -1, 2**63, 10**18 + 1])
    | st.floats(allow_nan=True, allow_infinity=True)
)
scalars = st.none() | st.booleans() | numbers | texts
# any JSON value built of them: what a client or a model can send where a-rag expects arguments
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4), max_leaves=12
)
