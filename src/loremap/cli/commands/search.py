"""`loremap search QUERY`: BM25 over the notes. Any text is safe: it is analysed, not parsed."""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import count, emit_json, lines, warn


def run(args: argparse.Namespace) -> int:
    app = App.open(require_project=False)
    try:
        outcome = app.memory.reconcile()
        outcome.warnings[:0] = app.notices
        limit = args.limit if args.limit is not None else app.settings.get_int("search.limit")
        query = " ".join(args.query)
        hits = app.memory.search(query, limit, args.types, args.statuses or ["active"],
                                 args.kinds or ["note"])
    finally:
        app.close()
    if args.json:
        emit_json({"query": query, "hits": [h._asdict() for h in hits],
                   "warnings": outcome.warnings})
        return 0
    warn(outcome.warnings)
    if not hits:
        lines(["nothing relevant in memory"])
        return 0
    for hit in hits:
        flag = "" if hit.status == "active" else f" [{hit.status}]"
        if hit.kind != "note":
            lines([f"[{hit.kind}] {hit.path or hit.id}"])
        else:
            lines([f"[{hit.type}] {hit.title}{flag} — {hit.path}"])
        if hit.snippet:
            lines([f"  {hit.snippet}"])
    lines([f"({count(len(hits), 'result')})"])
    return 0
