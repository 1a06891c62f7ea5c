"""The memory as one graph, code and lore together: modules, the most central files, the notes
and their links (the dashboard's graph page).

Bounded whatever the project's size: the `MAX_MODULES` most central modules, the `files` most
central files by PageRank, the `notes` newest notes; what was left out is counted, never
hidden. The defaults add up to the 1,500 nodes the page draws fluidly (bench/dashboard.py). A
note's link to a file that is not shown goes to that file's module instead, so lore stays
attached to the code it is about. Edges: module -> its files (`in`), module -> the `DEPENDS`
modules its files import most (`depends_on`, weighed by how many imports), module -> its
sub-modules (`part_of`), file -> file imports between shown files, note -> note and note ->
file or module (the notes' `files` and links). Only the index's protocols are read, so a
shared database answers too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from loremap.memory.paths import is_path_target
from loremap.use.fresh import NEVER, Freshness, refresh
from loremap.use.notes import list_notes

if TYPE_CHECKING:
    from loremap.app import App
    from loremap.model import Edge
    from loremap.model.search import NodeRow
    from loremap.store.rows import FileRow

FILES = 300  # central files shown by default
MAX_FILES = 5000  # the most a caller may ask for
NOTES = 1000  # newest notes shown by default
MAX_NOTES = 5000  # the most a caller may ask for
MAX_MODULES = 200  # modules shown at most, most central first
DEPENDS = 5  # a module's heaviest dependencies drawn (its edges cost the page more than nodes)


class GraphNode(NamedTuple):
    id: str
    kind: str  # module, file, note
    label: str
    type: str  # a note's type ("" for code)
    status: str  # a note's status ("active" for code)
    modules: tuple[str, ...]  # the modules it is in (a note: those of its files)
    rank: float  # PageRank of a file or module (0 for a note)


class GraphEdge(NamedTuple):
    src: str
    dst: str
    rel: str
    weight: float = 1.0


class Graph(NamedTuple):
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    files: int  # code files in the map
    modules: int  # modules in the map
    notes: int  # notes in the index
    warnings: list[str]
    hint: str = ""  # what to do when there are no notes yet

    def shown(self, kind: str) -> int:
        return sum(node.kind == kind for node in self.nodes)


def module_id(module: str) -> str:
    """The index node of a module folder ("" is the repository root): its path and a `/`."""
    return (module or ".") + "/"


def graph(app: App, freshness: Freshness, files: int = FILES, notes: int = NOTES) -> Graph:
    """The graph of the project's memory, with at most `files` code files and `notes` notes."""
    warnings = refresh(app, freshness)
    store = app.store
    rows = store.code_files()
    module_of = {row.path: row.module for row in rows}
    central = sorted(rows, key=lambda r: (-r.rank, r.path))[:max(0, min(files, MAX_FILES))]
    modules = _modules(app, module_of.values())
    nodes = [*modules.values(), *(_file_node(row) for row in central)]
    shown = {node.id for node in nodes}
    edges = [GraphEdge(module_id(row.module), row.path, "in") for row in central
             if module_id(row.module) in shown]
    edges += _module_edges(modules)
    edges += _code_edges(app, module_of, {row.path for row in central}, shown)
    listed = app.list_notes()
    kept = listed[:max(0, min(notes, MAX_NOTES))]
    note_rows = store.nodes([n.id for n in kept])
    for note in kept:
        row = note_rows.get(note.id)
        files_of = row.files if row is not None else ()
        nodes.append(GraphNode(note.id, "note", note.title, note.type, note.status,
                               _modules_of(files_of, module_of), 0.0))
    shown.update(n.id for n in kept)
    edges += _note_edges(note_rows.values(), store.declared_edges(), module_of, shown)
    hint = "" if listed else list_notes(app, NEVER).hint
    return Graph(nodes, edges, len(rows), len(modules), len(listed), warnings, hint)


def _file_node(row: FileRow) -> GraphNode:
    return GraphNode(row.path, "file", row.path.rsplit("/", 1)[-1], "", "active",
                     (module_id(row.module),), row.rank)


def _modules(app: App, folders: Iterable[str]) -> dict[str, GraphNode]:
    """The modules of the map (and of the files' folders), most central first."""
    ids = {module_id(m) for m in app.store.module_summaries()} | {module_id(m) for m in folders}
    found = app.store.nodes(sorted(ids))
    ranked = sorted(ids, key=lambda i: (-(found[i].rank if i in found else 0.0), i))
    return {i: GraphNode(i, "module", i, "", "active", (i,),
                         found[i].rank if i in found else 0.0)
            for i in ranked[:MAX_MODULES]}


def _module_edges(modules: dict[str, GraphNode]) -> list[GraphEdge]:
    """Each module to its closest enclosing module that is shown."""
    out = []
    for node_id in modules:
        parts = node_id.rstrip("/").split("/")
        for cut in range(len(parts) - 1, -1, -1):
            parent = module_id("/".join(parts[:cut]))
            if parent != node_id and parent in modules:
                out.append(GraphEdge(parent, node_id, "part_of"))
                break
    return out


def _code_edges(app: App, module_of: dict[str, str], central: set[str], shown: set[str]
                ) -> list[GraphEdge]:
    """Imports between shown files, and each module's heaviest dependencies on other modules
    (imports counted over every file)."""
    out: list[GraphEdge] = []
    between: Counter[tuple[str, str]] = Counter()
    for edge in app.store.graph_edges(("import",)):
        if edge.src in central and edge.dst in central:
            out.append(GraphEdge(edge.src, edge.dst, "imports"))
        src, dst = module_of.get(edge.src), module_of.get(edge.dst)
        if src is not None and dst is not None and src != dst:
            between[(module_id(src), module_id(dst))] += 1
    heaviest: dict[str, list[tuple[int, str]]] = {}
    for (a, b), n in between.items():
        if a in shown and b in shown:
            heaviest.setdefault(a, []).append((-n, b))
    for a, ends in sorted(heaviest.items()):
        out += [GraphEdge(a, b, "depends_on", float(-n)) for n, b in sorted(ends)[:DEPENDS]]
    return out


def _modules_of(paths: Iterable[str], module_of: dict[str, str]) -> tuple[str, ...]:
    found = []
    for path in paths:
        if path in module_of:
            found.append(module_id(module_of[path]))
        elif path.endswith("/") or "." not in path.rsplit("/", 1)[-1]:
            found.append(module_id(path.strip("/")))  # a folder named as a link target
    return tuple(dict.fromkeys(found))


def _note_edges(rows: Iterable[NodeRow], declared: list[Edge], module_of: dict[str, str],
                shown: set[str]) -> list[GraphEdge]:
    """Note -> note links, and note -> the file it is about (or that file's module when the
    file is not shown, or the module a link names)."""
    pairs = [(row.id, path, "about") for row in rows for path in row.files]
    pairs += [(e.src, e.dst, e.rel) for e in declared]
    out: dict[tuple[str, str, str], GraphEdge] = {}
    for src, dst, rel in pairs:
        if src not in shown:
            continue
        target = dst
        if is_path_target(dst) and dst not in shown:
            targets = _modules_of([dst], module_of)
            target = targets[0] if targets else dst
        if target in shown and target != src:
            out.setdefault((src, target, rel), GraphEdge(src, target, rel))
    return list(out.values())
