"""`loremap calibrate [--dataset FILE] [--apply]`: fit the abstention threshold to the
project."""

from __future__ import annotations

import argparse
from pathlib import Path

from loremap.app import App
from loremap.cli.output import emit_json, lines, warn
from loremap.use.calibrate import Rates, calibrate
from loremap.use.fresh import ALWAYS


def _rates(r: Rates) -> dict[str, object]:
    return {"threshold": r.threshold, "false_abstention": round(r.false_abstention, 4),
            "false_interval": [round(x, 4) for x in r.false_interval],
            "true_abstention": None if r.true_abstention is None
            else round(r.true_abstention, 4),
            "true_interval": None if r.true_interval is None
            else [round(x, 4) for x in r.true_interval]}


def _line(label: str, r: Rates) -> str:
    lo, hi = r.false_interval
    line = (f"{label} coverage {r.threshold:g}: answerable refused {r.false_abstention:.1%} "
            f"[{lo:.1%}, {hi:.1%}]")
    if r.true_abstention is None or r.true_interval is None:
        return line
    tlo, thi = r.true_interval
    return f"{line}, unanswerable refused {r.true_abstention:.1%} [{tlo:.1%}, {thi:.1%}]"


def run(args: argparse.Namespace) -> int:
    with App.open() as app:
        done = calibrate(app, Path(args.dataset) if args.dataset else None, ALWAYS,
                         apply=args.apply)
    if args.json:
        emit_json({"source": done.source, "answerable": done.answerable,
                   "unanswerable": done.unanswerable,
                   "before": _rates(done.before), "after": _rates(done.after),
                   "applied": done.applied, "warnings": done.warnings})
        return 0
    warn(done.warnings)
    unmeasured = [] if done.unanswerable else [
        "true abstention not measured: the log holds no question the memory cannot answer "
        "(--dataset FILE with unanswerable ones measures it)"]
    lines([f"{done.answerable} answerable and {done.unanswerable} unanswerable questions from "
           f"{done.source} (held-in: the figures are on the questions that fitted the "
           "threshold)",
           _line("now   ", done.before), _line("fitted", done.after), *unmeasured,
           "written to search.tuning and search.calibrated in .loremap/config.toml"
           if done.applied else "not written: `--apply` writes it to .loremap/config.toml"])
    return 0
