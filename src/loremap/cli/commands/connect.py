"""`loremap connect AGENT [--dry-run] [--undo]` and `loremap connect --list`: loremap's MCP
server, instructions and hooks in another agent's files (see agents/connect)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from loremap.cli.output import emit_json, lines, warn
from loremap.errors import InvalidInput


def run(args: argparse.Namespace) -> int:
    from loremap.agents import connect

    if args.list:
        if args.undo or args.dry_run:
            raise InvalidInput("--list only lists; leave out --undo and --dry-run")
        found = connect.list_agents(Path.cwd(), args.agent, os.environ)
        if args.json:
            emit_json({"agents": found})
        else:
            lines(_listing(found))
        return 0
    if not args.agent:
        from loremap.agents.connect.agents import BY_NAME

        raise InvalidInput(f"name an agent ({', '.join(BY_NAME)}) or use --list")
    report = connect.connect(args.agent, Path.cwd(), undo=args.undo, dry_run=args.dry_run,
                             environ=os.environ)
    if args.json:
        emit_json(report)
    else:
        lines(_report(report))
        warn(report["warnings"])
    return 0


def _listing(agents: list[dict[str, Any]]) -> list[str]:
    out = []
    for agent in agents:
        hooks = "context hooks" if agent["hooks"] else "no context hooks"
        out.append(f"{agent['agent']} ({agent['title']}): {agent['state']}; {hooks}")
        out += [f"  {f['role']}: {f['shown']} - {f['state']}" for f in agent["files"]]
        out += [f"  note: {note}" for note in agent["notes"]]
        out += [f"  warning: {line}" for line in agent["warnings"]]
    return out


def _report(report: dict[str, Any]) -> list[str]:
    title, undo = report["title"], report["action"] == "undo"
    changed = [f for f in report["files"] if f["action"] != "unchanged"]
    if not changed:
        return ([f"loremap is not connected to {title} (nothing to remove)" if undo
                 else f"loremap is already connected to {title} (nothing to change)"]
                + [f"note: {note}" for note in report["notes"]])
    if report["dry_run"]:
        out = [f["diff"].rstrip("\n") for f in changed]
        return out + ["(dry run: nothing was written)"]
    out = [f"{'Removed loremap from' if undo else 'Connected loremap to'} {title}:"]
    for f in report["files"]:
        backup = f"; backup: {Path(f['backup']).name}" if f["backup"] else ""
        out.append(f"  {f['action']} {f['shown']} ({', '.join(f['roles'])}{backup})")
    out += [f"note: {note}" for note in report["notes"]]
    if not undo:
        out.append(f"Undo with `loremap connect {report['agent']} --undo`.")
    return out
