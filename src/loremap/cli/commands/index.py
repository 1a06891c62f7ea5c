"""`loremap index`: update the code map incrementally and re-render the map pages."""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import count, emit_json, lines, progress, warn
from loremap.use.embeddings import embed_new


def run(args: argparse.Namespace) -> int:
    with App.open() as app:
        report = app.index_code(progress(args, "indexing"))
        embedded, warnings = embed_new(app, progress(args, "embedding"))
        app.notices += warnings
    data = {"files": report.files, "parsed": report.parsed, "removed": report.removed,
            "skipped": report.skipped, "history": report.history, "embedded": embedded,
            "seconds": round(report.seconds, 3), "warnings": app.notices}
    if args.json:
        emit_json(data)
        return 0
    warn(app.notices)
    skipped = sum(report.skipped.values())
    reasons = ", ".join(f"{n} {why}" for why, n in sorted(report.skipped.items()))
    lines([f"code map: {count(report.files, 'file')}, {report.parsed} parsed, "
           f"{report.removed} removed" + (f", {skipped} skipped ({reasons})" if skipped else "")
           + f"; history: {report.history}; {report.seconds:.2f} s"
           + (f"; embedded {count(embedded, 'node')}" if embedded else "")])
    return 0
