"""same_name: a search whose hits are different entities of one name says so, with what tells them apart."""

from __future__ import annotations

import re

from arag.harness.contract import Policy, RunView
from arag.harness.registry import register
from arag.index import title_of
from arag.store import ChunkRecord
from arag.tools.toolkit import ToolResult

SAME_NAME = (
    'These hits are {count} different entities called "{name}"; make sure you use the one the question means:\n'
    "{entities}"
)
CONTEXT_CHARS = 160  # of each entity's first sentence: dates, roles, places
MAX_LISTED = 5
_QUALIFIER = re.compile(r"\(([^()]*)\)\s*$")


@register
class SameName(Policy):
    """Entity confusion is the largest failure class once retrieval works (paper §5): two people called "John
    Smith", a film and its remake. When a search's hits come from two or more documents whose titles are one name
    (their qualifiers aside: "Fortunella (film)", "Fortunella (1958 film)") and that name is in the question or the
    search, the observation says so and lists each with its qualifier and its first sentence (dates, roles), so the
    model can choose the one the question means. In no profile by default (``--policy +same_name``)."""

    name = "same_name"
    summary = "hits that are different entities of one name are listed with what tells them apart"

    def after_result(self, run: RunView, result: ToolResult) -> str | None:
        if not result.ok or run.toolkit.canonical(result.name) == "chunk_read" or len(result.hits) < 2:
            return None
        index = run.toolkit.index
        records, _missing = index.read(list(result.hits))
        asked = " ".join([run.question, *(str(v) for v in (result.arguments or {}).values())]).lower()
        by_name: dict[str, list[ChunkRecord]] = {}
        for record in records:
            name = title_of(record.doc_id).strip()
            if len(name) >= 3 and name.lower() in asked:
                group = by_name.setdefault(name.lower(), [])
                if record.doc_id not in {r.doc_id for r in group}:
                    group.append(record)
        notes = []
        for group in by_name.values():
            if len(group) < 2:
                continue
            entities = []
            for record in group[:MAX_LISTED]:
                qualifier = _QUALIFIER.search(record.doc_id.rsplit("/", 1)[-1])
                # the first sentence, without the title a passage starts with
                sentences = [" ".join(t.split()).removeprefix(record.doc_id).strip() for t in index.sentences(record)]
                first = next((s for s in sentences if s), " ".join(record.text.split()))
                context = first[:CONTEXT_CHARS] + ("…" if len(first) > CONTEXT_CHARS else "")
                label = f"{title_of(record.doc_id)} ({qualifier.group(1)})" if qualifier else record.doc_id
                entities.append(f"- {label} [chunk {record.chunk_id}]: {context}")
            notes.append(
                SAME_NAME.format(name=title_of(group[0].doc_id), count=len(group), entities="\n".join(entities))
            )
        if not notes:
            return None
        self.acted()
        return "\n".join(notes)
