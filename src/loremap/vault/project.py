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
# This clone's audit chain: not derived (never rebuilt), and this clone's own record, so kept
# out of git (docs/audit.md). A `.gitignore` made before it lacks these lines: doctor adds them.
AUDIT_IGNORED = ("audit.sqlite", "audit.sqlite-*")
_AUDIT_COMMENT = "# This clone's audit chain: not derived, never rebuilt, not shared through git.\n"
GITIGNORE = """\
# Derived by loremap; rebuilt from the notes with `loremap reindex`.
index.sqlite
index.sqlite-*
sessions/
cache/
logs/
.lock
.*.tmp
""" + _AUDIT_COMMENT + "".join(f"{line}\n" for line in AUDIT_IGNORED)
CONFIG_TEMPLATE = """\
# loremap project settings (committed with the project).
# Every setting and its environment variable: docs/settings.md in the loremap repository.

[text]
# Languages of the notes, e.g. ["pt", "en"]: each stems every word; stopwords of all are dropped.
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


def unignored_audit(loremap_dir: Path) -> list[str]:
    """The lines of `AUDIT_IGNORED` that `.loremap/.gitignore` lacks (none without the file:
    `missing_parts` names it)."""
    try:
        present = set((loremap_dir / ".gitignore").read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        return []
    return [line for line in AUDIT_IGNORED if line not in present]


def ignore_audit(loremap_dir: Path, lines: list[str]) -> None:
    """Add `lines` to the end of `.loremap/.gitignore`, keeping what it holds."""
    path = loremap_dir / ".gitignore"
    text = path.read_text(encoding="utf-8")
    text += ("" if not text or text.endswith("\n") else "\n") + _AUDIT_COMMENT + \
        "".join(f"{line}\n" for line in lines)
    atomic_write(path, text.encode("utf-8"), loremap_dir.parent)


def missing_parts(loremap_dir: Path) -> list[str]:
    """What `scaffold` would create that the project needs now. The notes/ and handoffs/
    folders are not counted: they are made when first written, and git keeps no empty folder,
    so a teammate's fresh clone lacks them without anything being wrong."""
    return [n for n in ("config.toml", ".gitignore") if not (loremap_dir / n).exists()]
