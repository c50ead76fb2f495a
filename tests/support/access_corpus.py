"""Documents with access, generated: who may read what (tests/test_principals.py, tests/test_served_principals.py)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import strategies as st

GROUPS = ["hr", "finance", "eng"]
WORDS = ["salary", "budget", "review", "Portland", "leave", "deploy", "audit", "travel", "policy", "2026"]
ACCESS = st.one_of(st.none(), st.just([]), st.lists(st.sampled_from(GROUPS), min_size=1, max_size=2, unique=True))
TEXT = st.lists(st.lists(st.sampled_from(WORDS), min_size=3, max_size=9).map(lambda w: " ".join(w).capitalize() + "."),
                 min_size=1, max_size=12).map(" ".join)  # fmt: skip
DOCUMENTS = st.lists(st.tuples(TEXT, ACCESS), min_size=1, max_size=8)


def write_documents(folder: Path, documents: list[tuple[str, list[str] | None]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for n, (text, access) in enumerate(documents):
        record: dict[str, object] = {"id": f"doc{n}", "title": f"Doc {n}", "text": text}
        if access is not None:
            record["access"] = access
        lines.append(json.dumps(record))
    (folder / "docs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def readable_lines(path: Path, documents: list[tuple[str, list[str] | None]], groups: list[str]) -> list[str]:
    """The JSON Lines of ``path`` (written by :func:`write_documents`) that a reader of ``groups`` may read."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [
        line
        for line, (_text, access) in zip(lines, documents, strict=True)
        if access is None or set(access) & set(groups)
    ]
