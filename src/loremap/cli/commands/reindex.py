"""`loremap reindex`: drop the index and rebuild it from the vault files alone."""

from __future__ import annotations

import argparse
import time

from loremap.app import App
from loremap.cli.output import count, emit_json, lines, warn


def run(args: argparse.Namespace) -> int:
    app = App.open(require_project=False, fresh_index=True)
    try:
        started = time.perf_counter()
        outcome = app.memory.rebuild()
        seconds = time.perf_counter() - started
    finally:
        app.close()
    data = {"indexed": outcome.counts["indexed"], "skipped": outcome.counts["skipped"],
            "seconds": round(seconds, 3), "warnings": outcome.warnings}
    if args.json:
        emit_json(data)
        return 0
    warn(outcome.warnings)
    lines([f"rebuilt the index from the vault: {count(outcome.counts['indexed'], 'note')} "
           f"indexed, {outcome.counts['skipped']} skipped, in {seconds:.2f} s"])
    return 0
