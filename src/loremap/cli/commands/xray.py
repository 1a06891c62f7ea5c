"""`loremap xray`: where an agent's tokens went (Claude Code transcripts), what early
compaction would have saved, and `loremap xray trim PROJECT` to deny never-used MCP servers and
optional built-in tools."""

from __future__ import annotations

import argparse
from pathlib import Path

from loremap.cli.output import emit_json, lines, progress
from loremap.errors import InvalidInput


def run(args: argparse.Namespace) -> int:
    if args.action == "trim":
        return _trim(args)
    from loremap.use.xray import report as xray_report
    from loremap.xray.transcripts import transcripts_root

    root = transcripts_root()
    project = Path(args.project).resolve() if args.project else None
    report = xray_report(project, args.days, Path(args.prices) if args.prices else None,
                         progress(args, "reading transcripts"))
    if args.html:
        from loremap.xray.html import write_html

        write_html(report, Path(args.html))
    if args.json:
        from loremap.xray.records import report_json

        emit_json(report_json(report))
        return 0
    from loremap.xray.text import render

    if not report.files:
        lines([f"no Claude Code transcripts under {root}"
               + (f" for {project}" if project else "")
               + (f" in the last {args.days} days" if args.days else "")
               + " (CLAUDE_CONFIG_DIR moves them)"])
        return 0
    lines(render(report))
    if args.html:
        lines(["", f"HTML report: {args.html}"])
    return 0


def _trim(args: argparse.Namespace) -> int:
    from loremap.xray.trim import apply_trim, plan_trim, undo_trim

    if getattr(args, "days_given", False):
        raise InvalidInput("trim takes its own --days, after the project: "
                           f"`loremap xray trim PROJECT --days {args.days}`")
    project = Path(args.trim_project).resolve()
    if not project.is_dir():
        raise InvalidInput(f"{args.trim_project}: no such project folder")
    if args.undo:
        if args.trim_days is not None:
            raise InvalidInput("--undo removes every rule --apply added: leave out --days")
        result = undo_trim(project)
    else:
        plan = plan_trim(project, args.trim_days)
        result = apply_trim(project, plan) if args.apply else plan.summary()
    if getattr(args, "json", False):
        emit_json(result.json())
        return 0
    lines(result.lines)
    return 0
