"""The file graph: import edges, reference edges, ranks and module nodes, from the index alone.

Runs inside the index's write transaction after the changed files were stored. Import edges
are re-resolved for the changed files only, unless files appeared or disappeared (which can
change what any import resolves to); reference edges are one SQL join; ranks warm-start from
the previous ones.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from loremap.codemap.rank import pagerank
from loremap.codemap.resolve import Resolver
from loremap.model import Edge
from loremap.store import FileRow, IndexStore

CENTRAL_PER_MODULE = 5
_README_NAMES = ("README.md", "README.rst", "README.txt", "README", "readme.md", "Readme.md")
# Files whose top comment describes their folder as a whole.
_ENTRY_NAMES = frozenset({"__init__.py", "index.ts", "index.js", "index.tsx", "mod.rs", "lib.rs",
                          "doc.go", "package-info.java", "package.json"})


def rebuild_graph(store: IndexStore, root: Path, changed: Sequence[str], affected: set[str],
                  reresolve: bool, full: bool = False) -> bool:
    """Recompute the edges that `changed` files move, then ranks and modules; return whether
    the ranks were recomputed (when not, only the changed files' modules can look different).

    `affected` are the names whose defining files changed: every file using one of them has its
    reference edges recomputed. `reresolve` (files appeared or disappeared) re-resolves every
    import, since any of them may now point elsewhere. `full` recomputes every edge (after a
    change to how edges are computed).
    """
    all_paths = store.all_file_paths()
    resolver = Resolver(root, all_paths)
    changed_set = set(changed)
    wanted = None if reresolve else changed_set
    sources = changed_set | store.referencing(affected)
    before = None if reresolve else store.outgoing(sources)
    edges = []
    for path, language, specs in store.file_imports(wanted):
        targets = {t for spec in specs for t in resolver.resolve(path, language, spec)}
        edges += [Edge(path, t, "imports", "import") for t in sorted(targets) if t != path]
    store.replace_edges("import", edges, sources=None if wanted is None else sorted(wanted))
    store.rebuild_reference_edges(None if full else sources)
    files = store.code_files()
    if before is not None and store.outgoing(sources) == before:
        # Trigger: the change moved no import or reference edge (an edit inside a function).
        # Why: ranks depend on the edges alone. Outcome: keep them, and refresh only the
        # summaries of the changed files' modules.
        ranks = {f.path: f.rank for f in files}
        touched = {f.module for f in files if f.path in changed_set}
        _modules(store, root, [f for f in files if f.module in touched], ranks, set(all_paths),
                 partial=True)
        return False
    ranks = pagerank([f.path for f in files], store.weighted_edges(["import", "reference"]),
                     start=store.file_ranks())
    store.set_file_ranks(ranks)
    _modules(store, root, files, ranks, set(all_paths))
    return True


def readme_summary(root: Path, module: str, known: set[str]) -> str:
    """The first prose paragraph of the module's README ("" when there is none); `known` are
    the repository's indexed paths, which spares a stat per candidate name."""
    for name in _README_NAMES:
        rel = f"{module}/{name}" if module else name
        if rel not in known:
            continue
        path = root / rel
        try:
            text = path.read_text(encoding="utf-8", errors="replace")[:20_000]
        except OSError:
            return ""
        return readme_paragraph(text)
    return ""


def readme_paragraph(text: str, limit: int = 300) -> str:
    """The first paragraph that is prose: not a heading, badge, HTML, fence or list of links."""
    in_fence = False
    for block in text.replace("\r\n", "\n").split("\n\n"):
        stripped = block.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence if stripped.count("```") % 2 else in_fence
            continue
        if in_fence or not stripped:
            continue
        if stripped.startswith(("#", "<", "[![", "!", "=", "-", "*", "|", ">", "..", ":")):
            continue
        line = " ".join(stripped.split())
        if len(line) < 20:
            continue
        return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
    return ""


def _modules(store: IndexStore, root: Path, files: Sequence[FileRow], ranks: dict[str, float],
             known: set[str], partial: bool = False) -> None:
    """Module nodes (summary, summed rank) and their central-file edges, for the modules of
    `files` (all modules, unless `partial`)."""
    members: dict[str, list[tuple[float, str, str]]] = defaultdict(list)
    for f in files:
        members[f.module].append((-ranks.get(f.path, 0.0), f.path, f.docstring))
    modules: dict[str, tuple[str, float]] = {}
    central: list[Edge] = []
    for module, entries in members.items():
        entries.sort()
        summary = readme_summary(root, module, known)
        if not summary:
            entry = [doc for _, path, doc in entries
                     if doc and path.rsplit("/", 1)[-1] in _ENTRY_NAMES]
            summary = (entry[0] if entry else
                       " ".join(doc for _, _, doc in entries[:2] if doc))[:300]
        modules[module] = (summary, -sum(rank for rank, _, _ in entries))
        node = (module or ".") + "/"
        central += [Edge(node, path, "central_in", "module", -rank)
                    for rank, path, _ in entries[:CENTRAL_PER_MODULE]]
    store.replace_modules(modules, partial)
    sources = sorted((m or ".") + "/" for m in modules) if partial else None
    store.replace_edges("module", central, sources)
