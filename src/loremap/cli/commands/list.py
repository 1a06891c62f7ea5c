"""`loremap list`: the notes in the index (after reconciling with the vault), newest first."""

from __future__ import annotations

import argparse

from loremap.cli import context
from loremap.cli.output import count, emit_json, lines, warn
from loremap.model import NoteType, Status
from loremap.use.fresh import ALWAYS
from loremap.use.notes import list_notes


def run(args: argparse.Namespace) -> int:
    with context.open_app(require_project=False) as app:
        done = list_notes(app, ALWAYS, [NoteType.parse(t) for t in args.types],
                          [Status.parse(s) for s in args.statuses])
    notes = done.notes
    if args.json:
        emit_json({"notes": [n._asdict() for n in notes], "warnings": done.warnings,
                   **({"hint": done.hint} if done.hint else {})})
        return 0
    warn(done.warnings)
    if not notes:
        lines([done.hint])
        return 0
    width = max(len(n.id) for n in notes)
    for n in notes:
        flag = "" if n.status == "active" else f" [{n.status}]"
        scope = " (personal)" if n.scope == "personal" else ""
        date = (n.recorded_at or "")[:10]
        lines([f"{n.id:<{width}}  {date:<10}  {n.title}{flag}{scope}"])
    lines([f"({count(len(notes), 'note')})"])
    return 0
