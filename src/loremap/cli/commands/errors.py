"""`loremap errors`: the failures the hooks logged here, how often, and what fixed them."""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import emit_json, lines, warn
from loremap.use.errors import errors
from loremap.use.fresh import ALWAYS


def run(args: argparse.Namespace) -> int:
    with App.open() as app:
        found = errors(app, ALWAYS)
    if args.json:
        emit_json({"errors": [{
            "signature": e.signature, "count": e.times, "first": e.first, "last": e.last,
            "tool": e.tool, "command": e.command,
            "notes": [{"id": n.id, "title": n.title, "remedy": n.remedy,
                       "remedy_title": n.remedy_title} for n in e.notes]}
            for e in found.seen], "warnings": found.warnings})
        return 0
    warn(found.warnings)
    if not found.seen:
        lines(["no tool-call failure logged in this clone (the hooks log them: Claude Code's "
               "PostToolUseFailure)"])
        return 0
    out = []
    for e in found.seen:
        where = f"{e.tool}: {e.command}" if e.command else e.tool
        out.append(f"{e.times}×  {e.signature}  (last {e.last}; {where})")
        for note in e.notes:
            fix = (f"fixed by {note.remedy} ({note.remedy_title})" if note.remedy_title else
                   f"remedy {note.remedy} (not in the memory)" if note.remedy else
                   "no remedy recorded")
            out.append(f"    {note.id}: {fix}")
        if not e.notes:
            out.append("    no error note: `loremap remember -t error --error TEXT --remedy ID`")
    lines(out)
    return 0
