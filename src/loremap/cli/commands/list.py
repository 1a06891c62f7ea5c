"""`loremap list`: the notes in the index (after reconciling with the vault), newest first."""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import count, emit_json, lines, warn


def run(args: argparse.Namespace) -> int:
    app = App.open(require_project=False)
    try:
        warnings = [*app.notices, *app.reconcile()]
        notes = app.list_notes(args.types, args.statuses)
    finally:
        app.close()
    if args.json:
        emit_json({"notes": [n._asdict() for n in notes], "warnings": warnings})
        return 0
    warn(warnings)
    if not notes:
        lines(["no notes (write one with `loremap remember`)"])
        return 0
    width = max(len(n.id) for n in notes)
    for n in notes:
        flag = "" if n.status == "active" else f" [{n.status}]"
        scope = " (personal)" if n.scope == "personal" else ""
        date = (n.recorded_at or "")[:10]
        lines([f"{n.id:<{width}}  {date:<10}  {n.title}{flag}{scope}"])
    lines([f"({count(len(notes), 'note')})"])
    return 0
