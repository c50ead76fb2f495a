"""The A-RAG agent (paper §3.3). ``loop.py`` is the paper's loop; ``actions.py`` how the model acts; ``prompts.py``
every string the loop says; ``state.py`` what one run accumulates; ``conversation.py`` questions that follow one
another. A profile's policies (arag.harness) shape what the model may do at each step, behind a contract; this
package names none of them."""

from arag.agent.conversation import Conversation, Turn
from arag.agent.loop import Agent
from arag.agent.questions import MAX_QUESTION_CHARS, check_question
from arag.agent.state import STOP_REASONS, AgentResult, RunState, Step
from arag.harness.text import choice_options, yes_no_question

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
