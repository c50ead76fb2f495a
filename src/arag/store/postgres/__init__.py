"""The PostgreSQL + pgvector store (``store``), and a local PostgreSQL server for it (``server``, extra ``pg``)."""
