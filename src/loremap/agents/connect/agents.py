"""The agents `loremap connect` knows: where each keeps its MCP servers and instructions.

One table, one row per agent, from the verified facts in the agent reference: the file and the
shape of its MCP configuration, the file it reads instructions from, and whether it has hooks
that can put text into the model's context (only Codex CLI and Gemini CLI, besides Claude Code,
which `loremap hooks` handles). A project-level file gets `LOREMAP_PROJECT_DIR` in the server's
environment, because the agent may start the server elsewhere and send no MCP roots; a
user-level file serves every project, so the server finds the project from what the agent says.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loremap.agents import instructions
from loremap.agents.connect.edits import Edit, JsonEntry, JsonHooks, MarkedBlock, OwnFile
from loremap.agents.connect.toml import TomlTable
from loremap.agents.connect.yaml import YamlEntry, continue_block

SERVER = "loremap"
MCP, RULES, HOOKS = "MCP server", "instructions", "hooks"
# Zed reads the first of these that exists, and only it (agent reference, section 5).
ZED_RULES = (".rules", ".cursorrules", ".windsurfrules", ".clinerules",
             ".github/copilot-instructions.md", "AGENT.md", "AGENTS.md", "CLAUDE.md", "GEMINI.md")


def program(name: str) -> str:
    """The absolute path of our console script `name` beside this Python, else from PATH."""
    beside = Path(sys.executable).absolute().parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name) or name


@dataclass(frozen=True)
class Context:
    """Where things are on this machine: the project, the user's folders, our programs."""

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
                   server=program("loremap"), hook=program("loremap-hook"))

    def app_support(self, *parts: str) -> Path:
        """macOS's ~/Library/Application Support, else the XDG config folder."""
        base = self.home / "Library" / "Application Support" if self.macos else self.config_home
        return base.joinpath(*parts)

    def stdio(self, project: bool) -> dict[str, Any]:
        entry: dict[str, Any] = {"command": self.server, "args": ["serve"]}
        if project:
            entry["env"] = {"LOREMAP_PROJECT_DIR": str(self.root)}
        return entry

    def hook_command(self, event: str) -> str:
        return f"{shlex.quote(self.hook)} {event}"


@dataclass(frozen=True)
class Agent:
    """One agent: its files (as edits), whether it has context hooks, what to tell the user."""

    name: str
    title: str
    edits: Callable[[Context], list[Edit]]
    hooks: bool
    notes: tuple[str, ...]


def _codex(c: Context) -> list[Edit]:
    return [
        TomlTable(c.codex_home / "config.toml", MCP, ("mcp_servers", SERVER), c.stdio(False)),
        MarkedBlock(c.root / "AGENTS.md", RULES),
        JsonHooks(c.codex_home / "hooks.json", HOOKS, (
            ("SessionStart", {"hooks": [{"type": "command",
                                         "command": c.hook_command("session-start")}]}),
            ("UserPromptSubmit", {"hooks": [{"type": "command",
                                             "command": c.hook_command("prompt")}]}))),
    ]


def _gemini(c: Context) -> list[Edit]:
    settings = c.root / ".gemini" / "settings.json"
    return [
        JsonEntry(settings, MCP, ("mcpServers", SERVER), c.stdio(True)),
        JsonHooks(settings, HOOKS, (
            ("SessionStart", {"hooks": [{"type": "command",
                                         "command": c.hook_command("session-start"),
                                         "name": "loremap"}]}),
            ("BeforeAgent", {"hooks": [{"type": "command", "command": c.hook_command("prompt"),
                                        "name": "loremap"}]}))),
        MarkedBlock(c.root / "GEMINI.md", RULES),
    ]


def _cursor(c: Context) -> list[Edit]:
    return [JsonEntry(c.root / ".cursor" / "mcp.json", MCP, ("mcpServers", SERVER), c.stdio(True)),
            OwnFile(c.root / ".cursor" / "rules" / "loremap.mdc", RULES, instructions.CURSOR_RULE)]


def _vscode(c: Context) -> list[Edit]:
    return [JsonEntry(c.root / ".vscode" / "mcp.json", MCP, ("servers", SERVER),
                      {"type": "stdio", **c.stdio(True)}),
            MarkedBlock(c.root / ".github" / "copilot-instructions.md", RULES)]


def _windsurf(c: Context) -> list[Edit]:
    return [JsonEntry(c.home / ".codeium" / "windsurf" / "mcp_config.json", MCP,
                      ("mcpServers", SERVER), c.stdio(False)),
            OwnFile(c.root / ".windsurf" / "rules" / "loremap.md", RULES,
                    instructions.WINDSURF_RULE)]


def _cline(c: Context) -> list[Edit]:
    storage = c.app_support("Code", "User", "globalStorage", "saoudrizwan.claude-dev")
    rules = c.root / ".clinerules"
    # Trigger: the project's .clinerules is a single file. Why: Cline reads that file, and a
    # folder cannot be made in its place. Outcome: our block goes inside it, between markers.
    rule: Edit = (MarkedBlock(rules, RULES) if rules.is_file()
                  else OwnFile(rules / "loremap.md", RULES, instructions.PLAIN_RULE))
    return [JsonEntry(storage / "settings" / "cline_mcp_settings.json", MCP,
                      ("mcpServers", SERVER), c.stdio(False)), rule]


def _opencode(c: Context) -> list[Edit]:
    config = c.root / "opencode.jsonc"
    if not config.exists():
        config = c.root / "opencode.json"
    entry = {"type": "local", "command": [c.server, "serve"], "enabled": True,
             "environment": {"LOREMAP_PROJECT_DIR": str(c.root)}}
    return [JsonEntry(config, MCP, ("mcp", SERVER), entry),
            MarkedBlock(c.root / "AGENTS.md", RULES)]


def _continue(c: Context) -> list[Edit]:
    return [OwnFile(c.root / ".continue" / "mcpServers" / "loremap.yaml", MCP,
                    continue_block(SERVER, c.stdio(True))),
            OwnFile(c.root / ".continue" / "rules" / "loremap.md", RULES,
                    instructions.CONTINUE_RULE)]


def _goose(c: Context) -> list[Edit]:
    entry = {"enabled": True, "type": "stdio", "name": SERVER, "cmd": c.server,
             "args": ["serve"], "envs": {}, "timeout": 300,
             "description": "loremap: this project's memory"}
    return [YamlEntry(c.config_home / "goose" / "config.yaml", MCP, "extensions", SERVER, entry),
            MarkedBlock(c.root / ".goosehints", RULES)]


def _zed(c: Context) -> list[Edit]:
    rules = next((c.root / name for name in ZED_RULES if (c.root / name).is_file()),
                 c.root / "AGENTS.md")
    return [JsonEntry(c.config_home / "zed" / "settings.json", MCP, ("context_servers", SERVER),
                      c.stdio(False)),
            MarkedBlock(rules, RULES)]


def _claude_desktop(c: Context) -> list[Edit]:
    return [JsonEntry(c.app_support("Claude", "claude_desktop_config.json"), MCP,
                      ("mcpServers", SERVER), c.stdio(False))]


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
