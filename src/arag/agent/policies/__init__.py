"""The agent's policies: named behaviours on top of the paper's loop, one module each (protocol: base.py).

A profile (arag/agent/profiles/*.toml) lists the ones it runs, in the order their hooks are asked;
``agent.policies`` switches one on or off for a run ('-plan', '+plan'). A policy switched on joins at its place in
``HOOK_ORDER`` among the profile's others: where it was when it was measured, since the first policy to hold an
answer or take a repeated call decides."""

from arag.agent.policies import (  # noqa: F401 - each module registers its policy
    choice_answers,
    closest_sentence,
    common_keywords,
    confident_stop,
    found_notes,
    grounded_answer,
    new_text_reads,
    opening_search,
    option_check,
    phrase_answer,
    plan,
    read_allowance,
    read_before_answer,
    repeat_reads,
    same_name,
    search_first,
    short_answer,
    shorter_keywords,
    stall_answer,
    supported_answer,
    switch_search,
)
from arag.agent.policies.base import POLICIES, Hold, Policy, Reread, Stands, register

# Every policy, in the order their hooks are asked. The compact profile lists its own in this order;
# option_check held answers before grounded_answer while it was in the default, and the policies beyond the
# paper (issue 30) were measured switched on after all the others.
HOOK_ORDER: tuple[str, ...] = (
    "opening_search",
    "search_first",
    "plan",
    "found_notes",
    "short_answer",
    "choice_answers",
    "new_text_reads",
    "read_allowance",
    "common_keywords",
    "shorter_keywords",
    "read_before_answer",
    "option_check",
    "grounded_answer",
    "repeat_reads",
    "switch_search",
    "stall_answer",
    "closest_sentence",
    "phrase_answer",
    "supported_answer",
    "same_name",
    "confident_stop",
)

__all__ = ["HOOK_ORDER", "POLICIES", "Hold", "Policy", "Reread", "Stands", "register"]
