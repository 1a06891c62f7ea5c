"""`loremap forget ID`: archive a note (kept in the vault, out of search), or purge it."""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import emit_json, lines, warn


def run(args: argparse.Namespace) -> int:
    app = App.open(require_project=False)
    try:
        app.memory.reconcile()
        outcome = app.memory.forget(args.id, reason=args.reason, purge=args.purge)
    finally:
        app.close()
    action = "purged" if args.purge else "archived"
    if args.json:
        emit_json({"id": args.id, "action": action, "path": outcome.paths[0],
                   "warnings": outcome.warnings})
        return 0
    warn(outcome.warnings)
    lines([f"{action} {args.id} ({outcome.paths[0]})"])
    return 0
