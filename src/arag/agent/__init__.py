"""The A-RAG agent (paper §3.3). ``loop.py`` is the paper's loop; ``policies/`` the named small-model behaviours
a profile (``profiles/*.toml``) bundles; ``actions.py`` how the model acts; ``prompts.py`` every string it reads;
``state.py`` what one run accumulates; ``conversation.py`` questions that follow one another."""

from arag.agent.conversation import Conversation, Turn
from arag.agent.loop import Agent
from arag.agent.questions import MAX_QUESTION_CHARS, check_question, choice_options, yes_no_question
from arag.agent.state import STOP_REASONS, AgentResult, RunState, Step

__all__ = [
    "MAX_QUESTION_CHARS",
    "STOP_REASONS",
    "Agent",
    "AgentResult",
    "Conversation",
    "RunState",
    "Step",
    "Turn",
    "check_question",
    "choice_options",
    "yes_no_question",
]
