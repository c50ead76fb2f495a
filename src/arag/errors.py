"""Typed errors. Each reaches the CLI user as one clear line, never a traceback."""


class ARagError(Exception):
    """Base class for configuration and usage errors the user can fix."""


class IngestError(ARagError):
    """An input file could not be read or is of an unknown format."""


class IndexNotFoundError(ARagError):
    """No index exists at the given directory."""


class IndexFormatError(ARagError):
    """The index directory exists but cannot be used (version, embedder or corruption)."""


class EmbedderError(ARagError):
    """The embedding model could not be resolved, verified or run."""


class ConfigError(ARagError):
    """A setting is invalid or missing."""


class LLMError(ARagError):
    """The language model endpoint failed in a way retries could not fix."""


class OutputRejected(LLMError):
    """The model server's own parser rejected what the model generated under a grammar (llama.cpp's HTTP 500 "The
    model produced output that does not match the expected … format"); the same request fails again."""


class TimeBudgetExceeded(LLMError):
    """The wall-clock budget of one question ran out (setting agent.time_budget_s)."""


class InputError(ARagError):
    """A user input (question, query, keyword, option) is empty or out of range."""


class MissingExtraError(ConfigError):
    """An optional dependency is not installed; the message names the extra that provides it."""


class StoreError(ARagError):
    """The database serving an index is unreachable, timed out or refused a statement."""
