"""The three retrieval tools as the model sees them (paper §3.2): typed functions whose docstrings are what the
model reads, how their results are shown (the paper's ``ResultView``), and the context tracker."""

from arag.tools.toolkit import ToolCall, Toolkit, ToolResult
from arag.tools.tracker import ContextTracker
from arag.tools.view import ResultView

__all__ = ["ContextTracker", "ResultView", "ToolCall", "ToolResult", "Toolkit"]
