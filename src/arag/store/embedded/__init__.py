"""The embedded store: one directory of files (SQLite for chunks and documents, NumPy arrays for sentences and
vectors, an IVF file for approximate search), written as atomic generations."""
