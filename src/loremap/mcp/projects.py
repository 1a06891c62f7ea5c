"""Which project a tool call works on, and the one open `App` per project the server keeps.

An agent launches `loremap serve` in its working directory; a shared HTTP daemon serves many
clients whose projects differ. So a call's project is: `LOREMAP_PROJECT_DIR` if set, else the
first `file://` root the client declared (MCP roots), else the server's working directory.

Each project has one `App` (one index connection) and one lock: calls on a project run one at a
time on worker threads, calls on different projects in parallel. The vault lock and SQLite's
`BEGIN IMMEDIATE` keep other processes (a second agent, the CLI) from interleaving with us.
An index deleted or replaced under a running server (`loremap reindex`, a user's `rm`) is noticed
on the next call: the `App` is reopened, and the answer says the index was rebuilt.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlparse

from loremap.app import App
from loremap.config import LOREMAP_DIR, find_project_root

# Lends the App of a project folder for one call (the daemon's `Warm.use`).
Lender = Callable[[Path, Mapping[str, str]], contextlib.AbstractContextManager[App]]

log = logging.getLogger("loremap.mcp")


class Opened(NamedTuple):
    app: App
    lock: threading.Lock
    index_id: tuple[int, int] | None  # (device, inode) of the index when it was opened


def _index_id(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def root_from_uri(uri: str) -> Path | None:
    """The local folder of a `file://` root, or None for any other scheme."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    path = Path(unquote(parsed.path))
    return path if path.is_dir() else None


class Projects:
    """Open apps keyed by project folder, each used under its own lock."""

    def __init__(self, cwd: Path | None = None, environ: Mapping[str, str] | None = None,
                 opener: Callable[[Path, Mapping[str, str]], App] | None = None,
                 lender: Lender | None = None) -> None:
        self.cwd = (cwd or Path.cwd()).resolve()
        self.environ = dict(os.environ if environ is None else environ)
        self._open = opener or (lambda where, env: App.open(where, env, require_project=False))
        # The daemon's warm Apps (`daemon.warm.Warm.use`), lent per call for a project folder:
        # then the sessions, the HTTP clients and the hooks share one App pool and one model.
        self._lend = lender
        self._apps: dict[Path, Opened] = {}
        self._guard = threading.Lock()

    @property
    def pinned(self) -> bool:
        """Whether the environment names the project (then client roots are not asked)."""
        return bool(self.environ.get("LOREMAP_PROJECT_DIR"))

    @contextlib.contextmanager
    def use(self, where: Path | None = None) -> Iterator[tuple[App, list[str]]]:
        """The app of the project at `where` (default: the working directory), locked for
        this call, with the notices a degraded start produced (rebuilt index ...)."""
        folder = (where or self.cwd).resolve()
        if self._lend is not None:
            root = find_project_root(folder, self.environ)
            if root is not None and (root / LOREMAP_DIR).is_dir():
                with self._lend(root, self.environ) as app:
                    yield app, app.take_notices()
                return
        with self._guard:
            opened = self._apps.get(folder)
            if opened is None:
                opened = Opened(*self._fresh(folder))
                if opened.app.loremap_dir is not None:
                    # Trigger: no `.loremap/` yet. Why: `loremap init` may run while we serve.
                    # Outcome: only projects are kept open; elsewhere each call reopens.
                    self._apps[folder] = opened
        with opened.lock:
            with self._guard:  # another call may have reopened it while we waited
                latest = self._apps.get(folder)
            if latest is not None and latest.lock is opened.lock:
                opened = latest
            notices = opened.app.take_notices()
            current = self._check_index(folder, opened)
            if current is not opened:
                notices += current.app.take_notices()
                opened = current
            yield opened.app, notices

    def _fresh(self, folder: Path) -> tuple[App, threading.Lock, tuple[int, int] | None]:
        app = self._open(folder, self.environ)
        return app, threading.Lock(), _index_id(app.index_path)

    def _check_index(self, folder: Path, opened: Opened) -> Opened:
        """Trigger: the index file is gone or is another file than the one we hold open.
        Why: our connection would keep reading (and writing) a deleted inode.
        Outcome: close it and reopen; the notes are re-read into the new index."""
        if opened.app.loremap_dir is None or _index_id(opened.app.index_path) == opened.index_id:
            return opened
        missing = not opened.app.index_path.exists()
        with contextlib.suppress(Exception):
            opened.app.close()
        app, _, index_id = self._fresh(folder)
        if missing:
            app.notices.append("the index was missing and was rebuilt from the notes")
        replaced = Opened(app, opened.lock, index_id)
        with self._guard:
            self._apps[folder] = replaced
        log.info("reopened the index of %s", folder)
        return replaced

    def default_health(self) -> str:
        """'ok' when the working directory's index answers a query, else the reason."""
        try:
            with self.use() as (app, _):
                app.store.node_count()
        except Exception as exc:  # noqa: BLE001 - health reports any failure as text
            return f"unreachable: {type(exc).__name__}: {exc}"
        return "ok"

    def close(self) -> None:
        with self._guard:
            for opened in self._apps.values():
                with opened.lock, contextlib.suppress(Exception):
                    opened.app.close()
            self._apps.clear()
