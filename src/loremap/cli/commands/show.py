"""`loremap show ID|PATH`: a note as written in its file and what links to it, or what the code
map knows of a file (module, symbols, imports, importers, co-change partners, linked notes), or
a module's page."""

from __future__ import annotations

import argparse

from loremap.cli import context
from loremap.cli.output import emit_json, lines, warn
from loremap.use.fresh import ALWAYS
from loremap.use.notes import FilePage, NotePage, Page, read, render_page


def run(args: argparse.Namespace) -> int:
    with context.open_app(require_project=False) as app:
        done = read(app, args.id, ALWAYS, cwd=context.cwd())
    if args.json:
        emit_json({**_as_json(done.page), "warnings": done.warnings})
        return 0
    warn(done.warnings)
    lines(render_page(done.page))
    return 0


def _as_json(page: Page) -> dict[str, object]:
    if isinstance(page, NotePage):
        note = page.note._asdict()
        note["links"] = [{"rel": link.rel.value, "target": link.target}
                         for link in page.note.links]
        note["file_hashes"] = dict(page.note.file_hashes)
        note["extra"] = dict(page.note.extra)
        return {"note": note, "scope": page.scope, "path": page.path,
                "in_database_only": page.in_database_only,
                "linked_from": [{"id": e.src, "rel": e.rel} for e in page.linked_from]}
    if isinstance(page, FilePage):
        return dict(page.view._asdict())
    return {"module": page.module, "path": page.path, "text": page.text}
