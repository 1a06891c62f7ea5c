"""`loremap init`: create `.loremap/` and build the index. Running it again is harmless."""

from __future__ import annotations

import argparse
from pathlib import Path

from loremap.app import init_project
from loremap.cli.output import count, emit_json, lines, progress, warn
from loremap.use.fresh import ALWAYS, refresh


def run(args: argparse.Namespace) -> int:
    app, created = init_project(Path.cwd())
    try:
        warnings = refresh(app, ALWAYS)
        report = app.index_code(progress(args, "indexing"))
        warnings += app.take_notices()
        notes = len(app.store.list_notes())
        assert app.loremap_dir is not None
        data = {"project": str(app.root), "created": created, "notes": notes,
                "files": report.files, "index": app.store.location,
                "warnings": warnings}
        if args.json:
            emit_json(data)
            return 0
        warn(warnings)
        if created:
            lines([f"Initialised loremap in {app.loremap_dir}", f"  created: {', '.join(created)}"])
        else:
            lines([f"loremap is already set up in {app.loremap_dir} (nothing to create)"])
        into = app.store.location if app.shared else app.index_path.name
        lines([f"  indexed {count(notes, 'note')} and {count(report.files, 'source file')} "
               f"into {into}; the map is in {app.loremap_dir.name}/map.md",
               "Next: `loremap map`, `loremap remember --type decision --title \"...\" -m "
               "\"...\"`, `loremap search ...`"])
        if app.shared:
            lines(["  shared database: `loremap sync pull` fetches the team's notes, "
                   "`loremap sync push` sends this vault's"])
        return 0
    finally:
        app.close()
