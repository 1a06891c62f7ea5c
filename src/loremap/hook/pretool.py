"""Before Read, Edit or Write of a file: the gotchas and bugs the project recorded about it;
before a Bash command, the error notes that record it as failed (`failure.py`).

Said once per file per session (the session state remembers), only for files inside the
project, and only when there is something to say. The lookup is one indexed query, not a
search: these notes name the file in their `files` or links.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from loremap.hook.context import (
    Project,
    additional_context,
    config_bytes,
    fence,
    locate,
    open_app,
    settings,
    shared_configured,
)

if TYPE_CHECKING:
    from loremap.app import App

FILE_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit", "NotebookEdit"})
WARNING_TYPES = ("gotcha", "bug")
MAX_NOTES = 5
BODY_CHARS = 600
SHARED_CACHE = "cache/file-warnings.json"  # under .loremap/ (ignored by git)
SHARED_COMMANDS = "cache/failed-commands.json"  # the error notes by failed command
SHARED_CACHE_S = 30.0  # how long the shared database's warnings are kept


def target_path(payload: Mapping[str, object], root: Path) -> str | None:
    """The repository path the tool call is about, or None (another tool, outside the repo)."""
    if payload.get("tool_name") not in FILE_TOOLS:
        return None
    given = payload.get("tool_input")
    if not isinstance(given, dict):
        return None
    target = given.get("file_path") or given.get("notebook_path")
    if not isinstance(target, str) or not target:
        return None
    path = Path(target)
    if not path.is_absolute():
        cwd = payload.get("cwd")
        path = (Path(cwd) if isinstance(cwd, str) else root) / path
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return None


def pre_tool(payload: Mapping[str, object], environ: Mapping[str, str]) -> str:
    project = locate(payload, environ)
    if project is None or project.session_id is None:
        return ""
    if payload.get("tool_name") == "Bash":
        from loremap.hook.failure import before_command

        return before_command(payload, project.loremap_dir, environ)
    path = target_path(payload, project.root)
    if path is None:
        return ""
    _log_open(project, path, environ)
    from loremap.sessions.state import SessionState

    state = SessionState(project.loremap_dir, project.session_id)
    if state.warned(path):
        return ""
    notes = _warnings(project.loremap_dir, path, environ)
    if not notes:
        return ""
    state.mark_warned(path)
    state.save()
    lines = [f"Recorded gotchas and bugs about {path}:"]
    for note_id, note_type, title, body in notes[:MAX_NOTES]:
        text = " ".join(body.split())
        if len(text) > BODY_CHARS:
            text = text[:BODY_CHARS].rsplit(" ", 1)[0] + " …"
        lines.append(f"- [{note_type}] {title} ({note_id}): {text}")
    if len(notes) > MAX_NOTES:
        lines.append(f"({len(notes) - MAX_NOTES} more: read {path} with the read tool)")
    return additional_context("PreToolUse", fence("file-notes", "\n".join(lines)))


def _log_open(project: Project, path: str, environ: Mapping[str, str]) -> None:
    """Log the file the agent opens after its question (sessions/queries.py), unless logging
    is off: the settings are read only when the environment or config.toml names the key."""
    from loremap.sessions.queries import QUERIES_LOG, log_open

    if project.session_id is None or not (project.loremap_dir / QUERIES_LOG).is_file():
        return
    if ("LOREMAP_LOG_QUERIES" in environ or b"log_queries" in config_bytes(
            project.loremap_dir)) and not settings(project, environ).get_bool(
                "search.log_queries"):
        return
    log_open(project.loremap_dir, project.session_id, path)


def _warnings(loremap_dir: Path, path: str, environ: Mapping[str, str]
              ) -> list[tuple[str, str, str, str]]:
    """The active gotchas and bugs naming `path`, read from the index without opening the App
    (no vault, no analyzer check): this runs before every file read. A shared database is
    asked through the App, and its answer kept for a while (`_shared_warnings`)."""
    import sqlite3
    from contextlib import closing

    if shared_configured(loremap_dir, environ):
        table = _shared_warnings(loremap_dir, environ)
        if table is not None:
            return [(str(a), str(b), str(c), str(d)) for a, b, c, d in table.get(path, [])]

    from loremap.store.sqlite.code import CodeReader
    from loremap.vault.project import INDEX_FILE

    index = loremap_dir / INDEX_FILE
    if not index.is_file():
        return []
    uri = f"{index.resolve().as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True, timeout=2.0)) as conn:
        return CodeReader(conn).file_warnings(path, WARNING_TYPES)


def _shared_warnings(loremap_dir: Path, environ: Mapping[str, str]
                     ) -> Mapping[str, Sequence[Sequence[object]]] | None:
    """Path -> the warnings about it, from the shared database (`shared_table`); None when
    the project is not shared after all."""
    return shared_table(loremap_dir, environ, SHARED_CACHE,
                        lambda app: app.store.warnings_by_path(WARNING_TYPES))


def shared_table(loremap_dir: Path, environ: Mapping[str, str], name: str,
                 read: Callable[[App], Mapping[str, Sequence[Sequence[object]]]]
                 ) -> Mapping[str, Sequence[Sequence[object]]] | None:
    """A table the hooks read from the shared database before a tool call (`read` of the
    App), kept in `.loremap/<name>`; None when the project is not shared after all.

    Trigger: a shared database, asked before every file an agent touches or command it runs.
    Why: the PostgreSQL driver's import and a connection cost ~0.16 s, five times the whole
      SQLite lookup, on each of a session's hundreds of tool calls.
    Outcome: the whole table is read in one statement and kept in `.loremap/cache/` for
      `SHARED_CACHE_S`; a note written here (the notes folder changes) or other settings (the
      URL, the project key, config.toml) read it again at once. A teammate's new note reaches
      this machine's hook within that time. A server that does not answer is asked again only
      then.
    """
    import hashlib
    import json
    import time

    cache = loremap_dir / name
    key = hashlib.sha256(repr((environ.get("LOREMAP_DATABASE_URL"),
                               environ.get("LOREMAP_PROJECT_KEY"),
                               config_bytes(loremap_dir))).encode()).hexdigest()
    from loremap.errors import UnsafePath
    from loremap.vault.fs import read_confined

    try:  # never through a symlink: these rows go into the agent's context
        kept = json.loads(read_confined(cache, loremap_dir.parent).decode("utf-8"))
        written = cache.stat().st_mtime
        fresh = (kept["key"] == key and 0 <= time.time() - written < SHARED_CACHE_S
                 and (loremap_dir / "notes").stat().st_mtime < written)
        if fresh and isinstance(kept["paths"], dict):
            return kept["paths"]
    except (OSError, ValueError, KeyError, TypeError, UnsafePath):
        pass
    from loremap.errors import StoreError
    from loremap.hook import log
    from loremap.vault.fs import atomic_write

    try:
        with open_app(loremap_dir.parent, environ) as app:
            if not app.shared:
                return None
            table = read(app)
    except StoreError as exc:
        # An unreachable server: nothing to say, and no new attempt (up to the connection
        # timeout each) before the cache expires.
        log(f"pre-tool: the shared database did not answer ({exc}); asking again in "
            f"{SHARED_CACHE_S:g} s", environ)
        table = {}
    cache.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(cache, json.dumps({"key": key, "paths": table}).encode(), loremap_dir.parent)
    return table
