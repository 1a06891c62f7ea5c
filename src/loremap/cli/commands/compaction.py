"""`loremap compaction [show] | set TOKENS | --undo`: when Claude Code compacts a session
(see agents/claude/compaction)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from loremap.agents.claude import compaction
from loremap.agents.claude.install import Change
from loremap.agents.claude.settings import ENV_WINDOW, KEY
from loremap.agents.files import unified_diff
from loremap.cli.output import emit_json, lines, warn
from loremap.config import find_project_root
from loremap.errors import InvalidInput


def run(args: argparse.Namespace) -> int:
    root = find_project_root(Path.cwd())
    path = compaction.settings_file(args.scope or "user", root, os.environ)
    if args.undo:
        if args.action == "set" or args.tokens:
            raise InvalidInput("--undo takes no value: `loremap compaction --undo`")
        change = compaction.plan_undo(path, os.environ)
        return _write(change, args, lambda: compaction.forget_record(path, os.environ),
                      "restored")
    if args.action == "show":
        if args.tokens:
            raise InvalidInput(f"unexpected {args.tokens!r}: did you mean "
                               f"`loremap compaction set {args.tokens}`?")
        return _show(root, args.json)
    if not args.tokens:
        raise InvalidInput("set needs a window: `loremap compaction set 150000` (or 150k, 1M, "
                           "auto)")
    change, previous = compaction.plan_set(args.tokens, path)
    new_value = compaction.read_value(change)
    if os.environ.get(ENV_WINDOW):
        warn([f"{ENV_WINDOW}={os.environ[ENV_WINDOW]} in this "
              "environment overrides the setting"])
    return _write(change, args, lambda: compaction.remember_previous(
        path, previous, new_value, os.environ), "set")


def _write(change: Change, args: argparse.Namespace, after: Callable[[], None],
           verb: str) -> int:
    if args.dry_run:
        if args.json:
            emit_json({"path": str(change.path), "old": change.old, "new": change.new,
                       "dry_run": True})
        else:
            lines([unified_diff(change.old, change.new, str(change.path)).rstrip("\n"),
                   "(dry run: nothing was written)"])
        return 0
    backup = compaction.write(change) if change.old != change.new else None
    after()
    if args.json:
        emit_json({"path": str(change.path), "backup": str(backup) if backup else None,
                   "dry_run": False})
    else:
        lines([f"{verb} {KEY} in {change.path}"
               + (f" (backup {backup})" if backup else "")])
    return 0


def _show(root: Path | None, as_json: bool) -> int:
    found = compaction.describe(root, os.environ)
    if as_json:
        emit_json(found)
        return 0
    out = [f"Claude Code compacts at about {found['compact_at']:,} tokens: window "
           f"{found['window']:,} from {found['source']} (it compacts ~33k before the window)."]
    out += [f"loremap set {KEY} = {record['set']} in {record['file']} (was "
            f"{record['previous']}; `loremap compaction --undo` restores it)"
            for record in found["set_by_loremap"]]
    lines(out)
    return 0
