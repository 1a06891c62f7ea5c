"""`loremap hooks install|uninstall|status claude`: loremap's hooks and MCP server in Claude
Code's settings, the route for those who do not install the plugin (see agents/claude/install).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from pathlib import Path

from loremap.agents.claude import install as claude_install
from loremap.agents.files import unified_diff
from loremap.cli.output import emit_json, lines, warn
from loremap.config import find_project_root


def run(args: argparse.Namespace) -> int:
    scope = args.scope or "user"
    root = find_project_root(Path.cwd())
    if args.action == "status":
        found = claude_install.status(scope, root, os.environ)
        if args.json:
            emit_json(found)
        else:
            events = ", ".join(found["hooks"]) or "none"
            lines([f"hooks in {found['settings']}: {events}",
                   f"MCP server in {found['servers_file']}: "
                   f"{'loremap' if found['server'] else 'none'}"])
        return 0
    plan = (claude_install.plan_install if args.action == "install"
            else claude_install.plan_uninstall)
    changes = plan(scope, root, os.environ)
    if args.action == "install" and importlib.util.find_spec("mcp") is None:
        from loremap.mcp import sdk_hint

        warn([f"the MCP server will not start: {sdk_hint()} (the hooks work without it)"])
    if args.json:
        emit_json({"action": args.action, "scope": scope, "dry_run": args.dry_run,
                   "files": [{"path": str(c.path), "old": c.old, "new": c.new}
                             for c in changes]})
        if not args.dry_run:
            claude_install.apply(changes)
        return 0
    if not changes:
        lines([f"nothing to do: loremap is {'already' if args.action == 'install' else 'not'} "
               f"installed in Claude Code's {scope} settings"])
        return 0
    if args.dry_run:
        for change in changes:
            lines([unified_diff(change.old, change.new, str(change.path)).rstrip("\n")])
        lines(["(dry run: nothing was written)"])
        return 0
    lines(claude_install.apply(changes))
    if args.action == "install" and scope == "project":
        lines(["Claude Code asks once to approve the project's MCP server (.mcp.json)."])
    return 0
