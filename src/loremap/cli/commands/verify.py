"""`loremap verify CLAIM`: the memory's evidence about a claim (the verdict needs a judge)."""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import emit_json, lines, warn
from loremap.use.fresh import ALWAYS
from loremap.use.verify import render, verify


def run(args: argparse.Namespace) -> int:
    with App.open(require_project=False) as app:
        done = verify(app, " ".join(args.claim), ALWAYS)
    if args.json:
        emit_json({"claim": done.claim, "verdict": done.verdict,
                   "confidence": done.confidence, "judge": done.judge, "reason": done.reason,
                   "evidence": [e._asdict() for e in done.evidence],
                   "warnings": done.warnings})
        return 0
    warn(done.warnings)
    lines(render(done))
    return 0
