"""`loremap xray trim PROJECT`: deny the MCP servers and the optional built-in tools that a
project's sessions never called.

Every tool definition rides along on every call of every session. What the project's
transcripts never called is denied in `<project>/.claude/settings.local.json` (the user's own,
uncommitted settings file: `permissions.deny: ["mcp__<server>", "WebSearch"]`), so Claude Code
stops offering it. Nothing is denied without transcripts of the project to show what is used;
`--days N` counts only the transcripts written in the last N days (default: all of them, the
most evidence, so the fewest denials).

- An MCP server configured for the project (`.mcp.json`, `~/.claude.json`) is denied when no
  session called any of its tools; loremap's own server never is (`audit.is_loremap_name`,
  `runs_loremap_serve`: `loremap`, the plugin's `plugin:loremap:loremap`, `loremap serve`).
- A built-in tool is denied only if it is one of `OPTIONAL_TOOLS` (tools that reach outside the
  project or serve one kind of file, which no other Claude Code feature relies on), no session
  called it, no permission rule of the user's allows it, and at least `MIN_SESSIONS` sessions
  were read: denying a tool someone needs is worse than the tokens it costs. The core tools
  (Read, Edit, Write, Bash, Grep, Glob, Task, TodoWrite...) are never proposed.

Without `--apply` it only says what it would do. `--apply` keeps a backup of the file and
records what it added (and whether it created the file or the `.claude` folder) in
`.claude/loremap-trim.json`; `--undo` removes exactly those rules, and the file and folder it
created once nothing else is in them, leaving everything else the user wrote.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
import time
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

from loremap.errors import InvalidInput, NotFound
from loremap.vault.fs import atomic_write
from loremap.xray.audit import Server, configured_servers, is_loremap_name, tool_usage
from loremap.xray.transcripts import home_dir, read_all, transcripts_root

SETTINGS = Path(".claude") / "settings.local.json"
RECORD = Path(".claude") / "loremap-trim.json"
BACKUP_SUFFIX = ".loremap-backup"
# Claude Code's built-in tools trim may deny (names from 2.1.3x transcripts): the web, and
# Jupyter notebooks. Not the Cron, Monitor or Worktree tools: commands and flags of Claude
# Code use them, so denying them would break a feature the first time it is asked for.
OPTIONAL_TOOLS = ("NotebookEdit", "WebFetch", "WebSearch")
MIN_SESSIONS = 10  # sessions read before any built-in tool is proposed


class TrimResult(NamedTuple):
    """What a plan, an apply or an undo did: the lines to print, and the `--json` object."""

    lines: tuple[str, ...]
    data: dict[str, object]

    def json(self) -> dict[str, object]:
        return {**self.data, "lines": list(self.lines)}


class TrimPlan(NamedTuple):
    project: Path
    days: int | None  # the window (None: every transcript)
    sessions: int
    configured: dict[str, Server]
    used: dict[str, int]  # server -> calls
    deny: list[str]  # rules to add: servers (`mcp__x`), then built-in tools
    present: list[str]  # never-used servers and tools already denied
    kept: list[str]  # never-used servers never denied: loremap's own
    tools_kept: dict[str, str]  # never-used optional built-in tool -> why it is not denied

    def summary(self) -> TrimResult:
        window = f" of the last {self.days} days" if self.days else ""
        out = [f"{self.sessions} sessions{window} of {self.project} read; MCP servers "
               f"configured: {', '.join(sorted(self.configured)) or 'none'}"]
        out += [f"  used: {name} ({calls} calls)" for name, calls in sorted(self.used.items())]
        out += [f"  would deny {rule} ({self._why(rule)})" for rule in self.deny]
        out += [f"  already denied: {rule}" for rule in self.present]
        out += [f"  keeps {name}: loremap's own server is never denied" for name in self.kept]
        if self.sessions < MIN_SESSIONS:
            out.append(f"  built-in tools: none is denied on fewer than {MIN_SESSIONS} "
                       "sessions")
        out += [f"  keeps {tool} (built-in, never called): {why}"
                for tool, why in self.tools_kept.items()]
        if not self.deny:
            out.append("nothing to trim")
        else:
            out.append(f"run with --apply to write {self.project / SETTINGS} (a backup is kept)")
        return TrimResult(tuple(out), {
            "project": str(self.project), "days": self.days, "sessions": self.sessions,
            "configured": {name: s.source for name, s in self.configured.items()},
            "used": self.used, "deny": self.deny, "already_denied": self.present,
            "kept": self.kept, "tools_kept": self.tools_kept, "applied": False})

    def _why(self, rule: str) -> str:
        if rule.startswith("mcp__"):
            return f"never called; from {self.configured[rule[5:]].source}"
        return f"built-in tool, never called in {self.sessions} sessions"


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


def _allowed_tools(project: Path, home: Path, local: dict[str, Any]) -> dict[str, str]:
    """Tool -> the settings file of the user's that allows it (`WebFetch(domain:x)` allows
    WebFetch): a tool the user allows by a rule is one they use."""
    found: dict[str, str] = {}
    files = [(project / SETTINGS, local)]
    for path in (project / ".claude" / "settings.json", home / ".claude" / "settings.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        files.append((path, data if isinstance(data, dict) else {}))
    for path, data in files:
        permissions = data.get("permissions")
        rules = permissions.get("allow") if isinstance(permissions, dict) else None
        for rule in rules if isinstance(rules, list) else []:
            found.setdefault(str(rule).split("(")[0].strip(), str(path))
    return found


def _tools(tools: Counter[str], sessions: int, allowed: dict[str, str]
           ) -> tuple[list[str], dict[str, str]]:
    """(optional built-in tools to deny, never-used ones a rule allows -> that rule's file)."""
    # Trigger: too few sessions, or a rule of the user's allows the tool. Why: a tool unused
    # in a handful of sessions may be needed tomorrow, and an allowed one is wanted. Outcome:
    # it is kept, and the plan says why.
    if sessions < MIN_SESSIONS:
        return [], {}
    never = [tool for tool in OPTIONAL_TOOLS if not tools[tool]]
    kept = {tool: f"allowed in {allowed[tool]}" for tool in never if tool in allowed}
    return [tool for tool in never if tool not in kept], kept


def plan_trim(project: Path, days: int | None) -> TrimPlan:
    """What `--apply` would deny in `project`, from its transcripts of the last `days` (None:
    all of them)."""
    if days is not None and days < 1:
        raise InvalidInput(f"--days {days}: give 1 or more, or leave it out for all days; "
                           "nothing was changed")
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
    local = _read_settings(project / SETTINGS)
    denied = set(_denied(local))
    never = [name for name in sorted(configured) if name not in used]
    # Trigger: loremap's own server was configured but never called. Why: denying it would
    # switch off the memory this tool belongs to. Outcome: it is kept, and the plan says so.
    kept = [name for name in never if configured[name].loremap or is_loremap_name(name)]
    deny_tools, tools_kept = _tools(tools, len(sessions), _allowed_tools(project, home, local))
    rules = [f"mcp__{name}" for name in never if name not in kept] + deny_tools
    return TrimPlan(project, days, len(sessions), configured, used,
                    [r for r in rules if r not in denied], [r for r in rules if r in denied],
                    kept, tools_kept)


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
