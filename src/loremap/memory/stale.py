"""Has the code a note describes changed since the note was written?

A note records the git blob hash of each of its files when it is written (`file_hashes`). The
file's current blob hash is compared with it; when they differ, `git rev-list --count` says how
many commits touched the file since the note's commit. Only the notes a search returns are
checked, each file once per process.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from loremap import git
from loremap.model.search import NodeRow


def staleness(root: Path) -> Callable[[NodeRow], list[str]]:
    """A checker for notes of the repository at `root`: the warnings of one note's files."""
    hashes: dict[str, str | None] = {}
    counts: dict[tuple[str, str], int | None] = {}

    def current(path: str) -> str | None:
        if path not in hashes:
            hashes[path] = git.blob_hash(root / path)
        return hashes[path]

    def commits_since(commit: str, path: str) -> int | None:
        key = (commit, path)
        if key not in counts:  # only when a file changed: most searches never start git
            counts[key] = git.commits_since(root, commit, path)
        return counts[key]

    def check(note: NodeRow) -> list[str]:
        warnings = []
        for path, recorded in sorted(note.file_hashes.items()):
            now = current(path)
            if now == recorded:
                continue
            if now is None:
                warnings.append(f"{path} is gone since this note")
                continue
            since = commits_since(note.commit, path) if note.commit else None
            if since:
                noun = "commit" if since == 1 else "commits"
                warnings.append(f"{path} changed since this note ({since} {noun})")
            else:
                warnings.append(f"{path} changed since this note (not committed yet)"
                                if since == 0 else f"{path} changed since this note")
        return warnings

    return check
