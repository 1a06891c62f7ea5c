"""`loremap xray trim PROJECT`: deny the MCP servers a project's sessions never called.

An MCP server's tool definitions ride along on every call of every session. A server that
the project's transcripts never called is denied in `<project>/.claude/settings.local.json`
(`permissions.deny: ["mcp__<server>"]`, the user's own, uncommitted settings file), so Claude
Code stops offering its tools. Nothing is denied without transcripts of the project to show
what is used, and loremap's own server never is. Without `--apply` it only says what it would
do. `--apply` keeps a backup of the file and records what it added (and whether it created the
file or the `.claude` folder) in `.claude/loremap-trim.json`; `--undo` removes exactly those
rules, and the file and folder it created once nothing else is in them, leaving everything
else the user wrote.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
import time
from pathlib import Path
from typing import Any, NamedTuple

from loremap.errors import InvalidInput, NotFound
from loremap.vault.fs import atomic_write
from loremap.xray.audit import Server, configured_servers, tool_usage
from loremap.xray.transcripts import home_dir, read_all, transcripts_root

SETTINGS = Path(".claude") / "settings.local.json"
RECORD = Path(".claude") / "loremap-trim.json"
BACKUP_SUFFIX = ".loremap-backup"


class TrimResult(NamedTuple):
    """What a plan, an apply or an undo did: the lines to print, and the `--json` object."""

    lines: tuple[str, ...]
    data: dict[str, object]

    def json(self) -> dict[str, object]:
        return {**self.data, "lines": list(self.lines)}


class TrimPlan(NamedTuple):
    project: Path
    sessions: int
    configured: dict[str, Server]
    used: dict[str, int]  # server -> calls
    deny: list[str]  # rules to add
    present: list[str]  # never-used servers already denied
    kept: list[str]  # never-used servers never denied: loremap's own

    def summary(self) -> TrimResult:
        out = [f"{self.sessions} sessions of {self.project} read; MCP servers configured: "
               f"{', '.join(sorted(self.configured)) or 'none'}"]
        out += [f"  used: {name} ({calls} calls)" for name, calls in sorted(self.used.items())]
        out += [f"  would deny {rule} (never called; from {self.configured[rule[5:]].source})"
                for rule in self.deny]
        out += [f"  already denied: {rule}" for rule in self.present]
        out += [f"  keeps {name}: loremap's own server is never denied" for name in self.kept]
        if not self.deny:
            out.append("nothing to trim")
        else:
            out.append(f"run with --apply to write {self.project / SETTINGS} (a backup is kept)")
        return TrimResult(tuple(out), {
            "project": str(self.project), "sessions": self.sessions,
            "configured": {name: s.source for name, s in self.configured.items()},
            "used": self.used, "deny": self.deny, "already_denied": self.present,
            "kept": self.kept, "applied": False})


def _read_settings(path: Path) -> dict[str, Any]:
    """The settings file as a dict ({} when absent); refuses what it cannot edit safely."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}; nothing was changed") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path} is not valid JSON (line {exc.lineno}: {exc.msg}); fix it "
                           "first, nothing was changed") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} is not a JSON object; nothing was changed")
    permissions = data.get("permissions", {})
    if not isinstance(permissions, dict) or not isinstance(permissions.get("deny", []), list):
        raise InvalidInput(f"{path}: permissions.deny is not a list; nothing was changed")
    return data


def _denied(data: dict[str, Any]) -> list[str]:
    return [str(rule) for rule in data.get("permissions", {}).get("deny", [])]


def plan_trim(project: Path, days: int) -> TrimPlan:
    """What `--apply` would deny in `project`, from its transcripts of the last `days`."""
    from collections import Counter

    since = time.time() - days * 86400 if days else None
    tools: Counter[str] = Counter()
    sessions = set()
    for chain in read_all(transcripts_root(), project, since):
        tools.update(chain.tools)
        if chain.calls:
            sessions.add(chain.session)
    if not sessions:
        raise NotFound(f"no Claude Code transcripts of {project}"
                       f"{f' in the last {days} days' if days else ''}: nothing shows which "
                       "tools go unused, so nothing is denied")
    home = home_dir()
    configured = configured_servers(project, home)
    used = {row.name: row.calls for row in tool_usage(tools)[1]}
    denied = set(_denied(_read_settings(project / SETTINGS)))
    never = [name for name in sorted(configured) if name not in used]
    # Trigger: loremap's own server was configured but never called. Why: denying it would
    # switch off the memory this tool belongs to. Outcome: it is kept, and the plan says so.
    kept = [name for name in never if configured[name].loremap]
    rules = [f"mcp__{name}" for name in never if not configured[name].loremap]
    return TrimPlan(project, len(sessions), configured, used,
                    [r for r in rules if r not in denied], [r for r in rules if r in denied], kept)


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def apply_trim(project: Path, plan: TrimPlan) -> TrimResult:
    """Add `plan.deny` to the settings file, after a backup; record what was added (and
    whether the file and its folder are new, so `--undo` removes only what this made)."""
    result = plan.summary()
    if not plan.deny:
        return result
    path = project / SETTINGS
    data = _read_settings(path)
    existed, folder_existed = path.exists(), path.parent.is_dir()
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if existed:
        atomic_write(backup, path.read_bytes())
    permissions = data.setdefault("permissions", {})
    permissions["deny"] = [*permissions.get("deny", []), *plan.deny]
    record_path = project / RECORD
    record = _record(record_path)
    record["added"] = [*record.get("added", []), *plan.deny]
    record.setdefault("created_file", not existed)
    record.setdefault("created_folder", not folder_existed)
    record["at"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _write(path, data)
    _write(record_path, record)
    lines = [f"denied {rule} in {path}" for rule in plan.deny] + [
        f"backup of the previous file: {backup}" if existed else f"created {path}",
        f"undo with `loremap xray trim {shlex.quote(str(project))} --undo`"]
    return TrimResult(tuple(lines), {**result.data, "applied": True, "path": str(path),
                                     "backup": str(backup) if existed else None})


def _record(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def undo_trim(project: Path) -> TrimResult:
    """Remove the rules `--apply` added (and nothing else the file holds); the file and the
    `.claude` folder too when `--apply` created them and nothing else is left in them."""
    record_path = project / RECORD
    record = _record(record_path)
    added = [str(r) for r in record.get("added", [])]
    if not added:
        return TrimResult(("nothing to undo",), {"project": str(project), "removed": []})
    path = project / SETTINGS
    data = _read_settings(path)
    permissions = data.get("permissions", {})
    kept = [r for r in permissions.get("deny", []) if r not in added]
    removed = [r for r in permissions.get("deny", []) if r in added]
    if kept:
        permissions["deny"] = kept
    else:
        permissions.pop("deny", None)
        if not permissions:
            data.pop("permissions", None)
    lines = [f"removed {rule} from {path}" for rule in removed] or ["nothing to undo"]
    if not data and record.get("created_file"):
        path.unlink(missing_ok=True)
        lines.append(f"removed {path} (--apply created it)")
    elif path.exists():
        _write(path, data)
    record_path.unlink(missing_ok=True)
    if record.get("created_folder") and _remove_if_empty(path.parent):
        lines.append(f"removed {path.parent} (--apply created it)")
    return TrimResult(tuple(lines), {"project": str(project), "removed": removed})


def _remove_if_empty(folder: Path) -> bool:
    try:
        folder.rmdir()  # refuses a folder that holds anything
    except OSError:
        return False
    return True
