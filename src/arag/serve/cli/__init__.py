"""The ``arag`` command: one module per resource (corpus, retrieval, agent, server, evaluation) on the shared
application and options of ``common``. Every command only calls the Python API."""

from __future__ import annotations

import os
import sys

from arag.errors import ARagError

# isort: off
# each registers its commands, in the order --help lists them: an index, its tools, the agent, serving, evaluation
from arag.serve.cli import corpus, retrieval, documents, agent, server, evaluation  # noqa: F401

# isort: on
from arag.serve.cli.common import app, err, say

__all__ = ["app", "main"]


def main() -> None:
    from arag import tracing

    try:
        tracing.configure()  # spans over OTLP when OTEL_* variables ask for them
        app()
    except ARagError as exc:
        say("[red]error[/red]", str(exc))
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
    except Exception as exc:  # a bug: still one line; ARAG_DEBUG=1 shows the traceback
        if os.environ.get("ARAG_DEBUG"):
            raise
        say("[red]internal error[/red]", f"{type(exc).__name__}: {exc} (please report it; ARAG_DEBUG=1 shows where)")
        sys.exit(1)
