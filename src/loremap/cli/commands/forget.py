"""`loremap forget ID`: archive a note (kept in the vault, out of search), purge it, or erase
it completely (`--erase --reason TEXT`)."""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import emit_json, lines, warn
from loremap.use.fresh import ALWAYS
from loremap.use.notes import forget


def run(args: argparse.Namespace) -> int:
    with App.open(require_project=False) as app:
        done = forget(app, args.id, ALWAYS, reason=args.reason, purge=args.purge,
                      erase=args.erase)
    if args.json:
        emit_json({"id": done.id, "action": done.action, "path": done.path,
                   "scrubbed": list(done.scrubbed), "warnings": done.warnings})
        return 0
    warn(done.warnings)
    lines([f"{done.action} {done.id} ({done.path})",
           *(f"  quotes of it removed from {path}" for path in done.scrubbed)])
    return 0
