"""The agent's policies: named behaviours on top of the paper's loop, one module each (protocol: base.py).

A profile (arag/agent/profiles/*.toml) lists the ones it runs, in the order their hooks are asked;
``agent.policies`` switches one on or off for a run ('-plan', '+plan')."""

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
from arag.agent.policies.base import POLICIES, Hold, Policy, Stands, register

__all__ = ["POLICIES", "Hold", "Policy", "Stands", "register"]
