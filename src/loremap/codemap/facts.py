"""What parsing one source file yields: its definitions, the names it uses, what it imports."""

from __future__ import annotations

from typing import NamedTuple


class Definition(NamedTuple):
    """A named definition: `kind` is function, method, class, interface, struct, enum, trait,
    type, module, constant or variable; `line` is 1-based."""

    name: str
    kind: str
    line: int


class FileFacts(NamedTuple):
    """The facts of one source file, independent of every other file."""

    path: str  # repository-relative, POSIX separators
    language: str  # a key of loremap.codemap.languages.LANGUAGES
    docstring: str  # first paragraph of the top docstring or header comment ("" if none)
    definitions: tuple[Definition, ...]
    references: tuple[str, ...]  # distinct names used (calls, types, attributes), sorted
    imports: tuple[str, ...]  # import specifiers as written, in order, distinct
    syntax_errors: bool = False  # the tree had errors; the facts are what parsed
