"""`loremap show ID|PATH`: a note as written in its file and what links to it, or what the code
map knows of a file (module, symbols, imports, importers, co-change partners, linked notes)."""

from __future__ import annotations

import argparse
from pathlib import Path

from loremap.app import App
from loremap.cli.output import emit_json, lines
from loremap.errors import NotFound
from loremap.memory.paths import is_path_target, repo_path


def run(args: argparse.Namespace) -> int:
    app = App.open(require_project=False)
    try:
        app.memory.reconcile()
        if is_path_target(args.id) and app.root is not None:
            return _file(app, repo_path(args.id, app.root, Path.cwd()), args.json)
        return _note(app, args.id, args.json)
    finally:
        app.close()


def _note(app: App, note_id: str, as_json: bool) -> int:
    loaded, vault = app.memory.read(note_id)
    incoming = [e for e in app.store.edges(note_id) if e.dst == note_id and e.src != note_id]
    if as_json:
        note = loaded.note._asdict()
        note["links"] = [{"rel": link.rel.value, "target": link.target}
                         for link in loaded.note.links]
        note["file_hashes"] = dict(loaded.note.file_hashes)
        note["extra"] = dict(loaded.note.extra)
        emit_json({"note": note, "scope": vault.scope, "path": vault.display(loaded.file.path),
                   "linked_from": [{"id": e.src, "rel": e.rel} for e in incoming]})
        return 0
    lines([f"# {vault.display(loaded.file.path)}",
           loaded.file.path.read_text(encoding="utf-8").rstrip("\n")])
    if incoming:
        lines(["", "Linked from:", *(f"- {e.src} ({e.rel})" for e in incoming)])
    return 0


def _file(app: App, path: str, as_json: bool) -> int:
    from loremap.codemap.views import describe_file

    view = describe_file(app.store, path)
    if view is None:
        raise NotFound(f"{path} is not in the code map (run `loremap index`; binary, generated "
                       "and vendored files are left out)")
    if as_json:
        emit_json(view._asdict())
        return 0
    module = f"{view.module}/" if view.module else "./"
    out = [f"# {view.path}", f"module {module} · {view.language}"]
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
    lines(out)
    return 0
