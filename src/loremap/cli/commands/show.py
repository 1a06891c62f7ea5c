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
    if not as_json:
        lines(app.memory.page(note_id))
        return 0
    loaded, vault = app.memory.read(note_id)
    note = loaded.note._asdict()
    note["links"] = [{"rel": link.rel.value, "target": link.target} for link in loaded.note.links]
    note["file_hashes"] = dict(loaded.note.file_hashes)
    note["extra"] = dict(loaded.note.extra)
    emit_json({"note": note, "scope": vault.scope, "path": vault.display(loaded.file.path),
               "linked_from": [{"id": e.src, "rel": e.rel}
                               for e in app.memory.linked_from(note_id)]})
    return 0


def _file(app: App, path: str, as_json: bool) -> int:
    from loremap.codemap.views import describe_file, file_lines

    view = describe_file(app.store, path)
    if view is None:
        raise NotFound(f"{path} is not in the code map (run `loremap index`; binary, generated "
                       "and vendored files are left out)")
    if as_json:
        emit_json(view._asdict())
        return 0
    lines(file_lines(view))
    return 0
