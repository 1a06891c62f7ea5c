"""`loremap xray trim PROJECT`: deny the MCP servers a project's sessions never called.

An MCP server's tool definitions ride along on every call of every session. A server that
the project's transcripts never called is denied in `<project>/.claude/settings.local.json`
(`permissions.deny: ["mcp__<server>"]`, the user's own, uncommitted settings file), so Claude
Code stops offering its tools. Nothing is denied without transcripts of the project to show
what is used. Without `--apply` it only says what it would do. `--apply` keeps a backup of the
file and records what it added in `.claude/loremap-trim.json`; `--undo` removes exactly those
rules and leaves everything else the user wrote.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any, NamedTuple

from loremap.errors import InvalidInput, NotFound
from loremap.vault.fs import atomic_write
from loremap.xray.audit import configured_servers, tool_usage
from loremap.xray.transcripts import home_dir, read_all, transcripts_root

SETTINGS = Path(".claude") / "settings.local.json"
RECORD = Path(".claude") / "loremap-trim.json"
BACKUP_SUFFIX = ".loremap-backup"


class TrimPlan(NamedTuple):
    project: Path
    sessions: int
    configured: dict[str, str]  # server -> the file that configures it
    used: dict[str, int]  # server -> calls
    deny: list[str]  # rules to add
    present: list[str]  # never-used servers already denied

    def summary(self) -> dict[str, Any]:
        out = [f"{self.sessions} sessions of {self.project} read; MCP servers configured: "
               f"{', '.join(sorted(self.configured)) or 'none'}"]
        out += [f"  used: {name} ({calls} calls)" for name, calls in sorted(self.used.items())]
        out += [f"  would deny {rule} (never called; from {self.configured[rule[5:]]})"
                for rule in self.deny]
        out += [f"  already denied: {rule}" for rule in self.present]
        if not self.deny:
            out.append("nothing to trim")
        else:
            out.append(f"run with --apply to write {self.project / SETTINGS} (a backup is kept)")
        return {"project": str(self.project), "sessions": self.sessions,
                "configured": self.configured, "used": self.used, "deny": self.deny,
                "already_denied": self.present, "applied": False, "lines": out}


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
    used = {row["name"]: row["calls"] for row in tool_usage(tools)[1]}
    denied = set(_denied(_read_settings(project / SETTINGS)))
    never = [f"mcp__{name}" for name in sorted(configured) if name not in used]
    return TrimPlan(project, len(sessions), configured, used,
                    [r for r in never if r not in denied], [r for r in never if r in denied])


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def apply_trim(project: Path, plan: TrimPlan) -> dict[str, Any]:
    """Add `plan.deny` to the settings file, after a backup; record what was added."""
    result = plan.summary()
    if not plan.deny:
        return result
    path = project / SETTINGS
    data = _read_settings(path)
    existed = path.exists()
    if existed:
        atomic_write(path.with_name(path.name + BACKUP_SUFFIX), path.read_bytes())
    permissions = data.setdefault("permissions", {})
    permissions["deny"] = [*permissions.get("deny", []), *plan.deny]
    record_path = project / RECORD
    record = _record(record_path)
    record["added"] = [*record.get("added", []), *plan.deny]
    record.setdefault("created_file", not existed)
    record["at"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _write(path, data)
    _write(record_path, record)
    result["applied"] = True
    result["lines"] = [f"denied {rule} in {path}" for rule in plan.deny] + [
        f"backup: {path.name}{BACKUP_SUFFIX}" if existed else "the file is new",
        "undo with `loremap xray trim PROJECT --undo`"]
    return result


def _record(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def undo_trim(project: Path) -> dict[str, Any]:
    """Remove the rules `--apply` added (and nothing else the file holds)."""
    record_path = project / RECORD
    record = _record(record_path)
    added = [str(r) for r in record.get("added", [])]
    if not added:
        return {"project": str(project), "removed": [], "lines": ["nothing to undo"]}
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
    if not data and record.get("created_file"):
        path.unlink(missing_ok=True)
    else:
        _write(path, data)
    record_path.unlink(missing_ok=True)
    return {"project": str(project), "removed": removed,
            "lines": [f"removed {rule} from {path}" for rule in removed] or ["nothing to undo"]}
