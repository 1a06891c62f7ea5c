"""`loremap reindex`: drop the index and rebuild it from the vault files alone (a progress bar
for the notes, then one for the code: `output.progress`)."""

from __future__ import annotations

import argparse
import time

from loremap.app import App
from loremap.cli.output import count, emit_json, lines, progress, warn


def run(args: argparse.Namespace) -> int:
    app = App.open(require_project=False, fresh_index=True)
    try:
        started = time.perf_counter()
        outcome = app.memory.rebuild(progress(args, "indexing notes"))
        files = (app.index_code(progress(args, "indexing code")).files
                 if app.loremap_dir is not None else 0)
        seconds = time.perf_counter() - started
    finally:
        app.close()
    data = {"indexed": outcome.counts["indexed"], "skipped": outcome.counts["skipped"],
            "files": files,
            "seconds": round(seconds, 3), "warnings": outcome.warnings}
    if args.json:
        emit_json(data)
        return 0
    warn(outcome.warnings)
    lines([f"rebuilt the index: {count(outcome.counts['indexed'], 'note')} indexed, "
           f"{outcome.counts['skipped']} skipped, {count(files, 'source file')} in the code map, "
           f"in {seconds:.2f} s"])
    return 0
