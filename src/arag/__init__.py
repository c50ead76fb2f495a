"""A-RAG: agentic retrieval-augmented generation with hierarchical retrieval interfaces."""

from arag.agent import Agent, AgentResult, Conversation
from arag.api import ask, conversation, make_agent, open_index, stream
from arag.corpus.build import build_index
from arag.corpus.watch import watch_sources
from arag.errors import ARagError
from arag.index import Index, SearchHit
from arag.settings import Settings, load_settings
from arag.tools import Toolkit
from arag.version import __version__

__all__ = [
    "ARagError",
    "Agent",
    "AgentResult",
    "Conversation",
    "Index",
    "SearchHit",
    "Settings",
    "Toolkit",
    "__version__",
    "ask",
    "build_index",
    "conversation",
    "load_settings",
    "make_agent",
    "open_index",
    "stream",
    "watch_sources",
]
