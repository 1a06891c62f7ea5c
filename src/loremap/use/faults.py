"""Faults of the machine, not of the input, as one line a person can act on.

A full disk and a damaged index file used to reach the CLI as internal errors (exit 3, a
traceback in the log): `bench/soak.py` fills a disk and overwrites pages of a running index.
Both are now a user error (exit 1) saying what happened and what to do. A damaged index is set
aside on the spot (`app.set_aside`), so the next command rebuilds it from the notes, which are
canonical: nothing recorded is lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def explain(exc: BaseException, cwd: Path, environ: Mapping[str, str]) -> str | None:
    """The one line for `exc` when it is a machine fault (after setting aside a damaged index),
    else None (a bug: the caller reports it as an internal error)."""
    from loremap.store.sqlite.store import is_damaged, is_full, set_aside

    if is_full(exc):
        return (f"no space left on the device ({exc}); free some space and run the command "
                "again")
    if not is_damaged(exc):
        return None
    damaged = _damaged(cwd, environ)
    if not damaged:
        return f"the index is damaged ({exc}); run `loremap doctor --fix`"
    aside = ", ".join(set_aside(index).name for index in damaged)
    return (f"the index was damaged ({exc}): it was set aside as {aside} and the next "
            "command rebuilds it from the notes; run this one again")


def _damaged(cwd: Path, environ: Mapping[str, str]) -> list[Path]:
    """The index files a command here may have read that are damaged: the project's and the
    personal notes' own (`App` opens either or both), each as SQLite's quick check finds it.
    A row whose text no longer decodes passes that check: then the first of them, the one the
    command read first (the project's in a project)."""
    from loremap.config import LOREMAP_DIR, UserPaths, find_project_root
    from loremap.store.sqlite.store import damage_of
    from loremap.vault.project import INDEX_FILE, PERSONAL_INDEX_FILE

    root = find_project_root(cwd, environ)
    candidates = [path for path in (
        None if root is None else root / LOREMAP_DIR / INDEX_FILE,
        UserPaths.from_env(environ).cache / PERSONAL_INDEX_FILE) if path is not None and
        path.is_file()]
    return [path for path in candidates if damage_of(path) is not None] or candidates[:1]
