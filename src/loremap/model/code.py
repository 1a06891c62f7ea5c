"""Records of the code map: what parsing a file yields and what the index keeps of a file."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple


class Definition(NamedTuple):
    """A named definition: `kind` is function, method, class, interface, struct, enum, trait,
    type, module, constant or variable; `line` is 1-based."""

    name: str
    kind: str
    line: int


def is_path_target(target: str) -> bool:
    """Link targets with a '/' or a '.' name repository paths; the others name notes."""
    return "/" in target or "." in target


def module_of(path: str) -> str:
    """The module of a repository path: its folder ("" for the top folder; a folder path
    ending in '/' is its own module)."""
    return path.rsplit("/", 1)[0] if "/" in path else ""


def module_slug(module: str) -> str:
    """The page name of a module: its path with '/' as '--' ('root' for the top folder)."""
    return module.replace("/", "--") if module else "root"


# The order definitions of one file are listed in when not all can be: types first, then
# functions, methods, modules, constants and variables (the module pages and search items).
KIND_ORDER: dict[str, int] = {
    "class": 0, "interface": 0, "struct": 0, "trait": 0, "enum": 1, "type": 1, "function": 2,
    "method": 3, "module": 4, "constant": 5, "variable": 6}


CHUNK_LINES = 12  # a section runs from one definition to the next, at least this many lines


def section_starts(definitions: Iterable[int], lines: int) -> list[int]:
    """The first line (1-based) of each section of a file of `lines` lines whose definitions
    start on the lines `definitions`: line 1, then each definition at least `CHUNK_LINES`
    after the section before it; a short tail joins the section before it."""
    bounds: list[int] = []
    for start in sorted({1, *(n for n in definitions if 1 <= n <= lines)}):
        if not bounds or start - bounds[-1] >= CHUNK_LINES:
            bounds.append(start)
    if len(bounds) > 1 and lines + 1 - bounds[-1] < CHUNK_LINES:
        bounds.pop()
    return bounds


class FileFacts(NamedTuple):
    """The facts of one source file, independent of every other file."""

    path: str  # repository-relative, POSIX separators
    language: str  # a key of loremap.codemap.languages.LANGUAGES
    docstring: str  # first paragraph of the top docstring or header comment ("" if none)
    definitions: tuple[Definition, ...]
    references: tuple[str, ...]  # distinct names used (calls, types, attributes), sorted
    imports: tuple[str, ...]  # import specifiers as written, in order, distinct
    syntax_errors: bool = False  # the tree had errors; the facts are what parsed


class FileStamp(NamedTuple):
    """What decides whether a file must be read again."""

    size: int
    mtime_ns: int
    content_hash: str


class CodeFile(NamedTuple):
    """A repository file as the index stores it (config files and READMEs have no language)."""

    path: str
    module: str  # the folder, "" for the repository root
    language: str | None
    size: int
    mtime_ns: int
    content_hash: str
    docstring: str = ""
    imports: tuple[str, ...] = ()
    definitions: tuple[Definition, ...] = ()
    references: tuple[str, ...] = ()
    subjects: tuple[str, ...] = ()
    syntax_errors: bool = False
    skip: str | None = None  # why its content is left out (binary, minified, generated)
    text: str = ""  # the whole content as analyzer tokens joined by spaces (for full-text search)
    chunks: tuple[tuple[int, str], ...] = ()  # (first line, tokens) of each section of the file
