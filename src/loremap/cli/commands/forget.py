"""`loremap forget ID`: archive a note (kept in the vault, out of search), or purge it."""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import emit_json, lines, warn
from loremap.use.fresh import ALWAYS
from loremap.use.notes import forget


def run(args: argparse.Namespace) -> int:
    with App.open(require_project=False) as app:
        done = forget(app, args.id, ALWAYS, reason=args.reason, purge=args.purge)
    action = "purged" if done.purged else "archived"
    if args.json:
        emit_json({"id": done.id, "action": action, "path": done.path,
                   "warnings": done.warnings})
        return 0
    warn(done.warnings)
    lines([f"{action} {done.id} ({done.path})"])
    return 0
