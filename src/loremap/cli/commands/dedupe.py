"""`loremap dedupe [--apply]`: notes that say the same thing; provable ones merged."""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import emit_json, lines, warn
from loremap.use.dedupe import dedupe
from loremap.use.fresh import ALWAYS


def run(args: argparse.Namespace) -> int:
    with App.open(require_project=False) as app:
        found = dedupe(app, ALWAYS, apply=args.apply)
    if args.json:
        emit_json({"same": [s._asdict() for s in found.same],
                   "near": [n._asdict() for n in found.near], "applied": found.applied,
                   "warnings": found.warnings})
        return 0
    warn(found.warnings)
    out = []
    if found.same:
        verb = "merged" if found.applied else "the same text (merged by --apply)"
        out.append(f"{verb}:")
        out += [f"  {s.keep} <= {s.copy}  (\"{s.alias}\" becomes an alias)" for s in found.same]
    if found.near:
        out.append("near (judge each: forget one, or supersede it):")
        out += [f"  {n.score:.2f}  {n.a} ~ {n.b}  (similar {n.why})" for n in found.near]
    if not out:
        out = ["no duplicate notes"]
    lines(out)
    return 0
