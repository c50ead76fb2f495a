"""One question's policies, composed: the loop asks this module, and it asks the policies and combines their
effects (arag.harness.contract). Effects combine without regard to the order in which a profile lists its
policies: tools removed and fields asked for are unions, the ids a read may name and an answer's options are
intersections, limits and answer lengths are minimums.

Where order must matter, it is declared here, in :data:`ORDER`, and nowhere else. A policy a hook does not name in
its order comes after the named ones, in the order of names."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from arag.errors import ConfigError
from arag.harness.contract import (
    Base,
    Field,
    Hold,
    Limits,
    NextAction,
    Offer,
    Policy,
    RepeatOutcome,
    Reread,
    Revised,
    RunView,
    Start,
)
from arag.tools.toolkit import ToolCall, ToolResult

ORDER: dict[str, tuple[str, ...]] = {
    # The first policy to hold an answer decides; the ones after it are not asked, so each keeps its one hold for a
    # later answer. plan first: an answer before the plan's searches is the commonest early answer; option_check
    # held before grounded_answer while it was in the default (measured so, docs/results.md "option_check"); hop_read
    # before the checks of what the answer rests on: the text it reads may change the answer; described_hop after
    # it, for the same reason.
    "hold": (
        "plan",
        "read_before_answer",
        "hop_read",
        "described_hop",
        "option_check",
        "evidence_ledger",
        "grounded_answer",
        "supported_answer",
    ),
    # The first outcome for a repeated call decides: an answer held back by the plan stands; else the search's
    # unread hits are read instead; else the other search tool is offered; stall_answer counts the refusal left.
    # hop_read and described_hop before repeat_reads: the next hop's text is worth more than the latest search's next
    # hit.
    # repeat_stop first: it answers no repeat, and is asked of every one to record the one that ends the search.
    "repeat": ("repeat_stop", "plan", "hop_read", "described_hop", "repeat_reads", "switch_search", "stall_answer"),
    # Call edits apply in turn, each to the call as the one before left it: shorter_keywords shortens the keywords
    # that common_keywords kept, and adds to its header.
    "edit": ("common_keywords", "shorter_keywords"),
    # Answer revisions apply in turn: an answer cut to its cap keeps its whole sentences, then its citations are
    # mended (or the closest sentence read stands in for a placeholder); last, the evidence ledger turns a refusal
    # into "Not in the documents (searched for: …)" and cites the chunk read that holds the answer; absent_words
    # after it, so that its "no document uses …" is the answer a question about what no document mentions ends with.
    "revise": ("short_answer", "grounded_answer", "evidence_ledger", "absent_words"),
    # Notes follow a result in this order (they never meet today: closest_sentence notes reads, same_name searches).
    "note": ("closest_sentence", "same_name"),
    # Opening calls are made, start messages said and rereads asked in this order: the answer is checked as it
    # will be shown, after phrase_answer shortened it; compare_dates and next_hop (never both: one asks either-or
    # questions, the other never does) send an answer back before answer_check could refuse it.
    "opening": ("opening_search",),
    "start": ("confident_stop",),
    "reread": ("phrase_answer", "compare_dates", "next_hop", "answer_check"),
}


def in_order(policies: Sequence[Policy], hook: str) -> list[Policy]:
    """The policies in the order ``hook`` is asked: the ones :data:`ORDER` names, as it names them, then the
    others by name."""
    declared = ORDER.get(hook, ())
    rank = {name: i for i, name in enumerate(declared)}
    return sorted(policies, key=lambda p: (rank.get(p.name, len(declared)), p.name))


def declared_fields(policies: Sequence[Policy]) -> dict[str, Field]:
    """Every field the policies add to JSON actions, by name; two of one name, or two notes, are a bundle that
    cannot run."""
    fields: dict[str, Field] = {}
    for policy in in_order(policies, "fields"):
        for item in policy.fields():
            if item.name in fields:
                raise ConfigError(f"policy {policy.name}: the action field {item.name!r} is another policy's too")
            fields[item.name] = item
    notes = [f.name for f in fields.values() if f.place == "note"]
    if len(notes) > 1:
        raise ConfigError(f"policies ask for two notes on each action ({', '.join(notes)}): switch one off")
    return fields


class Harness:
    """One question's policies (fresh instances: a policy's state is one question's), composed for the loop."""

    def __init__(self, policies: Sequence[Policy], fields: dict[str, Field] | None = None) -> None:
        self.policies = list(policies)
        self.fields = declared_fields(self.policies) if fields is None else fields

    # ------------------------------------------------------------------ before the first action
    def start(self, run: RunView) -> Start:
        limits, says = Limits(), []
        for policy in in_order(self.policies, "start"):
            start = policy.start(run)
            if start is not None:
                limits = limits.combine(start.limits)
                says += [start.says] if start.says else []
        return Start(limits, "\n\n".join(says))

    def openings(self, run: RunView) -> Iterator[ToolCall]:
        for policy in in_order(self.policies, "opening"):
            if (call := policy.opening(run)) is not None:
                yield call

    # ------------------------------------------------------------------ each action
    def next_action(self, run: RunView, base: Base) -> NextAction:
        """What the next action may be: first which tools are offered and whether the model may (or must) answer,
        then, given that, the shape of the action."""
        allows = [a for p in self.policies if (a := p.allow(run, base)) is not None]
        without = frozenset().union(*(a.without for a in allows))
        offer = Offer(
            tuple(t for t in base.tools if t not in without),
            all(a.answer for a in allows),
            base.forced or any(a.final for a in allows),
            base.constrained,
            base.forced,
        )
        constraints = [c for p in self.policies if (c := p.constrain(run, offer)) is not None]
        readable = _intersection([c.readable for c in constraints if c.readable is not None])
        options = _intersection([c.options for c in constraints if c.options])
        lengths = [c.answer_chars for c in constraints if c.answer_chars is not None]
        asked = {name for c in constraints for name in c.fields}
        unknown = asked - set(self.fields)
        assert not unknown, f"a policy asked for fields no policy declared: {sorted(unknown)}"
        return NextAction(
            offer.tools,
            offer.answer,
            offer.final,
            offer.constrained,
            readable,
            min(lengths) if lengths else None,
            options or (),
            any(c.yes_no for c in constraints),
            tuple(f for name, f in self.fields.items() if name in asked),
        )

    def revise(self, run: RunView, answer: str) -> Revised:
        return self._in_turn("revise", run, answer)

    def settle(self, run: RunView, answer: str) -> Revised:
        return self._in_turn("settle", run, answer)

    def _in_turn(self, hook: str, run: RunView, answer: str) -> Revised:
        """An answer edited by each policy's ``hook`` in turn (``revise`` or ``settle``), each on the one before's."""
        source = None
        for policy in in_order(self.policies, hook):
            revised = getattr(policy, hook)(run, answer)
            if revised is not None:
                answer, source = revised.answer, revised.source or source
        return Revised(answer, source)

    def hold(self, run: RunView, answer: str) -> Hold | None:
        return next((h for p in in_order(self.policies, "hold") if (h := p.on_answer(run, answer)) is not None), None)

    def on_repeat(self, run: RunView, call: ToolCall) -> RepeatOutcome | None:
        return next((o for p in in_order(self.policies, "repeat") if (o := p.on_repeat(run, call)) is not None), None)

    def edit(self, run: RunView, call: ToolCall) -> tuple[ToolCall, str | None]:
        """A new call as it will run, and the first words of its result if a policy changed it."""
        header = None
        for policy in in_order(self.policies, "edit"):
            edit = policy.before_tool(run, call, header)
            if edit is not None:
                call, header = ToolCall(call.name, edit.arguments, call.call_id), edit.header
        return call, header

    def after_tool(self, run: RunView, call: ToolCall, result: ToolResult) -> None:
        for policy in self.policies:
            policy.after_tool(run, call, result)

    def notes(self, run: RunView, result: ToolResult) -> list[str]:
        return [n for p in in_order(self.policies, "note") if (n := p.after_result(run, result))]

    def rereads(self) -> Iterator[tuple[str, Callable[[RunView, str], Reread | None]]]:
        for policy in in_order(self.policies, "reread"):
            yield policy.name, policy.reread

    # ------------------------------------------------------------------ what the result records
    def acted(self) -> dict[str, int]:
        return {p.name: p.times_acted for p in self.policies if p.times_acted}

    def records(self, run: RunView) -> dict[str, dict[str, Any]]:
        return {p.name: record for p in self.policies if (record := p.record(run))}


def _intersection(lists: Sequence[Sequence[str]]) -> tuple[str, ...] | None:
    """The items in every list, in the order of the shortest (ties: the smallest), so that the result does not
    depend on the order of the lists; None when there are none."""
    if not lists:
        return None
    first = min(lists, key=lambda items: (len(items), tuple(items)))
    others = [set(items) for items in lists]
    return tuple(item for item in first if all(item in other for other in others))
