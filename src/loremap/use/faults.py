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
    from loremap.config import LOREMAP_DIR, find_project_root

    root = find_project_root(cwd, environ)
    index = None if root is None else root / LOREMAP_DIR / "index.sqlite"
    if index is None or not index.is_file() or environ.get("LOREMAP_DATABASE_URL"):
        return f"the index is damaged ({exc}); run `loremap doctor --fix`"
    aside = set_aside(index)
    return (f"the index was damaged ({exc}): it was set aside as {aside.name} and the next "
            "command rebuilds it from the notes; run this one again")
