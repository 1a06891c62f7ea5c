"""`loremap reembed [--stale-only]`: embed the notes and files again (see use/embeddings)."""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import count, emit_json, lines, progress
from loremap.use import embeddings


def run(args: argparse.Namespace) -> int:
    with App.open() as app:
        done = embeddings.reembed(app, args.stale_only, progress(args, "embedding"))
    if args.json:
        emit_json({"model": done.model, "embedded": done.nodes,
                   "seconds": round(done.seconds, 3)})
    else:
        lines([f"embedded {count(done.nodes, 'node')} with {done.model} in "
               f"{done.seconds:.1f} s"])
    return 0
