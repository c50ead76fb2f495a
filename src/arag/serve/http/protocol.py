"""uvicorn's HTTP/1.1 protocol with a deadline for a request's headers: uvicorn has none, so a client that opens
connections and sends half a request's headers holds them open for ever (300 such connections stayed open)."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol


class HeaderDeadlineProtocol(H11Protocol):
    """Closes a connection whose first request's headers have not all arrived ``header_timeout_s`` after it opened
    (later requests on a kept-alive connection are bounded by uvicorn's own keep-alive timeout)."""

    header_timeout_s = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_deadline: asyncio.TimerHandle | None = self.loop.call_later(
            self.header_timeout_s, self._headers_too_slow
        )

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if self.cycle is None and not self.transport.is_closing():  # no request began: its headers never came
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if getattr(self, "_header_deadline", None) is not None:
            self._header_deadline.cancel()  # type: ignore[union-attr]
        super().connection_lost(exc)


def protocol_with(header_timeout_s: float) -> Any:
    """The protocol class with this header deadline (uvicorn takes a class)."""
    return type("BoundedHeaders", (HeaderDeadlineProtocol,), {"header_timeout_s": header_timeout_s})
