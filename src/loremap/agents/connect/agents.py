"""The agents `loremap connect` knows: where each keeps its MCP servers and instructions.

One table, one row per agent, from the verified facts in the agent reference: the file and the
shape of its MCP configuration, the file it reads instructions from, and whether it has hooks
that can put text into the model's context (only Codex CLI and Gemini CLI, besides Claude Code,
which `loremap hooks` handles).

A project-level file is committed, so it holds no path of this machine (see `programs`): each
agent's `Workspace` says how its project files can name the project folder. Gemini CLI reads
`.gemini/settings.json` from its working directory and starts servers and hooks there, so a
path relative to the project works and the server finds the project from its working directory;
VS Code and Cursor expand `${workspaceFolder}` in `command` and `env` (their docs), which also
gives `LOREMAP_PROJECT_DIR`; for OpenCode and Continue no such way is verified, so they get the
bare program name and the server finds the project from its working directory or the MCP roots.
A user-level file serves every project: absolute program paths, and the server finds the project
from what the agent says.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from loremap.agents import instructions
from loremap.agents.connect.edits import (
    HOOK_PROGRAM,
    Edit,
    JsonEntry,
    JsonHooks,
    MarkedBlock,
    OwnFile,
)
from loremap.agents.connect.programs import in_project, project_program, user_program
from loremap.agents.connect.toml import TomlFlag, TomlTable
from loremap.agents.connect.yaml import YamlEntry, continue_block

SERVER = "loremap"  # the server's name in every agent's file, and our console script's
MCP, RULES, HOOKS = "MCP server", "instructions", "hooks"
# Zed reads the first of these that exists, and only it (agent reference, section 5).
ZED_RULES = (".rules", ".cursorrules", ".windsurfrules", ".clinerules",
             ".github/copilot-instructions.md", "AGENT.md", "AGENTS.md", "CLAUDE.md", "GEMINI.md")
PROJECT_DIR = ("env", "LOREMAP_PROJECT_DIR")  # what an older connect wrote, as an absolute path


class Workspace(NamedTuple):
    """How an agent's project-level file can name the project folder.

    `prefix` goes before a path inside the project ("" when the agent starts the program in the
    project folder; None when no way is known, and the bare program name is written);
    `project_dir` is the value of `LOREMAP_PROJECT_DIR` (None: the variable is not written)."""

    prefix: str | None
    project_dir: str | None


IN_FOLDER = Workspace("", None)
WORKSPACE_FOLDER = Workspace("${workspaceFolder}/", "${workspaceFolder}")
UNKNOWN = Workspace(None, None)


def _bare(*commands: str) -> tuple[str, ...]:
    """The commands that the agent will look up on PATH."""
    return tuple(c for c in commands if "/" not in c)


@dataclass(frozen=True)
class Context:
    """Where things are on this machine: the project, the user's folders, our programs (the
    absolute paths, for files in the home folder)."""

    root: Path
    home: Path
    config_home: Path
    codex_home: Path
    macos: bool
    server: str
    hook: str

    @classmethod
    def from_env(cls, root: Path, environ: Mapping[str, str]) -> Context:
        home = Path(environ.get("HOME") or Path.home())
        xdg = environ.get("XDG_CONFIG_HOME", "")
        codex = environ.get("CODEX_HOME", "")
        return cls(root=root, home=home,
                   config_home=Path(xdg) if os.path.isabs(xdg) else home / ".config",
                   codex_home=Path(codex).expanduser() if codex else home / ".codex",
                   macos=sys.platform == "darwin",
                   server=user_program(SERVER), hook=user_program(HOOK_PROGRAM))

    def app_support(self, *parts: str) -> Path:
        """macOS's ~/Library/Application Support, else the XDG config folder."""
        base = self.home / "Library" / "Application Support" if self.macos else self.config_home
        return base.joinpath(*parts)

    def program(self, name: str, where: Workspace | None) -> str:
        """Our program `name` as a file names it: `where` is the agent's workspace for a
        project-level file, None for a file in the home folder."""
        if where is None:
            return self.server if name == SERVER else self.hook
        return project_program(name, self.root, where.prefix)

    def stdio(self, where: Workspace | None = None) -> dict[str, Any]:
        entry: dict[str, Any] = {"command": self.program(SERVER, where), "args": ["serve"]}
        if where is not None and where.project_dir is not None:
            entry["env"] = {"LOREMAP_PROJECT_DIR": where.project_dir}
        return entry

    def server_entry(self, path: Path, keys: tuple[str, ...], entry: dict[str, Any],
                     where: Workspace | None = None) -> JsonEntry:
        """The MCP server `entry` at `keys` of the JSON file `path`."""
        obsolete = (PROJECT_DIR,) if where is not None and "env" not in entry else ()
        return JsonEntry(path, MCP, keys, entry, obsolete=obsolete,
                         needs=_bare(entry["command"]))

    def hook_command(self, event: str, where: Workspace | None = None) -> str:
        """The shell command of a hook handler running `loremap-hook event`."""
        if where is None:
            return f"{shlex.quote(self.hook)} {event}"
        inside = in_project(HOOK_PROGRAM, self.root)
        if inside is None or where.prefix is None:
            return f"{HOOK_PROGRAM} {event}"
        return f"{where.prefix}{shlex.quote(inside)} {event}"


@dataclass(frozen=True)
class Agent:
    """One agent: its files (as edits), whether it has context hooks, what to tell the user."""

    name: str
    title: str
    edits: Callable[[Context], list[Edit]]
    hooks: bool
    notes: tuple[str, ...]


# Codex runs the hooks of hooks.json only while this feature is on (on by default since
# 0.150; `codex_hooks` is its legacy name); `codex features list` shows it.
CODEX_HOOKS_OFF = ("Codex will not run loremap's hooks until it is true "
                   "(`codex features enable hooks`)")


def _codex(c: Context) -> list[Edit]:
    config = c.codex_home / "config.toml"
    return [
        TomlTable(config, MCP, ("mcp_servers", SERVER), c.stdio(), needs=_bare(c.server)),
        MarkedBlock(c.root / "AGENTS.md", RULES),
        JsonHooks(c.codex_home / "hooks.json", HOOKS, (
            ("SessionStart", {"hooks": [{"type": "command",
                                         "command": c.hook_command("session-start")}]}),
            ("UserPromptSubmit", {"hooks": [{"type": "command",
                                             "command": c.hook_command("prompt")}]})),
            needs=_bare(c.hook)),
        TomlFlag(config, HOOKS, "features", "hooks", ("codex_hooks",), CODEX_HOOKS_OFF),
    ]


def _gemini(c: Context) -> list[Edit]:
    settings = c.root / ".gemini" / "settings.json"
    start, prompt, after = (c.hook_command(event, IN_FOLDER)
                            for event in ("session-start", "prompt", "post-tool"))
    return [
        c.server_entry(settings, ("mcpServers", SERVER), c.stdio(IN_FOLDER), IN_FOLDER),
        JsonHooks(settings, HOOKS, (
            ("SessionStart", {"hooks": [{"type": "command", "command": start,
                                         "name": "loremap"}]}),
            ("BeforeAgent", {"hooks": [{"type": "command", "command": prompt,
                                        "name": "loremap"}]}),
            # A failed shell command: what fixed it before (hook/failure.py).
            ("AfterTool", {"matcher": "run_shell_command",
                           "hooks": [{"type": "command", "command": after,
                                      "name": "loremap"}]})),
            needs=_bare(start.split()[0])),
        MarkedBlock(c.root / "GEMINI.md", RULES),
    ]


def _cursor(c: Context) -> list[Edit]:
    return [c.server_entry(c.root / ".cursor" / "mcp.json", ("mcpServers", SERVER),
                           c.stdio(WORKSPACE_FOLDER), WORKSPACE_FOLDER),
            OwnFile(c.root / ".cursor" / "rules" / "loremap.mdc", RULES, instructions.CURSOR_RULE)]


def _vscode(c: Context) -> list[Edit]:
    return [c.server_entry(c.root / ".vscode" / "mcp.json", ("servers", SERVER),
                           {"type": "stdio", **c.stdio(WORKSPACE_FOLDER)}, WORKSPACE_FOLDER),
            MarkedBlock(c.root / ".github" / "copilot-instructions.md", RULES)]


def _windsurf(c: Context) -> list[Edit]:
    return [c.server_entry(c.home / ".codeium" / "windsurf" / "mcp_config.json",
                           ("mcpServers", SERVER), c.stdio()),
            OwnFile(c.root / ".windsurf" / "rules" / "loremap.md", RULES,
                    instructions.WINDSURF_RULE)]


def _cline(c: Context) -> list[Edit]:
    storage = c.app_support("Code", "User", "globalStorage", "saoudrizwan.claude-dev")
    rules = c.root / ".clinerules"
    # Trigger: the project's .clinerules is a single file. Why: Cline reads that file, and a
    # folder cannot be made in its place. Outcome: our block goes inside it, between markers.
    rule: Edit = (MarkedBlock(rules, RULES) if rules.is_file()
                  else OwnFile(rules / "loremap.md", RULES, instructions.PLAIN_RULE))
    return [c.server_entry(storage / "settings" / "cline_mcp_settings.json",
                           ("mcpServers", SERVER), c.stdio()), rule]


def _opencode(c: Context) -> list[Edit]:
    config = c.root / "opencode.jsonc"
    if not config.exists():
        config = c.root / "opencode.json"
    server = c.program(SERVER, UNKNOWN)
    entry = {"type": "local", "command": [server, "serve"], "enabled": True}
    return [JsonEntry(config, MCP, ("mcp", SERVER), entry,
                      obsolete=(("environment", PROJECT_DIR[1]),), needs=_bare(server)),
            MarkedBlock(c.root / "AGENTS.md", RULES)]


def _continue(c: Context) -> list[Edit]:
    server = c.stdio(UNKNOWN)
    return [OwnFile(c.root / ".continue" / "mcpServers" / "loremap.yaml", MCP,
                    continue_block(SERVER, server), needs=_bare(server["command"])),
            OwnFile(c.root / ".continue" / "rules" / "loremap.md", RULES,
                    instructions.CONTINUE_RULE)]


def _goose(c: Context) -> list[Edit]:
    entry = {"enabled": True, "type": "stdio", "name": SERVER, "cmd": c.server,
             "args": ["serve"], "envs": {}, "timeout": 300,
             "description": "loremap: this project's memory"}
    return [YamlEntry(c.config_home / "goose" / "config.yaml", MCP, "extensions", SERVER, entry,
                      needs=_bare(c.server)),
            MarkedBlock(c.root / ".goosehints", RULES)]


def _zed(c: Context) -> list[Edit]:
    rules = next((c.root / name for name in ZED_RULES if (c.root / name).is_file()),
                 c.root / "AGENTS.md")
    return [c.server_entry(c.config_home / "zed" / "settings.json",
                           ("context_servers", SERVER), c.stdio()),
            MarkedBlock(rules, RULES)]


def _claude_desktop(c: Context) -> list[Edit]:
    return [c.server_entry(c.app_support("Claude", "claude_desktop_config.json"),
                           ("mcpServers", SERVER), c.stdio())]


AGENTS: tuple[Agent, ...] = (
    Agent("codex", "Codex CLI", _codex, True, (
        "Codex runs new hooks only after you trust them",)),
    Agent("gemini", "Gemini CLI", _gemini, True, (
        "Gemini CLI uses a project's MCP servers and hooks only in a trusted folder",)),
    Agent("cursor", "Cursor", _cursor, False, (
        "Cursor has hooks, but how they add context is unverified, so none are installed",)),
    Agent("vscode", "VS Code (GitHub Copilot)", _vscode, False, (
        "VS Code asks before it starts a new MCP server; its hooks (Preview) are not used: "
        "context injection is unverified",)),
    Agent("windsurf", "Windsurf", _windsurf, False, (
        "Windsurf's Cascade hooks are not documented to add context, so none are installed",)),
    Agent("cline", "Cline", _cline, False, ("Cline has no verified context hooks",)),
    Agent("opencode", "OpenCode", _opencode, False, (
        "OpenCode plugins can hook events, but context injection is unverified, so none are "
        "installed",)),
    Agent("continue", "Continue", _continue, False, (
        "a block file for this workspace, not an entry in ~/.continue/config.yaml; Continue "
        "has no hooks",)),
    Agent("goose", "Goose", _goose, False, (
        "Goose has no hooks; it re-reads .goosehints every turn",)),
    Agent("zed", "Zed", _zed, False, (
        "Zed reads only the first rules file it finds (.rules, .cursorrules, ..., AGENTS.md); "
        "it has no hooks",)),
    Agent("claude-desktop", "Claude Desktop", _claude_desktop, False, (
        "Claude Desktop reads no instruction file and has no hooks; restart it to load the "
        "server",)),
)
BY_NAME = {agent.name: agent for agent in AGENTS}
