"""What the map knows of one file, gathered and written out for `loremap show PATH` and the MCP
`read` tool."""

from __future__ import annotations

from typing import NamedTuple

from loremap.store import IndexStore


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


def describe_file(store: IndexStore, path: str) -> FileView | None:
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


def file_lines(view: FileView) -> list[str]:
    """`view` as the lines a person or an agent reads."""
    module = f"{view.module}/" if view.module else "./ (the repository root)"
    # A README or config file has no language: the map reads its text but parses nothing.
    kind = view.language or "text, not parsed"
    out = [f"# {view.path}", f"module {module} · {kind}"]
    if view.docstring:
        out.append(view.docstring)
    if view.symbols:
        out += ["", "Symbols:", *(f"- {name} ({kind}, line {line})"
                                  for name, kind, line in view.symbols[:40])]
    for title, items in (("Imports", view.imports), ("Imported by", view.imported_by)):
        if items:
            out += ["", f"{title}:", *(f"- {p}" for p in items)]
    if view.changes_with:
        out += ["", "Changes together with:", *(f"- {p} ({w:.2f})"
                                                for p, w in view.changes_with[:10])]
    if view.notes:
        out += ["", "Notes:", *(f"- [{t}] {title} ({note_id})" for note_id, t, title in view.notes)]
    return out
