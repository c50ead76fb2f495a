"""shorter_keywords: a keyword that matches nothing is searched by its leading words."""

from __future__ import annotations

import json
import re

from arag.harness.contract import CallEdit, Policy, RunView
from arag.harness.reads import keywords_of
from arag.harness.registry import register
from arag.tools.arguments import safe_arguments
from arag.tools.toolkit import ToolCall

SHORTER_KEYWORDS = ": no chunk contains these keywords. Results for shorter keywords that match, {shorter}"
MAX_SHORTENINGS = 6  # searches tried per keyword that matches nothing
_POSSESSIVE = re.compile(r"['’]s?(?=\s|$)")


@register
class ShorterKeywords(Policy):
    """A small model repeats a keyword that matches nothing ("X's father"). When no chunk contains the search's
    keywords, the search shows what the longest leading words of each find (a possessive ends the head:
    "Maurice, Prince Of Orange's father" → "Maurice, Prince Of Orange"), and says so."""

    name = "shorter_keywords"
    summary = "a keyword search that matches nothing shows what the keywords' leading words find"

    def before_tool(self, run: RunView, call: ToolCall, header: str | None) -> CallEdit | None:
        keywords = keywords_of(run.toolkit, call)
        index = run.toolkit.index
        if not keywords or index.keyword_search(keywords, 1):
            return None
        shorter: list[str] = []
        for keyword in keywords:
            words = _POSSESSIVE.split(keyword, maxsplit=1)[0].split()
            for size in range(len(words), max(0, len(words) - MAX_SHORTENINGS), -1):
                candidate = " ".join(words[:size]).strip(" ,;:")
                if len(candidate) >= 3 and index.keyword_search([candidate], 1):
                    shorter.append(candidate)
                    break
        shorter = list(dict.fromkeys(shorter))
        if not shorter:
            return None
        self.acted()
        shown = header or f"keyword_search {json.dumps(keywords, ensure_ascii=False)}"
        return CallEdit(
            {**safe_arguments(call.arguments), "keywords": shorter},
            shown + SHORTER_KEYWORDS.format(shorter=json.dumps(shorter, ensure_ascii=False)),
        )
