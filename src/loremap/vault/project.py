"""The `.loremap/` folder of a project: what `init` creates and `doctor` expects to find.

Also the symlinks in it that loremap refuses to follow (`check_project` before a project is
opened, `symlinks` for `doctor`): git stores symlinks, so a cloned repository can carry
`.loremap/index.sqlite -> ~/somewhere` (SQLite would write through it) or
`.loremap/notes/x.md -> /etc/...` (read into an agent's context).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from loremap.errors import UnsafePath
from loremap.vault.fs import atomic_write, check_folder, link_target, outside
from loremap.vault.layout import HANDOFFS_DIR, LOCK_FILE, NOTES_DIR

INDEX_FILE = "index.sqlite"
# The personal notes' own index, in the user's cache folder: used outside any project, and
# beside a shared database (whose projects never hold personal notes).
PERSONAL_INDEX_FILE = "personal-index.sqlite"
GITIGNORE = """\
# Derived by loremap; rebuilt from the notes with `loremap reindex`.
index.sqlite
index.sqlite-*
sessions/
cache/
logs/
.lock
.*.tmp
"""
CONFIG_TEMPLATE = """\
# loremap project settings (committed with the project).
# Every setting and its environment variable: docs/settings.md in the loremap repository.

[text]
# Languages of the notes: the first picks the stemmer; stopwords of all are dropped.
languages = ["en"]

[vault]
# Largest note body accepted, in bytes.
max_note_bytes = 262144
"""


# Files SQLite and the settings open by name, with no way to pass O_NOFOLLOW through.
_OPENED_BY_NAME = ("config.toml", INDEX_FILE, f"{INDEX_FILE}-wal", f"{INDEX_FILE}-shm",
                   f"{INDEX_FILE}-journal", LOCK_FILE)


class Link(NamedTuple):
    """A symlink found under a vault: where it is, what it points to, whether that is outside
    the boundary (the repository, or the personal vault's folder)."""

    path: Path
    target: str
    outside: bool


def check_project(loremap_dir: Path) -> None:
    """Refuse (`UnsafePath`, one line) a project whose `.loremap/` leads out of the repository
    or whose settings or index file is a symlink: both are opened before any other check."""
    root = loremap_dir.parent
    check_folder(loremap_dir, root)
    for name in _OPENED_BY_NAME:
        target = link_target(loremap_dir / name)
        if target is not None:
            raise UnsafePath(f"refused: {loremap_dir / name} is a symlink to {target}; loremap "
                             "does not open it (remove the link)")


def symlinks(folder: Path, root: Path) -> list[Link]:
    """Every symlink at or under `folder` (not descending into linked folders), sorted."""
    found: list[Link] = []
    target = link_target(folder)
    if target is not None:
        found.append(Link(folder, target, outside(folder, root) is not None))
        if found[0].outside:
            return found  # not walked: nothing in it is ours
    for top, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            path = Path(top, name)
            target = link_target(path)
            if target is not None:
                found.append(Link(path, target, outside(path, root) is not None))
    return sorted(found)


def scaffold(loremap_dir: Path) -> list[str]:
    """Create what is missing of `.loremap/` (never overwriting); return what was created;
    `UnsafePath`, before anything is made, when `.loremap/` leads out of the repository."""
    check_folder(loremap_dir, loremap_dir.parent)
    created: list[str] = []
    for sub in ("", NOTES_DIR, HANDOFFS_DIR):
        path = loremap_dir / sub
        check_folder(path, loremap_dir.parent)
        if not path.is_dir():
            path.mkdir(parents=True, exist_ok=True)
            created.append(f"{path.name}/" if sub else f"{loremap_dir.name}/")
    for name, content in (("config.toml", CONFIG_TEMPLATE), (".gitignore", GITIGNORE)):
        path = loremap_dir / name
        if not path.exists():
            atomic_write(path, content.encode("utf-8"), loremap_dir.parent)
            created.append(name)
    return created


def missing_parts(loremap_dir: Path) -> list[str]:
    """What `scaffold` would create that the project needs now. The notes/ and handoffs/
    folders are not counted: they are made when first written, and git keeps no empty folder,
    so a teammate's fresh clone lacks them without anything being wrong."""
    return [n for n in ("config.toml", ".gitignore") if not (loremap_dir / n).exists()]
