"""What the map knows of one file, gathered for `loremap show PATH` (and later the MCP `read`)."""

from __future__ import annotations

from typing import NamedTuple

from loremap.store.sqlite import SqliteStore


class FileView(NamedTuple):
    path: str
    module: str
    language: str | None
    docstring: str
    rank: float
    symbols: list[tuple[str, str, int]]
    imports: list[str]
    imported_by: list[str]
    changes_with: list[tuple[str, float]]
    notes: list[tuple[str, str, str]]


def describe_file(store: SqliteStore, path: str) -> FileView | None:
    """The file's module, symbols, imports, importers, co-change partners and linked notes."""
    row = store.file_row(path)
    if row is None:
        return None
    imports: list[str] = []
    imported_by: list[str] = []
    partners: list[tuple[str, float]] = []
    for e in store.edges(path):
        if e.origin == "import":
            (imports if e.src == path else imported_by).append(e.dst if e.src == path else e.src)
        elif e.origin == "cochange":
            partners.append((e.dst if e.src == path else e.src, round(e.weight, 3)))
    partners.sort(key=lambda p: (-p[1], p[0]))
    return FileView(row.path, row.module, row.language, row.docstring, row.rank,
                    store.symbols_of(path), sorted(imports), sorted(imported_by), partners,
                    store.notes_about([path]))
