"""The daemon's open Apps: one per project and environment, kept warm between requests.

A request names its project (its folder) and brings its environment. The App of that pair is
opened once and lent to one request at a time (its lock): requests on different projects run
in parallel on their own threads, two on one project wait for each other, as two processes
wait on the vault lock and SQLite's.

An App is opened again when what it was opened from changed: the project's `config.toml` (its
settings), the index file (deleted or replaced by `loremap reindex`), or the folder (deleted).
One unused for `forget_s` is closed. Nothing is only here: notes are files, the index derived.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from loremap.app import App
from loremap.config import CONFIG_FILE, LOREMAP_DIR

log = logging.getLogger("loremap.daemon")

# What of an environment decides an App: its settings (LOREMAP_*) and the per-user folders.
_DECIDES = ("LOREMAP_", "XDG_")


def signature(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in environ.items()
                        if k.startswith(_DECIDES) or k == "HOME"))


def _stamp(root: Path) -> tuple[object, ...]:
    def stat(path: Path) -> tuple[int, int, int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size

    folder = root / LOREMAP_DIR
    index = stat(folder / "index.sqlite")
    return stat(folder / CONFIG_FILE), index[:2] if index else None, folder.is_dir()


class _Entry:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.app: App | None = None
        self.stamp: tuple[object, ...] = ()
        self.used = time.monotonic()


class Warm:
    """Apps by (project folder, environment), each lent under its own lock."""

    def __init__(self, warm_models: bool = True) -> None:
        self._guard = threading.Lock()
        self._entries: dict[tuple[str, tuple[tuple[str, str], ...]], _Entry] = {}
        self.warm_models = warm_models
        self.opened = 0  # Apps opened since the start (reopens included)

    @contextlib.contextmanager
    def use(self, root: Path, environ: Mapping[str, str]) -> Iterator[App]:
        key = (os.path.realpath(root), signature(environ))
        with self._guard:
            entry = self._entries.setdefault(key, _Entry())
        with entry.lock:
            entry.used = time.monotonic()
            stamp = _stamp(root)
            if entry.app is not None and stamp != entry.stamp:
                log.info("reopening %s: its settings, index or folder changed", root)
                self._close(entry)
            if entry.app is None:
                entry.app = App.open(root, environ)
                self.opened += 1
                entry.stamp = _stamp(root)  # opening may have created the index
                if self.warm_models:
                    # Trigger: the project turned vectors on. Why: a model loaded once serves
                    # every later prompt, which no hook process can afford. Outcome: loaded
                    # now, so the hooks' engines find it loaded and use it.
                    entry.app.embedder()
            try:
                yield entry.app
            finally:
                entry.used = time.monotonic()

    @staticmethod
    def _close(entry: _Entry) -> None:
        if entry.app is not None:
            with contextlib.suppress(Exception):
                entry.app.close()
        entry.app = None

    def projects(self) -> list[str]:
        with self._guard:
            return sorted({folder for (folder, _), e in self._entries.items()
                           if e.app is not None})

    def forget_unused(self, forget_s: float) -> int:
        """Close the Apps unused for `forget_s` seconds or whose folder is gone; how many."""
        now = time.monotonic()
        closed = 0
        with self._guard:
            items = list(self._entries.items())
        for key, entry in items:
            gone = not Path(key[0], LOREMAP_DIR).is_dir()
            if (now - entry.used < forget_s and not gone) or not entry.lock.acquire(False):
                continue
            try:
                if entry.app is not None:
                    self._close(entry)
                    closed += 1
                with self._guard:
                    if self._entries.get(key) is entry:
                        del self._entries[key]
            finally:
                entry.lock.release()
        return closed

    def close(self) -> None:
        with self._guard:
            entries = list(self._entries.values())
            self._entries.clear()
        for entry in entries:
            with entry.lock:
                self._close(entry)
