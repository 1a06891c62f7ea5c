"""`loremap show ID`: one note as written in its file, and what links to it."""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import emit_json, lines


def run(args: argparse.Namespace) -> int:
    app = App.open(require_project=False)
    try:
        app.memory.reconcile()
        loaded, vault = app.memory.read(args.id)
        edges = app.store.edges(args.id)
    finally:
        app.close()
    incoming = [e for e in edges if e.dst == args.id and e.src != args.id]
    if args.json:
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
