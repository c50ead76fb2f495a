"""The installed version of a-rag (what manifests and traces record)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("a-rag")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
