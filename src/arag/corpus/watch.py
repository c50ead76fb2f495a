"""Keep an index equal to its sources while they change (``arag watch``): one sync at the start, then one after
each burst of changes (watchfiles, debounced). Each sync is :func:`arag.corpus.build.build_index` with
``sync=True``: one new generation (embedded) or one transaction (PostgreSQL), which a serving index follows."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from arag.corpus.build import IndexReport, build_index
from arag.embedding.embedders import Embedder, load_embedder
from arag.errors import ARagError, InputError
from arag.settings import IndexSettings

DEBOUNCE_MS = 1600  # a burst of saves (an editor, a copy of a folder) becomes one sync
QUIET_MS = 500  # how long the watch waits for a change before it checks whether to stop


class _Sources:
    """Which changed paths matter: anything under a source folder or a source file itself, never the index's own
    files (an index kept inside the folder it indexes) nor what editors and version control leave around."""

    def __init__(self, sources: list[Path], location: str | Path) -> None:
        from watchfiles import DefaultFilter

        self.folders = [s.resolve() for s in sources if s.is_dir()]
        self.files = {s.resolve() for s in sources if not s.is_dir()}
        self.index_dir = Path(location).resolve() if "://" not in str(location) else None
        self.default = DefaultFilter()

    def roots(self) -> list[Path]:
        """What to watch: the folders, and the folder of each source file (a file replaced by an editor's rename is
        a new file, which a watch on the old one would miss)."""
        parents = {f.parent for f in self.files if not any(f.is_relative_to(d) for d in self.folders)}
        return sorted(set(self.folders) | parents)

    def __call__(self, change: object, path: str) -> bool:
        changed = Path(path)
        if self.index_dir is not None and (changed == self.index_dir or changed.is_relative_to(self.index_dir)):
            return False
        if not self.default(change, path):  # type: ignore[arg-type]
            return False
        return changed in self.files or any(changed.is_relative_to(d) for d in self.folders)


def watch_sources(
    sources: list[Path],
    location: str | Path,
    settings: IndexSettings,
    on_sync: Callable[[IndexReport | ARagError], None],
    *,
    embedder: Embedder | None = None,
    debounce_ms: int = DEBOUNCE_MS,
    stop: threading.Event | None = None,
) -> None:
    """Sync ``location`` with ``sources`` now and after every change until ``stop`` is set (or Ctrl-C).
    ``on_sync`` gets each sync's report, or the error that kept a sync from being written (the next change
    tries again)."""
    from watchfiles import watch

    missing = [str(s) for s in sources if not s.exists()]
    if missing:
        raise InputError(f"cannot watch what does not exist: {', '.join(missing)}")
    # loaded once: every sync embeds with the same model instead of loading it again
    embedder = embedder or load_embedder(
        settings.embedder, threads=settings.threads, batch_size=settings.embed_batch_size
    )
    wanted = _Sources(sources, location)

    def sync() -> None:
        try:
            on_sync(build_index(sources, location, settings, embedder=embedder, sync=True))
        except ARagError as exc:
            on_sync(exc)

    synced = False
    # The first sync runs once the watch is in place (the first quiet interval), so a change made while it runs is
    # seen by the next one; a change made during any sync leads to another.
    for changes in watch(
        *wanted.roots(),
        watch_filter=wanted,
        debounce=debounce_ms,
        stop_event=stop,
        raise_interrupt=False,
        yield_on_timeout=True,
        rust_timeout=QUIET_MS,
    ):
        if changes or not synced:
            sync()
            synced = True
