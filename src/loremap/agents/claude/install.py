"""`loremap hooks install claude`: loremap's hooks and MCP server in Claude Code's settings,
for those who do not use the plugin.

What loremap adds is recognisable without any record kept elsewhere: its hook handlers run the
`loremap-hook` program, and its MCP server is named `loremap` and runs `loremap serve`. That
is the ownership mark uninstall goes by: it removes exactly those handlers (and a matcher group
or event they leave empty), and the server only if it is still loremap's. Everything else in the
files, layout included, stays as it was (the JSON edits are `loremap connect`'s, in
`agents.connect.edits`), and every changed file keeps a backup. A file Claude Code would not read
(comments, trailing commas) is refused: hooks added there would never run.

User scope writes `~/.claude/settings.json` (hooks) and `~/.claude.json` (`mcpServers`, where
`claude mcp add -s user` puts servers), naming loremap's programs by their absolute paths.
Project scope writes `.claude/settings.json` and `.mcp.json`, which Claude Code asks once to
approve; the team commits them, so they hold no path of this machine: the programs are named by
their path in the project when loremap runs from a virtual environment there (`.venv/bin/loremap`
for the server, which Claude Code starts in the project folder; `"$CLAUDE_PROJECT_DIR"/...` for
the hooks, whose working directory follows the session), else by their bare names, which must
then be on PATH. The server gets no `LOREMAP_PROJECT_DIR`: it finds the project from its working
directory.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from loremap.agents.claude.settings import parse_settings, user_settings, user_state
from loremap.agents.connect.edits import HOOK_PROGRAM, JsonEntry, JsonHooks, ours
from loremap.agents.connect.programs import beside, in_project, missing, missing_line
from loremap.agents.files import read_text_or_none, write_with_backup
from loremap.errors import InvalidInput, NotFound

SERVER = "loremap"
PROJECT_DIR_VAR = '"$CLAUDE_PROJECT_DIR"/'  # the project folder in a hook's shell command


class HookSpec(NamedTuple):
    event: str              # Claude Code's event name
    matcher: str | None     # None: every occurrence
    argument: str           # the `loremap-hook` event
    timeout: int            # seconds


# The same table as plugin/hooks/hooks.json (a test holds them equal).
HOOKS = (
    HookSpec("SessionStart", "startup|resume|clear|compact", "session-start", 30),
    HookSpec("UserPromptSubmit", None, "prompt", 10),
    HookSpec("PreToolUse", "Read|Edit|Write|MultiEdit|NotebookEdit|Bash", "pre-tool", 10),
    HookSpec("PostToolUse", None, "post-tool", 10),
    HookSpec("PostToolUseFailure", None, "tool-failure", 10),
    HookSpec("Stop", None, "stop", 10),
    HookSpec("PreCompact", None, "pre-compact", 30),
)


class Change(NamedTuple):
    path: Path
    old: str | None     # None: the file does not exist
    new: str | None     # None: the file goes


class Targets(NamedTuple):
    settings: Path      # where the hooks go
    servers: Path       # where the MCP server goes


def targets(scope: str, root: Path | None, environ: Mapping[str, str]) -> Targets:
    if scope == "user":
        return Targets(user_settings(environ), user_state(environ))
    if root is None:
        raise NotFound("--project needs a repository: run it inside one (or use --user)")
    return Targets(root / ".claude" / "settings.json", root / ".mcp.json")


def executable(name: str) -> str:
    """The absolute path of our console script `name`: beside this Python first (a venv or
    pipx install), else on PATH; `NotFound` when it is in neither."""
    here = beside(name)
    if here is not None:
        return str(here)
    found = shutil.which(name)
    if found is None:
        raise NotFound(f"{name} is not installed beside {sys.executable} nor on PATH: install "
                       "loremap where Claude Code finds it (from a clone: `pipx install "
                       "./loremap`)")
    return str(Path(found).resolve())


class Programs(NamedTuple):
    """How the files name loremap's programs: the server's command, the hooks' shell words."""

    server: str
    hook: str


def programs(scope: str, root: Path | None) -> Programs:
    """Absolute paths for user scope; for project scope, paths in the project or bare names
    (`NotFound` when a bare name is not on PATH: a committed file would name what cannot run)."""
    if scope == "user" or root is None:
        return Programs(executable(SERVER), shlex.quote(executable(HOOK_PROGRAM)))
    server, hook = in_project(SERVER, root), in_project(HOOK_PROGRAM, root)
    names = missing([SERVER if server is None else server,
                     HOOK_PROGRAM if hook is None else hook])
    if names:
        raise NotFound(f"{missing_line(names, 'Claude Code')}; or use --user. Nothing was "
                       "changed")
    return Programs(server or SERVER,
                    HOOK_PROGRAM if hook is None else PROJECT_DIR_VAR + shlex.quote(hook))


def _group(spec: HookSpec, program: str) -> dict[str, Any]:
    handler = {"type": "command", "command": f"{program} {spec.argument}",
               "timeout": spec.timeout}
    group: dict[str, Any] = {"hooks": [handler]}
    if spec.matcher is not None:
        group = {"matcher": spec.matcher, **group}
    return group


def _load(text: str, path: Path) -> dict[str, Any]:
    data = parse_settings(text, path)
    for key in ("hooks", "mcpServers"):
        if key in data and not isinstance(data[key], dict):
            raise InvalidInput(f"{path}: `{key}` is not an object; nothing was changed")
    return data


def _hooks(path: Path, program: str) -> JsonHooks:
    """The hooks edit `loremap connect` makes for Codex and Gemini, with Claude Code's table:
    handlers of another `loremap-hook` (a moved install) are replaced, not added to. `program`
    is the shell text that runs `loremap-hook`."""
    return JsonHooks(path, "hooks", tuple((spec.event, _group(spec, program)) for spec in HOOKS))


def _server_entry(path: Path, loremap: str, project: bool) -> JsonEntry:
    """The server entry; in a project file, an older loremap's absolute `LOREMAP_PROJECT_DIR`
    goes."""
    entry: dict[str, Any] = {"type": "stdio", "command": loremap, "args": ["serve"]}
    return JsonEntry(path, "MCP server", ("mcpServers", SERVER), entry,
                     obsolete=(("env", "LOREMAP_PROJECT_DIR"),) if project else ())


def _server_is_ours(entry: object) -> bool:
    return isinstance(entry, dict) and Path(str(entry.get("command", ""))).name == SERVER and \
        entry.get("args") == ["serve"]


def plan_install(scope: str, root: Path | None, environ: Mapping[str, str]) -> list[Change]:
    """The files `hooks install` would change (read and checked; nothing written)."""
    where = targets(scope, root, environ)
    named = programs(scope, root)
    old = read_text_or_none(where.settings)
    _load(old or "", where.settings)
    changes = [Change(where.settings, old,
                      _hooks(where.settings, named.hook).add(old or "{}\n"))]
    old_servers = read_text_or_none(where.servers)
    current = _load(old_servers or "", where.servers).get("mcpServers", {}).get(SERVER)
    if current is not None and not _server_is_ours(current):
        raise InvalidInput(f"{where.servers} already has an MCP server named {SERVER!r} that "
                           "is not `loremap serve`; rename or remove it first. Nothing was "
                           "changed")
    server = _server_entry(where.servers, named.server, scope == "project")
    changes.append(Change(where.servers, old_servers, server.add(old_servers or "{}\n")))
    return [c for c in changes if c.old != c.new]


def plan_uninstall(scope: str, root: Path | None, environ: Mapping[str, str]) -> list[Change]:
    """The files `hooks uninstall` would change."""
    where = targets(scope, root, environ)
    changes = []
    old = read_text_or_none(where.settings)
    if old is not None:
        _load(old, where.settings)
        dropped = _hooks(where.settings, "").drop(old)  # drop takes every handler of ours
        assert dropped is not None
        changes.append(Change(where.settings, old, _emptied(where.settings, dropped)))
    old_servers = read_text_or_none(where.servers)
    if old_servers is not None:
        entry = _load(old_servers, where.servers).get("mcpServers", {}).get(SERVER)
        if _server_is_ours(entry):
            dropped = _server_entry(where.servers, "", False).drop(old_servers)
            assert dropped is not None
            changes.append(Change(where.servers, old_servers, _emptied(where.servers, dropped)))
    return [c for c in changes if c.old != c.new]


def _emptied(path: Path, text: str) -> str | None:
    """None (delete the file) when loremap created it and nothing else is left in it.

    A file loremap created has no backup: the first write of an existing file keeps one."""
    created = not path.with_name(path.name + ".loremap-backup").exists()
    return None if created and _load(text, path) == {} else text


def status(scope: str, root: Path | None, environ: Mapping[str, str]) -> dict[str, Any]:
    """What is installed where: the hook events with loremap's handler, and the server."""
    where = targets(scope, root, environ)
    text = read_text_or_none(where.settings) or "{}"
    hooks = _load(text, where.settings).get("hooks", {})
    events = sorted(event for event, groups in hooks.items() if isinstance(groups, list) and any(
        isinstance(g, dict) and any(ours(h) for h in g.get("hooks", []) or [])
        for g in groups))
    servers = _load(read_text_or_none(where.servers) or "{}", where.servers).get("mcpServers", {})
    return {"scope": scope, "settings": str(where.settings), "hooks": events,
            "servers_file": str(where.servers),
            "server": _server_is_ours(servers.get(SERVER)) if isinstance(servers, dict) else False}


def apply(changes: list[Change]) -> list[str]:
    """Write `changes`; returns one line per file (with its backup)."""
    out = []
    for change in changes:
        if change.new is None:  # a file loremap created, holding nothing else now
            change.path.unlink()
            out.append(f"removed {change.path} (loremap had created it)")
            continue
        backup = write_with_backup(change.path, change.new)
        out.append(f"wrote {change.path}" + (f" (backup {backup})" if backup else ""))
    return out
