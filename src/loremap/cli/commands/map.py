"""`loremap map [MODULE]`: the level-0 map of the repository, or one module's page."""

from __future__ import annotations

import argparse

from loremap.cli import context
from loremap.cli.output import emit_json, lines, warn
from loremap.use.code import map_page


def run(args: argparse.Namespace) -> int:
    from loremap.codemap.render import module_label

    with context.open_app() as app:
        done = map_page(app, args.module, cwd=context.cwd())
    page = done.page
    if args.json:
        emit_json({"module": module_label(page.module) if page.module else "map",
                   "path": page.path, "text": page.text})
        return 0
    warn(done.warnings)
    lines([page.text.rstrip("\n")])
    return 0
