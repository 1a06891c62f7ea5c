"""`loremap import rubi PATH | basic-memory PATH | cuba --bundle DIR|--database URL`: notes
from another memory tool, through the one import path (`imports/run.py`)."""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import count, emit_json, lines, progress, warn


def run(args: argparse.Namespace) -> int:
    from loremap.imports.run import run_import
    from loremap.imports.sources import read_source

    entries = read_source(args.tool, args.path, args.bundle, args.database)
    with App.open(require_project=False) as app:  # personal notes need no project
        report = run_import(app, args.tool, entries, dry_run=args.dry_run,
                            progress=progress(args, f"importing from {args.tool}"))
    if args.json:
        emit_json(report.as_dict())
        return 0
    warn(report.warnings)
    c = report.counts()
    shown = report.notes[:5] if report.dry_run else []
    out = [f"+ {n.id}  [{n.type}] {n.title}" + (" (personal)" if n.personal else "")
           + ("" if n.change == "new" else f"  ({n.change})") for n in shown]
    if report.dry_run and len(report.notes) > len(shown):
        out.append(f"  ... and {len(report.notes) - len(shown)} more")
    out += [f"? {s.where}: {s.reason}" for s in report.skipped]
    types = ", ".join(f"{key.removeprefix('type:')} {n}" for key, n in c.items()
                      if key.startswith("type:"))
    verb = "would import" if report.dry_run else "imported"
    out.append(f"{verb} from {args.tool}: {c['new']} new, {c['updated']} updated, "
               f"{c['archived']} archived, {c['unchanged']} unchanged, "
               f"{count(c['skipped'], 'item')} skipped" + (f"; by type: {types}" if types else ""))
    lines(out)
    return 0
