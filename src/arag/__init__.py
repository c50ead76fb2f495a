"""A-RAG: agentic retrieval-augmented generation with hierarchical retrieval interfaces."""

from arag.errors import ARagError
from arag.index import Index

__all__ = ["ARagError", "Index"]
__version__ = "0.1.0"
