"""The code map's pages: the level-0 map and one module's page, for `loremap map`, the MCP
`map` tool and resource, and `read`.

`map_page` brings the code map up to date first (incremental: nothing is parsed when nothing
changed) and, for a module the map does not know, names the modules it most likely meant.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from loremap.errors import NotFound
from loremap.memory.paths import is_path_target, repo_path
from loremap.use.fresh import Freshness, refresh

if TYPE_CHECKING:
    from loremap.app import App
    from loremap.model.search import NodeRow


class ModulePage(NamedTuple):
    module: str  # "" for the level-0 map
    path: str
    text: str


class Mapped(NamedTuple):
    page: ModulePage
    warnings: list[str]


def module_page(app: App, module: str) -> ModulePage | None:
    """The page of `module` (a repository-relative folder), or None when it has none."""
    from loremap.codemap.render import MODULES_DIR
    from loremap.model.code import module_slug

    module = module.strip("/")
    if app.loremap_dir is None or not module:
        return None
    page = app.loremap_dir / MODULES_DIR / f"{module_slug(module)}.md"
    if page.is_file():
        return ModulePage(module, str(page), _page_text(app.loremap_dir, page))
    return None


def _page_text(loremap_dir: Path, page: Path) -> str:
    """A map page's text, never through a symlink (`UnsafePath`: a committed page linked to
    another file would put that file in the agent's context)."""
    from loremap.vault.fs import read_confined

    return read_confined(page, loremap_dir.parent).decode("utf-8")


def map_page(app: App, module: str | None, cwd: Path | None = None) -> Mapped:
    """The level-0 map (`module` None or empty), or one module's page; the module is a folder
    relative to `cwd` (the repository root when None), so `.` is the folder one stands in."""
    from loremap.codemap.render import did_you_mean, module_label

    if app.root is None or app.loremap_dir is None:
        raise NotFound("no loremap project here: run `loremap init` in the repository")
    app.index_code()
    warnings = app.take_notices()
    folder = _module(module, app.root, app.root if cwd is None else cwd) if module else ""
    if not folder:
        path = app.loremap_dir / "map.md"
        return Mapped(ModulePage("", str(path), _page_text(app.loremap_dir, path)), warnings)
    page = module_page(app, folder)
    if page is None:
        hint = did_you_mean(folder, app.store.module_summaries())
        raise NotFound(f"no module {module_label(folder)} in the code map" + (
            f"; {hint}" if hint else " (modules are folders with source files; the map "
                                     "without a module lists them)"))
    return Mapped(page, warnings)


def _module(raw: str, root: Path, cwd: Path) -> str:
    """A module argument as the index names it: repository-relative, no trailing '/'."""
    import os

    raw = raw.strip()
    candidate = Path(os.path.normpath(cwd / Path(raw).expanduser()))
    try:
        rel = candidate.relative_to(root).as_posix()
    except ValueError:
        rel = raw
    return "" if rel in (".", "./", "") else rel.strip("/")


class Connection(NamedTuple):
    node: str
    rel: str
    outgoing: bool  # the target is the edge's source
    weight: float
    row: NodeRow | None  # the other end, when it is a node of the index


class Related(NamedTuple):
    target: str
    connections: list[Connection]  # heaviest first
    warnings: list[str]


def related(app: App, target: str, freshness: Freshness) -> Related:
    """What a note or a file is connected to: links, files, imports, importers, co-change."""
    target = target.strip()
    if is_path_target(target) and app.root is not None:
        target = repo_path(target, app.root, app.root)
    warnings = refresh(app, freshness)
    edges = app.store.edges(target)
    if not edges:
        raise NotFound(f"{target!r} has no links: not a note id or a file of the code map, or "
                       "nothing is connected to it yet")
    ends = [(e.dst if e.src == target else e.src, e.rel, e.src == target, e.weight)
            for e in edges]
    ends.sort(key=lambda end: (-end[3], end[0]))
    rows = app.store.nodes([end[0] for end in ends])
    return Related(target, [Connection(*end, rows.get(end[0])) for end in ends], warnings)
