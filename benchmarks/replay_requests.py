"""Record every model request of an arag command, then replay the recorded replies through another build: whether
a change to the agent changed anything it sends the model.

    # the build before the change (a checkout of it, with this venv): every request and reply to LOG
    PYTHONPATH=../before/src python benchmarks/replay_requests.py record LOG -- eval run ... --out runs/before
    # this build: each request answered with the reply recorded for the very same request
    python benchmarks/replay_requests.py replay LOG -- eval run ... --out runs/after
    # record by record: the answer, the trajectory, what the policies did and recorded
    python benchmarks/replay_requests.py compare runs/before runs/after

A request (messages, tools, response_format) the log does not hold is a difference: it is written to LOG.misses
and answered with an empty reply, and the count is printed. A reply the model server's parser rejected is recorded
as such and rejected again on replay. With no miss, the two builds sent the same requests
and, the replies being the same, recorded the same runs: the comparison is exact, where re-running a local model
is not always bit-identical (llama.cpp's batches and KV cache reuse change near-tie tokens). The replay needs no
model: it runs in seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

from arag.errors import OutputRejected
from arag.models import choice, endpoint
from arag.models.endpoint import ChatTurn, Usage


def request_key(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    response_format: dict[str, Any] | None,
    parallel_tool_calls: bool | None,
) -> str:
    request = {
        "messages": messages,
        "tools": tools,
        "response_format": response_format,
        "parallel": parallel_tool_calls,
    }
    return json.dumps(request, sort_keys=True)


def same_record(record: dict[str, Any]) -> dict[str, Any]:
    """What must be equal in two runs of the same requests and replies (a record of before the harness, with its
    plan, rereads and steps' confidences, read in today's terms)."""
    records = dict(record.get("policy_records") or {})
    if record.get("plan"):
        records.setdefault("plan", {"plan": record["plan"]})
    for reread in record.get("rereads") or []:
        records.setdefault(reread["policy"], {})["reread"] = {"before": reread["before"], "after": reread["after"]}
    stated = [s["confidence"] for s in record["trajectory"] if s.get("origin") == "model" and "confidence" in s]
    if "confident_stop" in record["policies_acted"] and stated:
        records.setdefault("confident_stop", {"stated": stated})
    steps = [
        {k: step.get(k) for k in ("tool", "arguments", "observation", "retrieved_tokens", "thought", "origin", "why")}
        for step in record["trajectory"]
    ]
    kept = ("prediction", "stop_reason", "answer_from", "policies_acted", "retrieved_tokens", "retrieved_chunks")
    return {**{k: record.get(k) for k in kept}, "steps": steps, "policy_records": records}


def compare(before: Path, after: Path) -> int:
    """Print the records of ``after`` that differ from ``before``'s; return how many do."""
    old = {r["id"]: r for r in map(json.loads, (before / "results.jsonl").open(encoding="utf-8"))}
    new = {r["id"]: r for r in map(json.loads, (after / "results.jsonl").open(encoding="utf-8"))}
    both = [q for q in old if q in new]
    differ = 0
    for qid in both:
        a, b = same_record(old[qid]), same_record(new[qid])
        if a != b:
            differ += 1
            keys = [k for k in a if a[k] != b[k]]
            print(f"{qid}: {', '.join(keys)} differ: {a['prediction']!r} → {b['prediction']!r}")
    print(f"{len(both) - differ} of {len(both)} records the same")
    return differ


def record(log: Path) -> None:
    """Every chat completion of this process is appended to ``log``: its request and its reply."""
    lock = threading.Lock()
    handle = log.open("a", encoding="utf-8")
    original = endpoint.ChatModel.complete

    def complete(
        self: endpoint.ChatModel,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        parallel_tool_calls: bool | None = None,
        deadline: float | None = None,
    ) -> ChatTurn:
        key = request_key(messages, tools, response_format, parallel_tool_calls)  # before the run appends to it
        try:
            turn = original(self, messages, tools, response_format, parallel_tool_calls, deadline)
        except OutputRejected as exc:  # the server's parser refused the constrained output: the loop asks again
            with lock:
                handle.write(json.dumps({"request": json.loads(key), "rejected": str(exc)}) + "\n")
            raise
        with lock:
            handle.write(json.dumps({"request": json.loads(key), "turn": asdict(turn)}) + "\n")
            handle.flush()
        return turn

    endpoint.ChatModel.complete = complete  # type: ignore[method-assign]


class Replay:
    """A chat model that answers each request with the reply recorded for the very same request."""

    model = "replay"
    local = True  # the recorded runs were of the embedded model: the same profile and actions

    def __init__(self, log: Path) -> None:
        self.replies: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.fallbacks: set[str] = set()  # the messages of requests made without the grammar
        for line in log.open(encoding="utf-8"):
            entry = json.loads(line)
            self.replies[json.dumps(entry["request"], sort_keys=True)].append(entry.get("turn") or entry)
            if entry["request"]["response_format"] is None:
                self.fallbacks.add(json.dumps(entry["request"]["messages"], sort_keys=True))
        self.misses = (log.parent / f"{log.name}.misses").open("w", encoding="utf-8")
        self.hits = self.missed = 0

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
        key = request_key(messages, tools, response_format, parallel_tool_calls)
        found = self.replies.get(key)
        if not found and response_format and json.dumps(messages, sort_keys=True) in self.fallbacks:
            # a log of a recorder that kept no rejections: the same messages were asked again without the grammar,
            # which the loop does only after the server's parser rejected the constrained reply
            raise OutputRejected("recorded as asked again without the grammar")
        if not found:
            self.missed += 1
            self.misses.write(key + "\n")
            self.misses.flush()
            return ChatTurn({"role": "assistant", "content": ""}, "", [], "stop", Usage())
        self.hits += 1
        turn = found.pop(0) if len(found) > 1 else found[0]  # the same request twice: its replies in order
        if "rejected" in turn:
            raise OutputRejected(turn["rejected"])
        usage = Usage(**turn["usage"])
        timings = turn.get("timings") or {}
        return ChatTurn(turn["message"], turn["content"], turn["tool_calls"], turn["finish_reason"], usage, timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["record", "replay", "compare"])
    parser.add_argument("log", type=Path, help="the JSON Lines log of requests and replies (compare: a run)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the arag command (compare: a run)")
    args = parser.parse_args()
    if args.mode == "compare":
        sys.exit(1 if compare(args.log, Path(args.command[-1])) else 0)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    replay = None
    if args.mode == "record":
        record(args.log)
    else:
        replay = Replay(args.log)
        choice.chat_model = lambda *_args, **_kwargs: (replay, True)  # type: ignore[assignment]
    from arag.serve.cli import main as arag

    sys.argv = ["arag", *command]
    try:
        arag()
    finally:
        if replay is not None:
            print(f"replayed {replay.hits} requests; {replay.missed} not in the log", file=sys.stderr)


if __name__ == "__main__":
    main()
