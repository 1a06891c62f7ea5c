"""What git history says about the code: which files change together, and why files changed.

Imports show how code is wired; co-change shows what a person has to touch together, which is
often the more useful hint ("edit the handler, the test and the schema move with it"). Recent
commit subjects give each file a line of "why". Both come from one streamed `git log` over the
last `max_commits` commits, so memory and time stay bounded however long the history is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from itertools import combinations
from pathlib import Path
from typing import NamedTuple

from loremap.git import git_stream, is_shallow


class History(NamedTuple):
    """The recent history of a repository, paths relative to the root it was read from.

    `commits` is how many (non-merge) commits were read; `cochange` maps a pair of paths
    (a < b) to commits touching both / (commits touching the rarer one + 1), for pairs that
    changed together at least twice; `subjects` holds each file's latest commit subjects,
    newest first. Paths are the current names of renamed files, and may name files deleted since.
    """

    commits: int
    shallow: bool
    cochange: dict[tuple[str, str], float]
    subjects: dict[str, tuple[str, ...]]


def read_history(root: Path, max_commits: int = 1000, max_files: int = 25,
                 subjects_per_file: int = 3) -> History | None:
    """The last `max_commits` non-merge commits of the repository at `root`, or None when it is
    not a git repository or has no commits yet.

    Commits touching more than `max_files` files (reformats, vendoring, the initial import) say
    nothing about which files belong together nor why one file changed, so they count towards
    `commits` only. Renames are followed (`-M`): a file's older commits count under its current
    name.
    """
    shallow = is_shallow(root)
    if shallow is None:
        return None
    tally = _Tally(max_files, subjects_per_file)
    for subject, files, renames in _commits(root, max_commits):
        tally.add(subject, files)
        tally.rename(renames)
    if tally.commits == 0:
        return None
    return History(tally.commits, shallow, tally.cochange(), tally.subjects())


_Commit = tuple[str, list[str], list[tuple[str, str]]]  # subject, paths, (old, new) renames


def _commits(root: Path, max_commits: int) -> Iterator[_Commit]:
    """`git log --name-status -z`, newest first, parsed as it streams.

    The records are: "\\x1e<subject>", then per file a status ("M", "A", "D", "R087"...; the
    first of a commit after a newline) and its path, or for a rename the old and the new path.
    """
    args = ["log", "--no-merges", "-M", "--name-status", "--relative", "-z",
            f"--max-count={max_commits}", "--format=%x1e%s"]
    subject: str | None = None
    paths: list[str] = []
    renames: list[tuple[str, str]] = []
    status, old, expect = "", "", 0
    for record in git_stream(root, args):
        if record.startswith("\x1e"):
            if subject is not None:
                yield subject, paths, renames
            subject, paths, renames, expect = _text(record[1:]), [], [], 0
        elif expect == 0:
            status = record.lstrip("\n")[:1]
            expect = 2 if status in ("R", "C") else 1
        elif expect == 2:
            old, expect = record, 1
        else:
            paths.append(record)
            if status == "R":
                renames.append((old, record))
            expect = 0
    if subject is not None:
        yield subject, paths, renames


def _text(subject: str) -> str:
    # Records are decoded like file names; a subject that is not UTF-8 gets U+FFFD instead of
    # surrogates that would fail when written out.
    return subject.encode("utf-8", "surrogateescape").decode("utf-8", "replace").strip()


class _Tally:
    """Counts per file and per pair of files, and the latest subjects of each file."""

    def __init__(self, max_files: int, subjects_per_file: int) -> None:
        self.max_files = max_files
        self.per_subject = subjects_per_file
        self.commits = 0
        self.files: Counter[str] = Counter()
        self.pairs: Counter[tuple[str, str]] = Counter()
        self.latest: dict[str, list[str]] = {}
        self.alias: dict[str, str] = {}  # an old name -> the file's current name
        self.names: dict[str, str] = {}  # one string object per path

    def add(self, subject: str, paths: list[str]) -> None:
        self.commits += 1
        files = sorted({self._current(p) for p in paths})
        if not files or len(files) > self.max_files:
            return
        self.files.update(files)
        self.pairs.update(combinations(files, 2))  # Counter.update counts in C
        for path in files:
            latest = self.latest.setdefault(path, [])
            if len(latest) < self.per_subject:
                latest.append(subject)

    def rename(self, renames: list[tuple[str, str]]) -> None:
        # Applied after the renaming commit: only older commits know the file by its old name.
        for old, new in renames:
            self.alias[old] = self._current(new)

    def _current(self, path: str) -> str:
        path = self.alias.get(path, path)
        return self.names.setdefault(path, path)

    def cochange(self) -> dict[tuple[str, str], float]:
        files = self.files
        return {(a, b): both / (min(files[a], files[b]) + 1)
                for (a, b), both in self.pairs.items() if both >= 2}

    def subjects(self) -> dict[str, tuple[str, ...]]:
        return {path: tuple(subjects) for path, subjects in self.latest.items()}


def recent_changes(root: Path, commits: int) -> list[tuple[str, list[str]]]:
    """(subject, paths) of the last `commits` commits, newest first (merges left out)."""
    if is_shallow(root) is None:
        return []
    return [(subject, paths) for subject, paths, _ in _commits(root, commits)]
