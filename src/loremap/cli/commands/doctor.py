"""`loremap doctor [--fix]`: check vault and index, the agents wired to loremap and the daemon;
exit 1 while an error remains unrepaired.

Outside a project it checks the personal vault and its index, says there is no project, and
exits 0 unless those have an error: the personal vault is worth checking anywhere.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from loremap.app import App
from loremap.cli.output import count, emit_json, lines
from loremap.config import find_project_root
from loremap.memory.doctor import diagnose
from loremap.store.sqlite import fts5_available
from loremap.use.daemon import health
from loremap.use.wiring import wiring

_MARK = {"ok": "ok  ", "warning": "warn", "error": "FAIL"}


def run(args: argparse.Namespace) -> int:
    app = App.open(require_project=False)
    try:
        repo = find_project_root(Path.cwd()) if app.loremap_dir is None else app.root
        findings = diagnose(app.memory, app.loremap_dir, fts5_available(), fix=args.fix,
                            repo=repo)
        if app.loremap_dir is not None:
            from loremap.use.calibrate import in_force

            findings.append(in_force(app))
    finally:
        app.close()
    if args.fix and any(f.check == "index-file" and f.fixed for f in findings):
        # The damaged index was set aside: the checks run again on the new one, which the
        # repair of a stale index fills from the notes.
        app = App.open(require_project=False)
        try:
            findings = [f for f in findings if f.check == "index-file"] + [
                f for f in diagnose(app.memory, app.loremap_dir, fts5_available(), fix=True,
                                    repo=repo) if f.check != "index"]
        finally:
            app.close()
    findings += wiring(Path.cwd(), os.environ, fix=args.fix)
    findings += health(os.environ, fix=args.fix)
    open_problems = [f for f in findings if f.level == "error" and not f.fixed]
    warnings = [f for f in findings if f.level == "warning" and not f.fixed]
    if args.json:
        emit_json({"ok": not open_problems, "project": str(app.root) if app.root else None,
                   "notices": app.notices, "findings": [f._asdict() for f in findings]})
        return 1 if open_problems else 0
    lines(f"notice  {n}" for n in app.notices)
    for f in findings:
        lines([f"{_MARK[f.level]}  {f.check}: {f.message}{' (fixed)' if f.fixed else ''}"])
    if open_problems:
        hint = "" if args.fix else "; `loremap doctor --fix` repairs what it can"
        lines([f"{count(len(open_problems), 'problem')}{hint}"])
        return 1
    if app.loremap_dir is None:
        lines(["no project here; the personal vault has no errors"])
    else:
        lines([f"no errors ({count(len(warnings), 'warning')})" if warnings else "all good"])
    return 0
