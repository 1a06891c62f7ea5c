"""The daemon's open Apps: one per project and environment, kept warm between requests.

A request names its project (its folder) and brings its environment. The Apps of that pair are
opened on demand and each is lent to one request at a time: a request takes an idle one, or
opens another while all are busy (up to `PER_PROJECT`, then it waits for the first), so a slow
request (a session start reindexing, a long recall) holds up neither another project nor the
next prompt of the same one. SQLite lets their reads run together; writes still take turns on
the vault lock and `BEGIN IMMEDIATE`, as two processes would.

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

# What of an environment decides an App: its settings (LOREMAP_*) and where the per-user
# folders are (not the XDG variables a desktop session sets per terminal: XDG_SESSION_ID, ...).
_FOLDERS = frozenset({"HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
                      "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"})


# Not part of it: the project (the key names it) and the hooks' short wait for a database
# server to answer a new connection, so that hooks and MCP sessions share their Apps.
_PER_CALLER = frozenset({"LOREMAP_PROJECT_DIR", "LOREMAP_CONNECT_TIMEOUT_S"})


def signature(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in environ.items()
                        if (k.startswith("LOREMAP_") and k not in _PER_CALLER)
                        or k in _FOLDERS))


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


PER_PROJECT = 3  # Apps of one project and environment open at once, at most


class _Entry:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.app: App | None = None
        self.stamp: tuple[object, ...] = ()
        self.used = time.monotonic()


class Warm:
    """Apps by (project folder, environment), each lent to one request at a time."""

    def __init__(self, warm_models: bool = True) -> None:
        self._guard = threading.Lock()
        self._entries: dict[tuple[str, tuple[tuple[str, str], ...]], list[_Entry]] = {}
        self.warm_models = warm_models
        self.opened = 0  # Apps opened since the start (reopens included)

    def _take(self, key: tuple[str, tuple[tuple[str, str], ...]]) -> _Entry:
        """An idle entry of `key`, locked: a free one, else a new one, else the first once
        its request is done."""
        with self._guard:
            entries = self._entries.setdefault(key, [])
            for entry in entries:
                if entry.lock.acquire(False):
                    return entry
            if len(entries) < PER_PROJECT:
                entry = _Entry()
                entry.lock.acquire()
                entries.append(entry)
                return entry
            first = entries[0]
        first.lock.acquire()
        with self._guard:
            if first in self._entries.get(key, []):
                return first
        first.lock.release()  # closed as unused while we waited: take another
        return self._take(key)

    @contextlib.contextmanager
    def use(self, root: Path, environ: Mapping[str, str]) -> Iterator[App]:
        key = (os.path.realpath(root), signature(environ))
        entry = self._take(key)
        try:
            entry.used = time.monotonic()
            stamp = _stamp(root)
            if entry.app is not None and stamp != entry.stamp:
                log.info("reopening %s: its settings, index or folder changed", root)
                self._close(entry)
            if entry.app is None:
                entry.app = App.open(root, environ)
                self.opened += 1
                entry.stamp = _stamp(root)  # opening may have created the index
                self._share_model(key, entry)
                if self.warm_models:
                    # Trigger: the project turned vectors on. Why: a model loaded once serves
                    # every later prompt, which no hook process can afford. Outcome: loaded
                    # now, so the hooks' engines find it loaded and use it, and a process of
                    # its own embeds the questions beside the text lists (embed/apart.py).
                    entry.app.embedder()
                    entry.app.embed_apart()
            yield entry.app
        finally:
            entry.used = time.monotonic()
            entry.lock.release()

    def _share_model(self, key: tuple[str, tuple[tuple[str, str], ...]], entry: _Entry) -> None:
        """Give a new App the embedding model another App of its key loaded (one model in
        memory per project, not one per App)."""
        assert entry.app is not None
        with self._guard:
            others = [e.app for e in self._entries.get(key, []) if e is not entry and e.app]
        for other in others:
            if entry.app.adopt_embedder(other):
                return

    @staticmethod
    def _close(entry: _Entry) -> None:
        if entry.app is not None:
            with contextlib.suppress(Exception):
                entry.app.close()
        entry.app = None

    def projects(self) -> list[str]:
        with self._guard:
            return sorted({folder for (folder, _), entries in self._entries.items()
                           if any(e.app is not None for e in entries)})

    def open_apps(self) -> int:
        with self._guard:
            return sum(e.app is not None for entries in self._entries.values()
                       for e in entries)

    def forget_unused(self, forget_s: float) -> int:
        """Close the Apps unused for `forget_s` seconds or whose folder is gone; how many."""
        now = time.monotonic()
        closed = 0
        with self._guard:
            items = [(key, entry) for key, entries in self._entries.items()
                     for entry in entries]
        for key, entry in items:
            gone = not Path(key[0], LOREMAP_DIR).is_dir()
            if (now - entry.used < forget_s and not gone) or not entry.lock.acquire(False):
                continue
            try:
                if entry.app is not None:
                    self._close(entry)
                    closed += 1
                with self._guard:
                    entries = self._entries.get(key, [])
                    if entry in entries:
                        entries.remove(entry)
                    if not entries:
                        self._entries.pop(key, None)
            finally:
                entry.lock.release()
        return closed

    def close(self) -> None:
        with self._guard:
            entries = [e for group in self._entries.values() for e in group]
            self._entries.clear()
        for entry in entries:
            with entry.lock:
                self._close(entry)
