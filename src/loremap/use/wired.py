"""What runs loremap on this machine: every hook handler and MCP server of an agent that starts
`loremap-hook` or `loremap serve`, read from the files the plugin, `loremap hooks install` and
`loremap connect` write. `loremap doctor` checks each one (use/wiring.py).

The places are the installers' own: Claude Code's settings files (`settings_files`, local over
project over user), `.mcp.json` and `~/.claude.json` (user servers, and a project's local ones
under `projects[<root>]`, where `claude mcp add -s local` puts them), and for every other agent
the files of its row in `agents.connect.agents`. A file is only read, never written here. One
that cannot be parsed is reported only when it mentions loremap: another tool's broken file is
not ours to judge.
"""

from __future__ import annotations

import os
import shlex
import tomllib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from loremap import jsonc
from loremap.agents.claude.settings import parse_settings, settings_files, user_state
from loremap.agents.connect import shown
from loremap.agents.connect.agents import AGENTS, HOOKS, MCP, SERVER, Agent, Context
from loremap.agents.connect.edits import HOOK_PROGRAM, Edit, JsonEntry, JsonHooks, OwnFile, ours
from loremap.agents.connect.toml import TomlTable
from loremap.agents.connect.yaml import YamlEntry
from loremap.agents.files import read_text_or_none
from loremap.errors import InvalidInput
from loremap.memory.doctor import Finding

CLAUDE = "Claude Code"
PLUGIN = "the plugin"


class Wired(NamedTuple):
    """One command an agent runs for loremap, where it is written and how to write it again."""

    agent: str          # the agent's title
    role: str           # MCP ("MCP server") or HOOKS ("hooks")
    path: Path          # the file that holds it
    shown: str          # that file as the user thinks of it
    program: str        # as written: a path, or a name looked up on PATH ("" for a URL)
    expected: str       # what it should run: "loremap" or "loremap-hook"
    rewire: str         # the command that writes it again
    events: tuple[str, ...] = ()  # the hook events it runs for
    repair: Callable[[], str] | None = None  # rewrites it with this installation's programs


class Reading(NamedTuple):
    wired: list[Wired]
    problems: list[Finding]       # files that mention loremap but cannot be read
    expected: dict[str, tuple[str, ...]]  # agent title -> the hook events its installer wires


def _mentions(path: Path) -> bool:
    try:
        return SERVER in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def _unreadable(agent: str, where: str, exc: Exception) -> Finding:
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return Finding("warning", "wiring", f"{agent}: cannot read {where} ({reason}); the agent "
                   "may not read it either, and what it wires for loremap is not checked")


def hook_program(handler: Mapping[str, Any]) -> str:
    """The program a hook handler starts: the command itself in exec form (with `args`), else
    the shell word that names `loremap-hook` (the first word when none does)."""
    command = str(handler.get("command", ""))
    if isinstance(handler.get("args"), list):
        return command
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    named = [w for w in words if os.path.basename(w) == HOOK_PROGRAM]
    return (named or [w for w in words if HOOK_PROGRAM in w] or words or [command])[0]


def server_program(entry: object) -> tuple[str, list[str]] | None:
    """(program, arguments) of an MCP server entry: `command` and `args`, OpenCode's command
    list, Goose's `cmd`; ("", []) for a server reached by URL; None for no entry at all."""
    if not isinstance(entry, Mapping):
        return None
    command = entry.get("command", entry.get("cmd"))
    if isinstance(command, list) and command:
        return str(command[0]), [str(a) for a in command[1:]]
    if isinstance(command, str):
        args = entry.get("args")
        return command, [str(a) for a in args] if isinstance(args, list) else []
    return "", []


def runs_loremap(entry: object) -> bool:
    """A server entry that runs `loremap serve`, whatever it is named."""
    found = server_program(entry)
    return found is not None and os.path.basename(found[0]) == SERVER and found[1][:1] == [
        "serve"]


def our_handlers(data: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(event, handler) of every loremap hook handler in a Claude-style `hooks` object."""
    hooks = data.get("hooks")
    if not isinstance(hooks, Mapping):
        return
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks") if isinstance(group, Mapping) else None
            for handler in handlers if isinstance(handlers, list) else []:
                if ours(handler):
                    yield str(event), handler


def hooks_by_program(data: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Program -> the events it is the loremap hook of."""
    found: dict[str, tuple[str, ...]] = {}
    for event, handler in our_handlers(data):
        program = hook_program(handler)
        if event not in found.get(program, ()):
            found[program] = (*found.get(program, ()), event)
    return found


# --- Claude Code ------------------------------------------------------------------------------


def _claude_file(path: Path, where: str, problems: list[Finding]) -> dict[str, Any] | None:
    """A Claude Code JSON file, strictly: Claude Code ignores one with comments or trailing
    commas whole, so what such a file wires never runs (a problem when it mentions loremap)."""
    try:
        text = read_text_or_none(path)
        return None if text is None else parse_settings(text, path)
    except (InvalidInput, OSError) as exc:
        if _mentions(path):
            problems.append(_unreadable(CLAUDE, where, exc))
        return None


def _claude_repair(kind: str, scope: str, ctx: Context, environ: Mapping[str, str],
                   path: Path) -> Callable[[], str]:
    """What `loremap hooks install claude --SCOPE` writes into `path`, and nothing else."""

    def repair() -> str:
        from loremap.agents.claude import install

        plan = [c for c in install.plan_install(scope, ctx.root, environ) if c.path == path]
        return "; ".join(install.apply(plan)) or f"{kind} already current"

    return repair


def _claude_hooks(ctx: Context, environ: Mapping[str, str], reading: Reading) -> None:
    scopes = {".claude/settings.json": "project", "~/.claude/settings.json": "user"}
    for label, path in settings_files(ctx.root, environ):
        data = _claude_file(path, label, reading.problems)
        if data is None:
            continue
        _plugin(data, path, label, reading)
        scope = scopes.get(label)
        rewire = ("`loremap hooks install claude" + (" --project`" if scope == "project" else "`")
                  if scope else f"`loremap hooks install claude --project` (then remove them "
                  f"from {label})")
        for program, events in hooks_by_program(data).items():
            repair = _claude_repair("hooks", scope, ctx, environ, path) if scope else None
            reading.wired.append(Wired(CLAUDE, HOOKS, path, label, program, HOOK_PROGRAM,
                                       rewire, events, repair))


def _plugin(data: Mapping[str, Any], path: Path, label: str, reading: Reading) -> None:
    """loremap's plugin, when `enabledPlugins` turns it on: its hooks and server run
    `loremap-hook` and `loremap` by name (plugin/hooks/hooks.json, plugin/.mcp.json)."""
    from loremap.agents.claude.install import HOOKS as TABLE

    plugins = data.get("enabledPlugins")
    ids = [str(k) for k, on in plugins.items() if on is True and str(k).split("@")[0] == SERVER
           ] if isinstance(plugins, Mapping) else []
    for plugin_id in ids:
        where = f"{PLUGIN} {plugin_id} (enabled in {label})"
        rewire = f"`claude plugin install {plugin_id}`"
        reading.wired.append(Wired(CLAUDE, HOOKS, path, where, HOOK_PROGRAM, HOOK_PROGRAM,
                                   rewire, tuple(spec.event for spec in TABLE)))
        reading.wired.append(Wired(CLAUDE, MCP, path, where, SERVER, SERVER, rewire))


def _claude_servers(ctx: Context, environ: Mapping[str, str], reading: Reading) -> None:
    state = user_state(environ)
    state_shown = shown(state, ctx)
    places = [(ctx.root / ".mcp.json", ".mcp.json", ("mcpServers",), "project"),
              (state, state_shown, ("mcpServers",), "user"),
              (state, f"{state_shown} (projects[{ctx.root}])",
               ("projects", str(ctx.root), "mcpServers"), "")]
    read: dict[Path, dict[str, Any] | None] = {}
    for path, where, keys, scope in places:
        if path not in read:
            read[path] = _claude_file(path, where, reading.problems)
        node: object = read[path]
        for key in keys:
            node = node.get(key) if isinstance(node, Mapping) else None
        if not isinstance(node, Mapping):
            continue
        for name, entry in node.items():
            if name != SERVER and not runs_loremap(entry):
                continue
            program = (server_program(entry) or ("", []))[0]
            rewire = (f"`loremap hooks install claude{' --project' if scope == 'project' else ''}`"
                      if scope and name == SERVER else
                      f"`claude mcp add -s {scope or 'local'} {name} -- {ctx.server} serve` "
                      f"(after `claude mcp remove -s {scope or 'local'} {name}`)")
            repair = (_claude_repair("server", scope, ctx, environ, path)
                      if scope and name == SERVER else None)
            reading.wired.append(Wired(CLAUDE, MCP, path, where, program, SERVER, rewire, (),
                                       repair))


def claude(ctx: Context, environ: Mapping[str, str]) -> Reading:
    """What Claude Code runs for loremap here: its hooks, servers and loremap's plugin."""
    from loremap.agents.claude.install import HOOKS as TABLE

    reading = Reading([], [], {CLAUDE: tuple(spec.event for spec in TABLE)})
    _claude_hooks(ctx, environ, reading)
    _claude_servers(ctx, environ, reading)
    return reading


# --- the agents of `loremap connect` ----------------------------------------------------------


def _parse(edit: Edit, text: str) -> Any:
    """The data of one agent file, in its format; `InvalidInput` for a malformed one."""
    if isinstance(edit, TomlTable):
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InvalidInput(f"not valid TOML: {exc}") from None
    if isinstance(edit, YamlEntry | OwnFile):
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InvalidInput(f"not valid YAML: {exc}") from None
    return jsonc.loads(text, str(edit.path))


def _entry(edit: Edit, data: Any) -> object:
    """The loremap server entry an MCP edit wrote, from the file's data."""
    node: Any = data
    if isinstance(edit, JsonEntry | TomlTable):
        for key in edit.keys:
            node = node.get(key) if isinstance(node, Mapping) else None
        return node
    if isinstance(edit, YamlEntry):
        section = data.get(edit.parent) if isinstance(data, Mapping) else None
        return section.get(edit.name) if isinstance(section, Mapping) else None
    servers = data.get("mcpServers") if isinstance(data, Mapping) else None  # Continue's block
    return next((s for s in servers if isinstance(s, Mapping) and s.get("name") == SERVER),
                None) if isinstance(servers, list) else None


def _reads_commands(edit: Edit) -> bool:
    """An edit that wires a command: hooks, or an MCP server (not instructions, not a flag)."""
    return isinstance(edit, JsonHooks) or (edit.role == MCP and isinstance(
        edit, JsonEntry | TomlTable | YamlEntry | OwnFile))


def _connect_repair(ctx: Context, path: Path, edits: list[Edit]) -> Callable[[], str]:
    """`edits` (connect's, with this installation's programs) applied to `path` alone."""

    def repair() -> str:
        from loremap.agents.files import write_with_backup

        old = new = read_text_or_none(path)
        for edit in edits:
            new = edit.add(new)
        if new is None or new == old:
            return f"{shown(path, ctx)} already current"
        backup = write_with_backup(path, new)
        return f"wrote {shown(path, ctx)}" + (f" (backup {backup.name})" if backup else "")

    return repair


def _agent(agent: Agent, ctx: Context, reading: Reading) -> None:
    rewire = f"`loremap connect {agent.name}`"
    for edit in agent.edits(ctx):
        if isinstance(edit, JsonHooks):
            reading.expected[agent.title] = tuple(event for event, _ in edit.groups)
        if not _reads_commands(edit) or not edit.path.is_file():
            continue
        where = shown(edit.path, ctx)
        try:
            text = read_text_or_none(edit.path) or ""
            data = _parse(edit, text)
        except (InvalidInput, OSError) as exc:
            if _mentions(edit.path):
                reading.problems.append(_unreadable(agent.title, where, exc))
            continue
        repair = _connect_repair(ctx, edit.path, [edit])
        if isinstance(edit, JsonHooks):
            hooks = hooks_by_program(data) if isinstance(data, Mapping) else {}
            for program, events in hooks.items():
                reading.wired.append(Wired(agent.title, HOOKS, edit.path, where, program,
                                           HOOK_PROGRAM, rewire, events, repair))
            continue
        found = server_program(_entry(edit, data))
        if found is not None:
            reading.wired.append(Wired(agent.title, MCP, edit.path, where, found[0], SERVER,
                                       rewire, (), repair))


def connected(ctx: Context) -> Reading:
    """What every agent of `loremap connect` runs for loremap, from that agent's files."""
    reading = Reading([], [], {})
    for agent in AGENTS:
        _agent(agent, ctx, reading)
    return reading
