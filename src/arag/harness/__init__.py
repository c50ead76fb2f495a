"""The small-model harness: named policies on top of the paper's loop, behind a contract.

``contract.py`` is what a policy sees of a run and the effects it may return; ``compose.py`` combines a bundle's
effects for the loop (and is the one place where their order is declared); ``policies/`` holds one module per
policy, each with its settings, its messages and its reasons; ``profiles/`` the packaged bundles; ``view.py`` the
compact result view; ``grammar.py`` the JSON actions' grammar; ``prompts.py`` the compact prompt; ``text.py`` and
``reads.py`` what the policies share. The paper's agent (arag.agent) asks this package for a bundle and names no
policy."""

from arag.harness.compose import ORDER, Harness
from arag.harness.contract import (
    Allow,
    Base,
    CallEdit,
    Constraint,
    Field,
    Hold,
    Limits,
    NextAction,
    Offer,
    Policy,
    ReadInstead,
    Refuse,
    Reread,
    Revised,
    RunView,
    Search,
    Stands,
    Start,
)
from arag.harness.profiles import PROFILES, Bundle, describe_policies, load_profile, resolve
from arag.harness.registry import POLICIES, register
from arag.harness.text import choice_options, yes_no_question

__all__ = [
    "ORDER",
    "POLICIES",
    "PROFILES",
    "Allow",
    "Base",
    "Bundle",
    "CallEdit",
    "Constraint",
    "Field",
    "Harness",
    "Hold",
    "Limits",
    "NextAction",
    "Offer",
    "Policy",
    "ReadInstead",
    "Refuse",
    "Reread",
    "Revised",
    "RunView",
    "Search",
    "Stands",
    "Start",
    "choice_options",
    "describe_policies",
    "load_profile",
    "register",
    "resolve",
    "yes_no_question",
]
