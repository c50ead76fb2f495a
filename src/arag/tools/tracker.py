"""The context tracker (paper §3.2): what a session has read and been shown, and the tokens the tools returned."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class ContextTracker:
    """What this session has already read, and how many tokens the tools returned."""

    read_ids: set[str] = field(default_factory=set)
    seen_ids: set[str] = field(default_factory=set)  # every chunk id shown to the model, incl. in search results
    sections_read: set[str] = field(default_factory=set)  # "<section id>/<part>" of every section part shown
    retrieved_tokens: int = 0
    calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, tokens: int, calls: int = 1) -> None:
        with self._lock:
            self.retrieved_tokens += tokens
            self.calls += calls
