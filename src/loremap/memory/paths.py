"""Repository paths named in notes: normalised and confined to the repository.

A note's `files` and its path link targets are repository-relative POSIX paths, checked here
once, so a path outside the repository never reaches a note (the git blob hash recorded for
each file, which lets search say "this file changed since the note", is `git.blob_hash`).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from loremap.errors import InvalidInput
from loremap.model.code import is_path_target as is_path_target  # its callers import it here


def _relative(raw: str, repo_root: Path, cwd: Path) -> str:
    """`raw` (relative to `cwd`, `~` expanded) as a POSIX path relative to `repo_root` ("."
    for the root itself); refuses paths outside the repository."""
    if not raw or "\x00" in raw:
        raise InvalidInput(f"invalid file path {raw!r}")
    candidate = Path(raw).expanduser()
    absolute = candidate if candidate.is_absolute() else cwd / candidate
    try:
        return Path(os.path.normpath(absolute)).relative_to(repo_root).as_posix()
    except ValueError:
        raise InvalidInput(f"file {raw!r} is outside the repository {repo_root}") from None


def repo_path(raw: str, repo_root: Path, cwd: Path) -> str:
    """`raw` as a POSIX path relative to `repo_root`; refuses paths outside the repository."""
    text = _relative(raw, repo_root, cwd)
    if text in ("", "."):
        raise InvalidInput(f"file {raw!r} is the repository root, not a file")
    return text


def repo_prefix(raw: str, repo_root: Path, cwd: Path) -> str:
    """`raw` as the repository path prefix a search filter keeps: `.` (or the root) is
    everything (""), a folder ends with `/` so that `src` never matches `srcfoo/`, a file or
    any other name stays as written. Relative paths start at `cwd`; paths outside the
    repository are refused, as `repo_path` refuses them."""
    text = raw.strip()
    rel = _relative(text, repo_root, cwd)
    if rel == ".":
        return ""
    if text.endswith("/") or (repo_root / rel).is_dir():
        return rel + "/"
    return rel


def check_path_target(target: str) -> str:
    """A link target that names a path must stay inside the repository."""
    pure = PurePosixPath(target)
    if "\x00" in target or pure.is_absolute() or ".." in pure.parts or target.startswith("~"):
        raise InvalidInput(
            f"link target {target!r} must be a note id or a path inside the repository"
        )
    return target
