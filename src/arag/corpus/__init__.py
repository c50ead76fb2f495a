"""Offline indexing (paper §3.1): reading sources into documents (``readers``), splitting them into ~1000-token
chunks on sentence boundaries and into sentences (``chunking``), and building an index from them (``build``)."""
