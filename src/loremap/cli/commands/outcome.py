"""`loremap outcome ID success|failure`: count whether following a procedure worked."""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import emit_json, lines, warn
from loremap.search.track import record_text
from loremap.use.fresh import ALWAYS
from loremap.use.notes import outcome


def run(args: argparse.Namespace) -> int:
    with App.open(require_project=False) as app:
        done = outcome(app, args.id, args.result, ALWAYS, args.note)
    if args.json:
        emit_json({"id": done.id, "path": done.path, "successes": done.successes,
                   "failures": done.failures, "lower_bound": round(done.lower_bound, 4),
                   "warnings": done.warnings})
        return 0
    warn(done.warnings)
    lines([f"{args.result} counted for {done.id} ({done.path}): "
           f"{record_text(done.successes, done.failures)} "
           f"(lower bound {done.lower_bound:.2f})"])
    return 0
