"""One context tracker per session (paper §3.2): a toolkit per session id over one shared index."""

from __future__ import annotations

import threading
from collections import OrderedDict

from arag.index import Index
from arag.tools.toolkit import TOOL_NAMES, Toolkit
from arag.tools.view import ResultView


class ToolkitSessions:
    """One :class:`Toolkit` (so one context tracker) per session id over a shared index; the least recently used
    sessions are forgotten beyond ``keep``. A call without a session id gets a shared toolkit."""

    def __init__(self, index: Index, keep: int = 1024, view: ResultView | None = None) -> None:
        self.index, self.keep, self.view = index, keep, view
        self.shared = Toolkit(index, enabled=TOOL_NAMES, view=view)
        self._toolkits: OrderedDict[str, Toolkit] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session_id: str | None) -> Toolkit:
        if not session_id:
            return self.shared
        with self._lock:
            toolkit = self._toolkits.pop(session_id, None) or Toolkit(self.index, enabled=TOOL_NAMES, view=self.view)
            self._toolkits[session_id] = toolkit
            while len(self._toolkits) > self.keep:
                self._toolkits.popitem(last=False)
        return toolkit
