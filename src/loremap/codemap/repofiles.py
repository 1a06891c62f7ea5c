"""One repository snapshot as the per-language import resolvers see it.

Every language's resolver asks the same questions of the file list: is this path listed, what
is in this folder, which files bear this name, what does this configuration file say. `RepoFiles`
builds the path tables once and reads configuration lazily (only listed files, only inside the
root, tolerant of comments and malformed content). The path arithmetic here never leaves the
root: a path that would is None. `expand_braces` is the group-import syntax Rust and Scala share.
"""

from __future__ import annotations

import os
import posixpath
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

from loremap.jsonc import loads_or_none

_MAX_CONFIG_BYTES = 1 << 20


def parent_dir(path: str) -> str:
    """The folder of `path` ("" at the root)."""
    return path.rpartition("/")[0]


def child_path(directory: str, name: str) -> str:
    """`name` inside `directory` ("" is the root)."""
    return f"{directory}/{name}" if directory else name


def join_path(base: str, rel: str) -> str | None:
    """`rel` from directory `base`, normalised; None when absolute or leaving the root."""
    if rel.startswith("/") or "\x00" in rel:
        return None
    if not rel:
        return base
    joined = posixpath.normpath(f"{base}/{rel}" if base else rel)
    if joined == ".":
        return ""
    if joined == ".." or joined.startswith(("../", "/")):
        return None
    return joined


def ancestors(directory: str) -> Iterator[str]:
    """`directory`, its parent, ... up to the root ("")."""
    while True:
        yield directory
        if not directory:
            return
        directory = parent_dir(directory)


def clean_path(path: object) -> str | None:
    """A listed path, normalised; None when empty, too long, absolute or leaving the root."""
    if not isinstance(path, str) or not path or len(path) > 4096:
        return None
    return join_path("", path) or None


def _split_top(text: str) -> list[str]:
    """`a, b::{c, d}` -> [`a`, `b::{c, d}`]: commas outside braces."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "{") - (ch == "}")
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    return [*items, text[start:]]


def expand_braces(spec: str) -> list[str] | None:
    """Group imports (`a.b.{C, D => E}`, `a::{b, self}`) as one path each; None if not a group."""
    i = spec.find("{")
    if i < 0 or not spec.endswith("}"):
        return None
    prefix, out = spec[:i], []
    for raw in _split_top(spec[i + 1:-1])[:64]:
        item = raw.split("=>")[0].split(" as ")[0].strip()
        if item == "self":
            out.append(prefix.rstrip(":.\\"))
        elif item:
            out.append(prefix + item)
    return out


class RepoFiles:
    """The listed files of one repository snapshot, indexed by folder and name, with the
    configuration files among them read on demand."""

    def __init__(self, root: Path, files: Iterable[str]) -> None:
        self._root = Path(root)
        self._real_root = os.path.realpath(self._root)
        clean = {c for c in map(clean_path, files) if c}
        self.files = frozenset(clean)
        by_dir: dict[str, list[str]] = defaultdict(list)
        by_name: dict[str, list[str]] = defaultdict(list)
        dirs = {""}
        for f in clean:
            d, _, name = f.rpartition("/")
            by_dir[d].append(f)
            by_name[name].append(f)
            while d not in dirs:
                dirs.add(d)
                d = parent_dir(d)
        self.by_dir = {d: tuple(sorted(fs)) for d, fs in by_dir.items()}
        self.by_name = {n: tuple(sorted(fs)) for n, fs in by_name.items()}
        self.dirs = frozenset(dirs)
        self._json_cache: dict[str, object] = {}

    def read(self, rel: str) -> str | None:
        """A listed file's text; None for unlisted files, symlinks out of the root, big files."""
        if rel not in self.files:
            return None
        try:
            real = os.path.realpath(self._root / rel)
            if not real.startswith(self._real_root.rstrip(os.sep) + os.sep):
                return None
            with open(real, "rb") as fh:
                data = fh.read(_MAX_CONFIG_BYTES + 1)
        except (OSError, ValueError):
            return None
        return data.decode("utf-8", "replace") if len(data) <= _MAX_CONFIG_BYTES else None

    def json(self, rel: str) -> dict[str, object]:
        """A listed JSON (or JSONC) file's top-level object, cached; {} when absent or not one."""
        if rel not in self._json_cache:
            text = self.read(rel)
            self._json_cache[rel] = loads_or_none(text) if text is not None else None
        data = self._json_cache[rel]
        return data if isinstance(data, dict) else {}

    def toml(self, rel: str) -> dict[str, object]:
        """A listed TOML file's table; {} when absent or malformed."""
        text = self.read(rel)
        try:
            return tomllib.loads(text) if text is not None else {}
        except (ValueError, RecursionError):
            return {}

    def first(self, candidates: Iterable[str | None]) -> tuple[str, ...]:
        """The first candidate that is a listed file, as a 1-tuple; () when none is."""
        for c in candidates:
            if c is not None and c in self.files:
                return (c,)
        return ()

    def relative(self, importer: str, rel: str, also_root: bool = True) -> tuple[str, ...]:
        """`rel` from the importer's folder, else (when `also_root`) from the root."""
        here = parent_dir(importer)
        return self.first((join_path(here, rel), join_path("", rel) if also_root else None))
