"""A-RAG: agentic retrieval-augmented generation with hierarchical retrieval interfaces."""

from arag.errors import ARagError
from arag.index import Index

__all__ = ["ARagError", "Index"]
try:
    from importlib.metadata import PackageNotFoundError, version

    __version__ = version("a-rag")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
