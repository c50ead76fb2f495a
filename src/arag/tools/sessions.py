"""One context tracker per session (paper §3.2): a toolkit per session id over one shared index."""

from __future__ import annotations

import threading
from collections import OrderedDict

from arag.index import Index
from arag.principals import Principal
from arag.tools.toolkit import TOOL_NAMES, Toolkit
from arag.tools.view import ResultView


class ToolkitSessions:
    """One :class:`Toolkit` (so one context tracker) per session id and reader over a shared index; the least
    recently used sessions are forgotten beyond ``keep``. A call without a session id gets its reader's shared
    toolkit. A session belongs to the reader that opened it: another reader offering the same id gets a toolkit of
    its own (a tracker's "already read" notice would otherwise tell what another read)."""

    def __init__(self, index: Index, keep: int = 1024, view: ResultView | None = None) -> None:
        self.index, self.keep, self.view = index, keep, view
        self._toolkits: OrderedDict[tuple[Principal | None, str], Toolkit] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session_id: str | None, index: Index | None = None) -> Toolkit:
        """The session's toolkit over ``index`` (a view of the shared index for the caller's principal; default:
        the shared index as the local user reads it)."""
        index = index or self.index
        key = (index.principal, session_id or "")
        with self._lock:
            toolkit = self._toolkits.pop(key, None) or Toolkit(index, enabled=TOOL_NAMES, view=self.view)
            self._toolkits[key] = toolkit
            while len(self._toolkits) > self.keep:
                self._toolkits.popitem(last=False)
        return toolkit
