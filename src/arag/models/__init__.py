"""The chat model: any OpenAI-compatible endpoint (``endpoint``), the embedded llama.cpp model (``local``), and the
choice between them for a run (``choice``)."""
