"""A model that answers any request the agent makes at random, within its grammar: a tool call or an answer of
any shape the JSON schema (or the native tools) allows, now and then an empty or broken reply or its last action
again (a repeat; after one, often another). Its draw depends only on its seed and the request, so two runs stay in
step for as long as their requests are equal: what the harness's property tests compare."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any

from arag.models.endpoint import ChatTurn, Usage

WORDS = [
    "Lothair II", "Ermengarde", "Hucbert", "Teutberga", "Waldrada", "director", "father", "the", "Town 7",
    "Person 1", "Fortunella", "Zyxwv", "Lothair II's mother", "Tours", "film", "born", "Boso", "queen",
]  # fmt: skip
ANSWERS = [
    "nothing yet", "unknown", "Yes", "No", "Tours", "20 March 851", "Lothair II", "I do not know", "",
    "Ermengarde of Tours was the daughter of Hugh of Tours and she married Lothair I in 821.",
    "Town 7 [chunk Town 7#0]", "Person 3 [chunk Person 3#0#0]", "Fortunella [chunk Made up#1]", "x" * 260,
]  # fmt: skip
PHRASES = [
    "20 March 851",
    'Answer: "Tours" [chunk X#1]\nbecause',
    "unknown",
    "",
    "Ermengarde of Tours",
    "Yes.",
    "Hucbert: 864\nAnne of Kiev: 5 September 1075",  # compare_dates's copied dates
]
_SEEN = re.compile(r"chunk ([^\]\s,:()]+(?: [^\]\s,:()#]+)*#\d+)")


class RandomModel:
    """A chat model (the agent's ``complete`` interface) that answers at random; ``requests`` holds every request
    it was sent, as JSON."""

    model = "random"

    def __init__(self, seed: int, local: bool = True) -> None:
        self.seed, self.local = seed, local
        self.requests: list[str] = []
        self._last = ""
        self._last_calls: list[dict[str, Any]] = []
        self._repeated = False

    def cost(self, usage: Usage) -> None:
        return None

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        parallel_tool_calls: bool | None = None,
        deadline: float | None = None,
    ) -> ChatTurn:
        request = json.dumps(
            {"messages": messages, "tools": tools, "response_format": response_format, "parallel": parallel_tool_calls},
            sort_keys=True,
        )
        self.requests.append(request)
        rng = random.Random(f"{self.seed}:{hashlib.sha256(request.encode()).hexdigest()}")
        seen = sorted(set(_SEEN.findall(request)))[:30]
        calls: list[dict[str, Any]] = []
        # a model that repeated itself tends to go on repeating (the loops a 1.5B model falls into)
        repeatable = bool(self._last or (self._last_calls and tools))
        repeat = rng.random() < (0.5 if self._repeated else 0.12) and repeatable
        if repeat and self._last:
            content = self._last  # the same action again: a repeat
        elif repeat:
            content, calls = "", [{**c, "id": f"call_{len(self.requests)}"} for c in self._last_calls]
        elif rng.random() < 0.04:
            content = rng.choice(["", "not json {", '{"answer": "cut off'])
        elif response_format:
            content = json.dumps(self._fill(response_format["json_schema"]["schema"], rng, seen))
        elif tools and rng.random() < 0.7:
            tool = rng.choice(tools)["function"]
            arguments = json.dumps(self._fill(tool["parameters"], rng, seen))
            function = {"name": tool["name"], "arguments": arguments}
            calls = [{"id": f"call_{len(self.requests)}", "type": "function", "function": function}]
            content = rng.choice(["", "confidence: 0.9", "confidence 30%"])
        elif tools is None and response_format is None and messages[0]["role"] == "system" and len(messages) == 2:
            content = rng.choice(PHRASES)  # a reread: no tools, no grammar, a fresh conversation
        else:
            content = rng.choice(ANSWERS)
        self._last = "" if calls else content
        self._last_calls, self._repeated = calls, repeat
        message: dict[str, Any] = {"role": "assistant", "content": content, **({"tool_calls": calls} if calls else {})}
        return ChatTurn(message, content, calls, "stop", Usage(len(request) // 4, len(content) // 4, 0, 1))

    def _fill(self, schema: dict[str, Any], rng: random.Random, seen: list[str]) -> Any:
        if "anyOf" in schema:
            return self._fill(rng.choice(schema["anyOf"]), rng, seen)
        if "enum" in schema:
            return rng.choice(schema["enum"])
        kind = schema.get("type")
        if kind == "object":
            required = schema.get("required", [])
            properties = schema.get("properties", {}).items()
            return {k: self._fill(v, rng, seen) for k, v in properties if k in required or rng.random() < 0.5}
        if kind == "array":
            items = schema.get("items", {})
            count = rng.randint(schema.get("minItems", 1), min(schema.get("maxItems", 3), 3))
            pool = items.get("enum") or [*WORDS, *seen, "hit 1", "hit 2", "[Lothair II#0]", "Made up#9"]
            return [rng.choice(pool) for _ in range(count)]
        if kind == "number":
            return rng.choice([0.1, 0.5, 0.9, 1.0])
        if kind == "integer":
            return rng.choice([1, 3, 5, 30])
        if kind == "string" and "pattern" in schema:
            return rng.choice(["Yes", "No", "Yes, both are.", "No, she died first [chunk Hucbert#0]"])
        if kind == "string":
            text = rng.choice([*ANSWERS, *WORDS, *seen])
            return text[: schema["maxLength"]] if "maxLength" in schema else text
        return None


def varied_corpus(folder: Path) -> Path:
    """The tests' corpus, and what makes every policy act somewhere on it: words in most chunks (120 biographies),
    two films of one name, a long chunk a read is focused in, a heading that asks, one a question describes. Written as
    ``folder``/corpus.json."""
    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    docs = json.loads((fixtures / "hipporag_corpus.json").read_text(encoding="utf-8"))
    docs += [
        {
            "title": f"Person {i}",
            "text": f"Person {i} was a film director, an art director and a stage director. "
            f"His father was a director too. He was born in Town {i}.",
        }
        for i in range(120)
    ]
    facts = " ".join(f"Fact number {i} about Lothair II and the abbey is stated in this sentence." for i in range(60))
    docs += [
        {"title": "Fortunella (film)", "text": "Fortunella is a 1958 Italian film by Eduardo De Filippo."},
        {"title": "Fortunella (1958 film)", "text": "Fortunella is a 1958 film directed by Eduardo De Filippo."},
        {
            "title": "Town 7",
            "text": "Town 7 is a village. Its mayor was a former director. "
            # one a question describes ("the monk who keeps the scriptorium ledger"): described_hop
            "The scriptorium ledger of Town 7 is kept by Brother Anselm, who copies the charters.",
        },
        {"title": "Long chronicle", "text": f"What is the chronicle? {facts}"},
        {"title": "Brother Anselm", "text": "Brother Anselm joined the abbey in 842 and died in 870."},
    ]
    path = folder / "corpus.json"
    path.write_text(json.dumps(docs), encoding="utf-8")
    return path
