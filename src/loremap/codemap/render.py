"""The map pages: level 0 (`.loremap/map.md`, at most 500 tokens) and one page per module.

Opened as an Obsidian vault, `.loremap/` shows code and lore connected: map.md links the module
pages, a module page links the modules it depends on and is used by and the notes about its
files, and a note links the module pages of its files (`vault/frontmatter.links_section`). The
links are `[[page|label]]` wikilinks to a page's file name, which is unique in the vault (notes
by id, module pages by slug). A folder that notes name but the code map has no file in gets a
page of its own, listing those notes, so every link resolves.

Everything here is deterministic (sorted, rounded ranks, no clocks), so re-rendering an
unchanged repository gives the same bytes and the pages diff cleanly in git. Pages are only
written when their bytes change; pages of modules that disappeared are removed. No page is
written, compared or removed through a symlink (`map.md` linked elsewhere, a `modules/` folder
linked out of the repository): the render refuses with one line (`UnsafePath`) first.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from itertools import zip_longest
from pathlib import Path
from typing import NamedTuple

from loremap.codemap.languages import LANGUAGES
from loremap.errors import UnsafePath
from loremap.model import Edge
from loremap.model.code import KIND_ORDER, is_path_target, module_of, module_slug
from loremap.store import FileRow, IndexStore
from loremap.text import estimate_tokens
from loremap.vault.fs import atomic_write, check_folder, check_write, read_nofollow

MAP_BUDGET = 500
MODULES_DIR = "modules"


class Snapshot(NamedTuple):
    """What the renderers read from the index, once."""

    files: list[FileRow]
    edges: list[Edge]
    notes: dict[str, int]


def module_label(module: str) -> str:
    return f"{module}/" if module else "./"


def module_link(module: str) -> str:
    """The wikilink to a module's page, shown as its folder."""
    return f"[[{module_slug(module)}|{module_label(module)}]]"


def closest_modules(wanted: str, modules: Iterable[str], limit: int = 3) -> list[str]:
    """The modules a missing module name most likely meant, best first (at most `limit`).

    The modules it is the tail of (`flask` -> `src/flask`) or whose last folder it names
    (`lib/flask` -> `src/flask`), shortest first; when there are none, difflib's closest paths
    and last folders (`flsk` -> `src/flask`). The root module is never suggested (`map`
    without a module shows it). For the did-you-mean of `loremap map` and the MCP `map` tool.
    """
    import difflib

    wanted = wanted.strip().strip("/")
    known = sorted(m for m in set(modules) if m)
    if not wanted or limit <= 0:
        return []
    tail = wanted.rsplit("/", 1)[-1]
    exact = sorted((m for m in known if m.endswith("/" + wanted)
                    or m.rsplit("/", 1)[-1] == tail), key=lambda m: (len(m), m))
    if exact:  # a folder of that name: near-certain, and a longer list only buries it
        return exact[:limit]
    by_name: dict[str, list[str]] = defaultdict(list)
    for m in known:
        by_name[m.rsplit("/", 1)[-1]].append(m)
    near = difflib.get_close_matches(wanted, known, n=limit)
    for name in difflib.get_close_matches(tail, list(by_name), n=limit):
        near += by_name[name]
    return list(dict.fromkeys(near))[:limit]


def did_you_mean(wanted: str, modules: Iterable[str]) -> str:
    """"did you mean src/flask/?" naming `closest_modules`, or "" when none is close."""
    labels = [module_label(m) for m in closest_modules(wanted, modules)]
    if not labels:
        return ""
    named = labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} or {labels[-1]}"
    return f"did you mean {named}?"


def _key(f: FileRow) -> tuple[float, str]:
    return (-round(f.rank, 6), f.path)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def snapshot(store: IndexStore, modules: frozenset[str] | None = None) -> Snapshot:
    """Files, notes and the edges the pages show (with `modules`, only edges touching them)."""
    files = store.code_files()
    touching = None if modules is None else [f.path for f in files if f.module in modules]
    return Snapshot(files, store.graph_edges(["import", "cochange"], touching),
                    store.note_counts())


def render_map(snap: Snapshot, project: str, summaries: dict[str, str]) -> str:
    """Level 0: languages, modules with their central files, the most central files, notes."""
    files = sorted(snap.files, key=_key)
    languages = Counter(LANGUAGES[f.language].label for f in files if f.language in LANGUAGES)
    langs = ", ".join(f"{name} {n}" for name, n in sorted(languages.items(),
                                                           key=lambda kv: (-kv[1], kv[0])))
    notes = ", ".join(f"{n} {t}" for t, n in sorted(snap.notes.items())) or "none yet"
    head = [f"# Map of {project}", "",
            f"{len(files)} source files ({langs or 'no supported language'}). Notes: {notes}.", ""]
    by_module: dict[str, list[FileRow]] = defaultdict(list)
    for f in files:
        by_module[f.module].append(f)
    module_rank = sorted(by_module, key=lambda m: (-round(sum(f.rank for f in by_module[m]), 6),
                                                   m))
    module_lines = []
    for module in module_rank:
        members = by_module[module]
        central = ", ".join(f.path.rsplit("/", 1)[-1] for f in members[:3])
        summary = _clip(summaries.get(module, ""), 90)
        files_n = f"{len(members)} file" + ("s" if len(members) != 1 else "")
        module_lines.append(f"- {module_link(module)} ({files_n})"
                            + (f": {summary}" if summary else "") + f" — {central}")
    file_lines = [f"- `{f.path}`" + (f" — {_clip(f.docstring, 80)}" if f.docstring else "")
                  for f in files[:10]]
    tail = ["", "Zoom in with `loremap map <module>`; open a file with `loremap show <path>`."]
    return _fit(head, ["## Modules"], module_lines, ["", "## Central files"], file_lines, tail)


def _fit(head: list[str], mod_head: list[str], modules: list[str], file_head: list[str],
         files: list[str], tail: list[str]) -> str:
    """As many module and file lines as fit in MAP_BUDGET tokens, best first."""
    chosen_modules: list[str] = []
    chosen_files: list[str] = []

    def text() -> str:
        body = head + mod_head + chosen_modules + file_head + chosen_files + tail
        return "\n".join(body) + "\n"

    # Alternate modules and files so that a tight budget keeps the best of both.
    pairs = zip_longest([("m", line) for line in modules[:12]], [("f", line) for line in files])
    queue = [item for pair in pairs for item in pair if item is not None]
    for kind, line in queue:
        target = chosen_modules if kind == "m" else chosen_files
        target.append(line)
        if estimate_tokens(text()) > MAP_BUDGET:
            target.pop()
    return text()


class ModuleFacts(NamedTuple):
    """Everything one module page shows, gathered for all modules in one pass."""

    members: list[FileRow]
    depends: Counter[str]
    used_by: Counter[str]
    partners: list[tuple[float, str, str]]


def module_facts(snap: Snapshot) -> dict[str, ModuleFacts]:
    """Per module: ranked files, module dependencies both ways, co-change pairs."""
    facts: dict[str, ModuleFacts] = {}
    for f in sorted(snap.files, key=_key):
        if f.module not in facts:
            facts[f.module] = ModuleFacts([], Counter(), Counter(), [])
        facts[f.module].members.append(f)
    module = {f.path: f.module for f in snap.files}
    for e in snap.edges:
        a, b = module.get(e.src), module.get(e.dst)
        if a is None or b is None:
            continue
        if e.origin == "import" and a != b:
            facts[a].depends[b] += 1
            facts[b].used_by[a] += 1
        elif e.origin == "cochange":
            pair = (-round(e.weight, 3), e.src, e.dst)
            facts[a].partners.append(pair)
            if b != a:
                facts[b].partners.append(pair)
    return facts


def render_module(module: str, facts: ModuleFacts, summary: str,
                  symbols: dict[str, list[tuple[str, str, int]]],
                  notes: Sequence[tuple[str, str, str]]) -> str:
    """Level 1: one module's purpose, ranked files, dependencies, co-change partners, notes."""
    lines = [f"# Module `{module_label(module)}`", "", summary or "(no README or docstring)", "",
             "## Files", ""]
    if not facts.members:
        lines.append("None in the code map: the notes below name paths in this folder.")
    for f in facts.members:
        names = sorted(symbols.get(f.path, []), key=lambda s: (KIND_ORDER.get(s[1], 9), s[2]))
        key = ", ".join(dict.fromkeys(name for name, _, _ in names[:6]))
        doc = f" — {_clip(f.docstring, 100)}" if f.docstring else ""
        lines.append(f"- `{f.path.rsplit('/', 1)[-1]}`{doc}" + (f" ({key})" if key else ""))
    lines += _counted("Depends on", facts.depends)
    lines += _counted("Used by", facts.used_by)
    if facts.partners:
        lines += ["", "## Changes together with", ""]
        lines += [f"- `{a}` and `{b}` ({-w:.2f})" for w, a, b in sorted(facts.partners)[:8]]
    if notes:
        lines += ["", "## Notes", ""]
        lines += [f"- [{t}] {title} ([[{note_id}]])" for note_id, t, title in notes]
    return "\n".join(lines) + "\n"


def _counted(title: str, counts: Counter[str]) -> list[str]:
    if not counts:
        return []
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ["", f"## {title}", ""] + [
        f"- {module_link(m)} ({n} import{'s' if n != 1 else ''})" for m, n in ordered[:10]]


def write_if_changed(path: Path, text: str, root: Path) -> bool:
    """Write `text` to `path` unless it holds it already; never through a symlink out of
    `root` or at `path` (`UnsafePath`, nothing written)."""
    data = text.encode("utf-8")
    check_write(path, root)
    try:
        if read_nofollow(path)[0] == data:
            return False
    except (OSError, UnsafePath):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data, root)
    return True


def render_all(store: IndexStore, root: Path, loremap_dir: Path,
               only: frozenset[str] | None = None, project: str | None = None) -> int:
    """Write map.md and every module page that changed; remove pages of vanished modules.

    `only` names the modules whose pages can have changed (the others are not rendered).
    """
    boundary = loremap_dir.parent
    pages = loremap_dir / MODULES_DIR
    check_folder(pages, boundary)  # stale pages are deleted: never in a folder linked out
    snap = snapshot(store, only)
    summaries = store.module_summaries()
    written = int(write_if_changed(loremap_dir / "map.md",
                                   render_map(snap, project or root.name, summaries), boundary))
    facts_by_module = module_facts(snap)
    notes = store.notes_by_path()
    for path in notes:  # folders named by notes only: a page each, so their links resolve
        if is_path_target(path):
            facts_by_module.setdefault(module_of(path), ModuleFacts([], Counter(), Counter(),
                                                                    []))
    by_module: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    for path, about in notes.items():
        if is_path_target(path):
            by_module[module_of(path)].update(about)
    keep = set()
    for module, facts in sorted(facts_by_module.items()):
        name = f"{module_slug(module)}.md"
        keep.add(name)
        if only is not None and module not in only:
            continue
        linked = sorted(by_module.get(module, set()))
        # One module's definitions at a time: a large repository never holds them all.
        page = render_module(module, facts, summaries.get(module, ""),
                             store.module_symbols(module), linked)
        written += write_if_changed(pages / name, page, boundary)
    if pages.is_dir():
        for stale in pages.glob("*.md"):
            if stale.name not in keep:
                stale.unlink()
                written += 1
    return written
