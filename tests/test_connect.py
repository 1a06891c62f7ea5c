"""`loremap connect`: each agent's files on a machine that already has the user's own configs."""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from loremap import jsonc
from loremap.agents.instructions import BEGIN, END, INSTRUCTIONS
from npm_tools import npm_tool

LOREMAP = str(Path(sys.executable).absolute().parent / "loremap")
HOOK = str(Path(sys.executable).absolute().parent / "loremap-hook")


@pytest.fixture(autouse=True)
def _no_agent_homes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEX_HOME", raising=False)


# --- the user's machine before connect --------------------------------------------------------

CODEX_TOML = """\
# Codex settings, by hand
model = "o3"   # the fast one

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]  # pinned below
env = { DOCS_TOKEN_ENV = "X" }

[profiles.work]
model = "gpt-5"
"""

CODEX_HOOKS = """\
{
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}
        ],
        "SessionStart": [
            {"hooks": [{"type": "command", "command": "echo hello"}]}
        ]
    }
}
"""

AGENTS_MD = "# Demo\n\nRun `make test` before committing.\n"

# Gemini CLI strips comments from its settings but refuses trailing commas.
GEMINI_SETTINGS = """\
{
  // my theme
  "ui": {"theme": "GitHub"},
  "mcpServers": {
    "github": {
      "command": "github-mcp",  // from brew
      "args": ["stdio"]
    }
  },
  "hooks": {
    "AfterTool": [{"hooks": [{"type": "command", "command": "./lint.sh", "timeout": 5000}]}]
  }
}
"""

VSCODE_MCP = """\
// Workspace MCP servers
{
\t"inputs": [
\t\t{"type": "promptString", "id": "token", "description": "API token", "password": true}
\t],
\t"servers": {
\t\t/* the company's server */
\t\t"corp": {"type": "http", "url": "https://mcp.example.com", "headers": {"A": "${input:token}"}},
\t}
}
"""

CURSOR_MCP = '{"mcpServers": {"linear": {"url": "https://mcp.linear.app/sse"}}}\n'

WINDSURF_MCP = """\
{
    "mcpServers": {
        "fetch": {
            "command": "uvx",
            "args": ["mcp-server-fetch"]
        }
    }
}
"""

CLINE_MCP = """\
{
  "mcpServers": {
    "time": {
      "command": "uvx",
      "args": ["mcp-server-time"],
      "disabled": false,
      "autoApprove": ["get_current_time"]
    }
  }
}"""

OPENCODE_JSONC = """\
{
  "$schema": "https://opencode.ai/config.json",
  // models
  "model": "anthropic/claude-sonnet-4-5",
  "mcp": {
    "jira": {"type": "remote", "url": "https://jira.example.com/mcp", "enabled": true},
  },
}
"""

GOOSE_YAML = """\
# goose config
GOOSE_PROVIDER: openai   # the provider
GOOSE_MODEL: "gpt-4o"
extensions:
    developer:
        bundled: true
        enabled: true
        name: developer
        timeout: 300
        type: builtin
    fs:
        type: stdio
        cmd: npx
        args:
            - -y
            - '@modelcontextprotocol/server-filesystem'
        envs: {}
        enabled: false   # off for now
# the mode below is mine
GOOSE_MODE: smart_approve
"""

ZED_SETTINGS = """\
// Zed settings
//
// For information on how to configure Zed, see the Zed
// documentation: https://zed.dev/docs/configuring-zed
{
  "ui_font_size": 16,
  "buffer_font_size": 15, // a bit smaller
  "context_servers": {
    "postgres": {
      "command": "pg-mcp",
      "args": [],
      "env": {},
    },
  },
}
"""

CLAUDE_DESKTOP = """\
{
  "globalShortcut": "Alt+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]
    }
  }
}
"""


@dataclass
class Case:
    """An agent, the user's files it finds (path -> text) and where our server entry is."""

    agent: str
    seeds: dict[str, str]
    server: Callable[[Path, Path], Any]  # (home, repo) -> our entry, or None
    created: list[str] = field(default_factory=list)  # files connect adds


def _place(where: str, home: Path, repo: Path) -> Path:
    return home / where[2:] if where.startswith("~/") else repo / where


def _json_at(where: str, *keys: str) -> Callable[[Path, Path], Any]:
    def find(home: Path, repo: Path) -> Any:
        path = _place(where, home, repo)
        if not path.exists():
            return None
        node = jsonc.loads(path.read_text(encoding="utf-8"), str(path))
        for key in keys:
            node = (node or {}).get(key)
        return node
    return find


def _codex_server(home: Path, repo: Path) -> Any:
    import tomllib

    path = home / ".codex" / "config.toml"
    if not path.exists():
        return None
    return tomllib.loads(path.read_text(encoding="utf-8")).get("mcp_servers", {}).get("loremap")


def _goose_server(home: Path, repo: Path) -> Any:
    from ruamel.yaml import YAML

    path = home / ".config" / "goose" / "config.yaml"
    data = YAML(typ="safe").load(path.read_text(encoding="utf-8")) if path.exists() else None
    return ((data or {}).get("extensions") or {}).get("loremap")


def _continue_server(home: Path, repo: Path) -> Any:
    from ruamel.yaml import YAML

    path = repo / ".continue" / "mcpServers" / "loremap.yaml"
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))["mcpServers"][0] \
        if path.exists() else None


CLINE = "~/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/" \
        "cline_mcp_settings.json"

CASES = [
    Case("codex", {"~/.codex/config.toml": CODEX_TOML, "~/.codex/hooks.json": CODEX_HOOKS,
                   "AGENTS.md": AGENTS_MD}, _codex_server),
    Case("gemini", {".gemini/settings.json": GEMINI_SETTINGS, "GEMINI.md": "# Notes\n"},
         _json_at(".gemini/settings.json", "mcpServers", "loremap")),
    Case("cursor", {".cursor/mcp.json": CURSOR_MCP, ".cursor/rules/style.mdc": "---\n---\nx\n"},
         _json_at(".cursor/mcp.json", "mcpServers", "loremap"),
         created=[".cursor/rules/loremap.mdc"]),
    Case("vscode", {".vscode/mcp.json": VSCODE_MCP,
                    ".github/copilot-instructions.md": "Use tabs.\n"},
         _json_at(".vscode/mcp.json", "servers", "loremap")),
    Case("windsurf", {"~/.codeium/windsurf/mcp_config.json": WINDSURF_MCP},
         _json_at("~/.codeium/windsurf/mcp_config.json", "mcpServers", "loremap"),
         created=[".windsurf/rules/loremap.md"]),
    Case("cline", {CLINE: CLINE_MCP, ".clinerules": "- Prefer small functions.\n"},
         _json_at(CLINE, "mcpServers", "loremap")),
    Case("opencode", {"opencode.jsonc": OPENCODE_JSONC, "AGENTS.md": AGENTS_MD},
         _json_at("opencode.jsonc", "mcp", "loremap")),
    Case("continue", {".continue/mcpServers/other.yaml": "name: other\n",
                      ".continue/rules/style.md": "Be brief.\n"}, _continue_server,
         created=[".continue/mcpServers/loremap.yaml", ".continue/rules/loremap.md"]),
    Case("goose", {"~/.config/goose/config.yaml": GOOSE_YAML, ".goosehints": "Use uv.\n"},
         _goose_server),
    Case("zed", {"~/.config/zed/settings.json": ZED_SETTINGS, ".rules": "Be terse.\n",
                 "AGENTS.md": AGENTS_MD},
         _json_at("~/.config/zed/settings.json", "context_servers", "loremap")),
    Case("claude-desktop", {"~/.config/Claude/claude_desktop_config.json": CLAUDE_DESKTOP},
         _json_at("~/.config/Claude/claude_desktop_config.json", "mcpServers", "loremap")),
]


def snapshot(*roots: Path) -> dict[str, bytes]:
    """Every file under the roots (but .git and loremap's backups) with its bytes."""
    found = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and ".git" not in path.parts and ".loremap-backup" not in path.name:
                found[str(path)] = path.read_bytes()
    return found


def seed(case: Case, home: Path, repo: Path) -> None:
    for where, text in case.seeds.items():
        path = _place(where, home, repo)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def only_inserts(old: str, new: str) -> bool:
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return {op for op, *_ in matcher.get_opcodes()} <= {"equal", "insert"}


@pytest.mark.parametrize("case", CASES, ids=[c.agent for c in CASES])
def test_connect_adds_only_our_entries_to_the_users_configs_and_undo_restores_them(
        case: Case, cli, repo: Path, isolated_home: Path):
    home = isolated_home
    seed(case, home, repo)
    before = snapshot(home, repo)

    done = cli("connect", case.agent)
    assert done.code == 0, done.err
    assert "Connected loremap to" in done.out
    server = case.server(home, repo)
    assert server is not None
    command = server.get("command") or server.get("cmd")
    assert (command[0] if isinstance(command, list) else command) == LOREMAP
    after = snapshot(home, repo)
    for where in case.seeds:
        path = str(_place(where, home, repo))
        old, new = before[path].decode(), after[path].decode()
        assert only_inserts(old, new), f"{where} lost or changed bytes:\n{new}"
        if old != new:
            assert Path(path + ".loremap-backup").read_bytes() == before[path]
    for where in case.created:
        assert str(_place(where, home, repo)) in after

    again = cli("connect", case.agent)
    assert again.code == 0 and "already connected" in again.out
    assert snapshot(home, repo) == after

    undone = cli("connect", case.agent, "--undo")
    assert undone.code == 0, undone.err
    assert snapshot(home, repo) == before
    assert case.server(home, repo) is None


# --- the agents' own command-line tools read what we wrote ------------------------------------


def _run(tool: Path, args: list[str], home: Path, repo: Path, stdout: bool = False) -> str:
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": str(home / ".codex"),
           "NO_COLOR": "1"}
    done = subprocess.run([str(tool), *args], cwd=repo, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout if stdout else done.stdout + done.stderr  # Gemini CLI lists on stderr


@pytest.mark.slow
def test_codex_mcp_list_shows_loremap_after_connect_and_not_after_undo(
        cli, repo: Path, isolated_home: Path):
    codex = npm_tool("codex")
    seed(CASES[0], isolated_home, repo)
    assert cli("connect", "codex").code == 0
    listed = json.loads(_run(codex, ["mcp", "list", "--json"], isolated_home, repo, True))
    names = {server["name"] for server in listed}
    assert {"loremap", "docs"} <= names
    ours = next(server for server in listed if server["name"] == "loremap")
    assert ours["transport"]["command"] == LOREMAP and ours["transport"]["args"] == ["serve"]
    assert cli("connect", "codex", "--undo").code == 0
    listed = json.loads(_run(codex, ["mcp", "list", "--json"], isolated_home, repo, True))
    assert {server["name"] for server in listed} == {"docs"}


@pytest.mark.slow
def test_gemini_mcp_list_shows_loremap_after_connect_and_not_after_undo(
        cli, repo: Path, isolated_home: Path):
    gemini = npm_tool("gemini")
    seed(CASES[1], isolated_home, repo)
    assert cli("connect", "gemini").code == 0
    listed = _run(gemini, ["mcp", "list"], isolated_home, repo)
    assert re.search(r"(^|\s)loremap:", listed, re.M), listed
    assert re.search(r"(^|\s)github:", listed, re.M), listed
    assert cli("connect", "gemini", "--undo").code == 0
    listed = _run(gemini, ["mcp", "list"], isolated_home, repo)
    assert not re.search(r"(^|\s)loremap:", listed, re.M), listed
    assert re.search(r"(^|\s)github:", listed, re.M), listed


# --- dry run, list, json ----------------------------------------------------------------------


def test_dry_run_prints_a_diff_per_file_and_writes_nothing(cli, repo: Path, isolated_home: Path):
    seed(CASES[3], isolated_home, repo)
    before = snapshot(isolated_home, repo)
    done = cli("connect", "vscode", "--dry-run")
    assert done.code == 0, done.err
    assert "--- .vscode/mcp.json\n+++ .vscode/mcp.json" in done.out
    assert "+\t\t\"loremap\": {" in done.out
    assert "--- .github/copilot-instructions.md" in done.out
    assert done.out.rstrip().endswith("(dry run: nothing was written)")
    assert snapshot(isolated_home, repo) == before
    assert not list(repo.rglob("*.loremap-backup"))


def test_dry_run_of_undo_shows_what_would_be_removed(cli, repo: Path):
    assert cli("connect", "cursor").code == 0
    done = cli("connect", "cursor", "--undo", "--dry-run")
    assert "+++ /dev/null" in done.out and "-alwaysApply: true" in done.out
    assert (repo / ".cursor" / "rules" / "loremap.mdc").exists()


def test_list_shows_every_agent_its_files_and_whether_it_is_connected(cli, repo: Path):
    assert cli("connect", "cursor").code == 0
    done = cli("connect", "--list")
    assert done.code == 0
    for name in ("codex", "gemini", "cursor", "vscode", "windsurf", "cline", "opencode",
                 "continue", "goose", "zed", "claude-desktop"):
        assert re.search(rf"^{name} \(.+\): ", done.out, re.M), name
    assert "cursor (Cursor): connected; no context hooks" in done.out
    assert "codex (Codex CLI): not connected; context hooks" in done.out
    assert "  MCP server: .cursor/mcp.json - connected" in done.out
    found = json.loads(cli("connect", "--list", "--json").out)["agents"]
    by_name = {agent["agent"]: agent for agent in found}
    assert by_name["cursor"]["state"] == "connected"
    assert by_name["vscode"]["state"] == "not connected"
    assert by_name["gemini"]["hooks"] is True and by_name["zed"]["hooks"] is False
    assert {f["role"] for f in by_name["codex"]["files"]} == {"MCP server", "instructions",
                                                              "hooks"}


def test_list_reports_a_broken_file_without_failing(cli, repo: Path):
    (repo / ".cursor").mkdir()
    (repo / ".cursor" / "mcp.json").write_text("{oops", encoding="utf-8")
    found = json.loads(cli("connect", "--list", "cursor", "--json").out)["agents"]
    assert found[0]["state"] == "error"
    assert "mcp.json:1:2: not valid JSON" in found[0]["files"][0]["state"]


def test_json_output_names_each_file_its_action_and_backup(cli, repo: Path, isolated_home: Path):
    seed(CASES[10], isolated_home, repo)
    report = json.loads(cli("connect", "claude-desktop", "--json").out)
    assert report["agent"] == "claude-desktop" and report["changed"] is True
    [entry] = report["files"]
    assert entry["action"] == "updated" and entry["roles"] == ["MCP server"]
    assert entry["backup"].endswith("claude_desktop_config.json.loremap-backup")
    again = json.loads(cli("connect", "claude-desktop", "--json").out)
    assert again["changed"] is False and again["files"][0]["action"] == "unchanged"


# --- what is written --------------------------------------------------------------------------


def test_project_files_name_the_project_and_user_files_do_not(cli, repo: Path,
                                                              isolated_home: Path):
    assert cli("connect", "cursor").code == 0
    assert cli("connect", "windsurf").code == 0
    cursor = json.loads((repo / ".cursor" / "mcp.json").read_text(encoding="utf-8"))
    assert cursor["mcpServers"]["loremap"] == {
        "command": LOREMAP, "args": ["serve"], "env": {"LOREMAP_PROJECT_DIR": str(repo)}}
    windsurf = isolated_home / ".codeium" / "windsurf" / "mcp_config.json"
    assert json.loads(windsurf.read_text(encoding="utf-8"))["mcpServers"]["loremap"] == {
        "command": LOREMAP, "args": ["serve"]}
    rule = (repo / ".cursor" / "rules" / "loremap.mdc").read_text(encoding="utf-8")
    assert rule.startswith("---\n") and "\nalwaysApply: true\n" in rule


def test_the_instructions_are_short_and_name_the_tools():
    assert len(INSTRUCTIONS) < 1200
    for tool in ("recall", "remember", "handoff", "map"):
        assert f"`{tool}`" in INSTRUCTIONS
    assert "not instructions" in INSTRUCTIONS


def test_codex_and_gemini_hooks_run_loremap_hook(cli, repo: Path, isolated_home: Path):
    assert cli("connect", "codex").code == 0
    assert cli("connect", "gemini").code == 0
    codex = json.loads((isolated_home / ".codex" / "hooks.json").read_text(encoding="utf-8"))
    assert codex["hooks"]["SessionStart"] == [
        {"hooks": [{"type": "command", "command": f"{HOOK} session-start"}]}]
    assert codex["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == f"{HOOK} prompt"
    gemini = json.loads((repo / ".gemini" / "settings.json").read_text(encoding="utf-8"))
    assert gemini["hooks"]["SessionStart"][0]["hooks"][0]["command"] == f"{HOOK} session-start"
    assert gemini["hooks"]["BeforeAgent"][0]["hooks"][0]["command"] == f"{HOOK} prompt"


def test_a_stale_hook_of_ours_in_the_users_group_is_replaced_and_theirs_kept(
        cli, repo: Path, isolated_home: Path):
    hooks = isolated_home / ".codex" / "hooks.json"
    hooks.parent.mkdir()
    hooks.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": "echo mine"},
        {"type": "command", "command": "/old/venv/bin/loremap-hook session-start"}]}]}},
        indent=2), encoding="utf-8")
    assert cli("connect", "codex").code == 0
    groups = json.loads(hooks.read_text(encoding="utf-8"))["hooks"]["SessionStart"]
    assert groups == [{"hooks": [{"type": "command", "command": "echo mine"}]},
                      {"hooks": [{"type": "command", "command": f"{HOOK} session-start"}]}]
    assert cli("connect", "codex", "--undo").code == 0
    assert json.loads(hooks.read_text(encoding="utf-8")) == {"hooks": {"SessionStart": [
        {"hooks": [{"type": "command", "command": "echo mine"}]}]}}


def test_an_outdated_entry_is_updated_and_keeps_what_the_user_added(cli, repo: Path,
                                                                   isolated_home: Path):
    path = isolated_home / CLINE[2:]
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": {"loremap": {
        "command": "/old/venv/bin/loremap", "args": ["serve"], "autoApprove": ["recall"]}}},
        indent=2), encoding="utf-8")
    done = cli("connect", "cline")
    assert done.code == 0 and "updated" in done.out
    entry = json.loads(path.read_text(encoding="utf-8"))["mcpServers"]["loremap"]
    assert entry == {"command": LOREMAP, "args": ["serve"], "autoApprove": ["recall"]}


def test_instructions_replace_their_old_block_in_place(cli, repo: Path):
    (repo / "AGENTS.md").write_text(f"# A\n\n{BEGIN}\nold text\n{END}\n\n## More\n",
                                    encoding="utf-8")
    assert cli("connect", "opencode").code == 0
    text = (repo / "AGENTS.md").read_text(encoding="utf-8")
    assert text == f"# A\n\n{BEGIN}\n{INSTRUCTIONS}{END}\n\n## More\n"
    assert cli("connect", "opencode", "--undo").code == 0
    assert (repo / "AGENTS.md").read_text(encoding="utf-8") == "# A\n\n\n## More\n"


def test_shared_instructions_stay_while_another_agent_still_reads_them(cli, repo: Path):
    assert cli("connect", "codex").code == 0
    assert cli("connect", "opencode").code == 0
    done = cli("connect", "codex", "--undo")
    assert "kept the instructions in AGENTS.md, still used by OpenCode" in done.out
    assert BEGIN in (repo / "AGENTS.md").read_text(encoding="utf-8")
    assert cli("connect", "opencode", "--undo").code == 0
    assert not (repo / "AGENTS.md").exists()


def test_zed_instructions_go_to_the_first_rules_file_zed_reads(cli, repo: Path):
    (repo / "CLAUDE.md").write_text("# Claude\n", encoding="utf-8")
    (repo / "AGENTS.md").write_text("# Agents\n", encoding="utf-8")
    assert cli("connect", "zed").code == 0
    assert BEGIN in (repo / "AGENTS.md").read_text(encoding="utf-8")
    assert BEGIN not in (repo / "CLAUDE.md").read_text(encoding="utf-8")


def test_cline_rules_go_into_a_clinerules_folder_when_there_is_none(cli, repo: Path):
    assert cli("connect", "cline").code == 0
    assert (repo / ".clinerules" / "loremap.md").read_text(encoding="utf-8") == INSTRUCTIONS


def test_opencode_uses_opencode_json_when_there_is_no_jsonc(cli, repo: Path):
    assert cli("connect", "opencode").code == 0
    data = json.loads((repo / "opencode.json").read_text(encoding="utf-8"))
    assert data["mcp"]["loremap"] == {"type": "local", "command": [LOREMAP, "serve"],
                                      "enabled": True,
                                      "environment": {"LOREMAP_PROJECT_DIR": str(repo)}}


def test_user_files_follow_xdg_config_home_and_codex_home(cli, repo: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    assert cli("connect", "zed").code == 0
    assert cli("connect", "codex").code == 0
    assert (tmp_path / "xdg" / "zed" / "settings.json").is_file()
    assert (tmp_path / "codex" / "config.toml").is_file()
    assert (tmp_path / "codex" / "hooks.json").is_file()


def test_undo_of_files_connect_created_leaves_no_trace(cli, repo: Path, isolated_home: Path):
    before = snapshot(isolated_home, repo)
    folders = {p for p in repo.rglob("*") if p.is_dir() and ".git" not in p.parts}
    for agent in ("continue", "cursor", "gemini", "windsurf"):
        assert cli("connect", agent).code == 0
        assert cli("connect", agent, "--undo").code == 0
    assert snapshot(isolated_home, repo) == before
    assert {p for p in repo.rglob("*") if p.is_dir() and ".git" not in p.parts} == folders
    assert not list(repo.rglob("*.loremap-backup*"))


def test_undo_when_not_connected_says_so(cli, repo: Path):
    done = cli("connect", "goose", "--undo")
    assert done.code == 0 and "not connected to Goose (nothing to remove)" in done.out


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(("agent", "where", "content", "message"), [
    ("gemini", ".gemini/settings.json", '{\n  "mcpServers": {\n    "a": 1,,\n  }\n}',
     ".gemini/settings.json:3:12: not valid JSON"),
    ("cursor", ".cursor/mcp.json", '{"mcpServers": []}', "mcpServers is not an object"),
    ("vscode", ".vscode/mcp.json", "[1, 2]", "the top level is not a JSON object"),
    ("codex", "~/.codex/config.toml", 'model = "o3\n', "config.toml:1:"),
    ("codex", "~/.codex/config.toml", "mcp_servers = 3\n", "mcp_servers is not a table"),
    ("codex", "~/.codex/hooks.json", '{"hooks": {"SessionStart": {}}}',
     "hooks.SessionStart is not a list"),
    ("goose", "~/.config/goose/config.yaml", "extensions:\n  - a\n",
     "extensions is not a mapping"),
    ("goose", "~/.config/goose/config.yaml", "a: [1\nb: 2\n", "config.yaml:2:2: not valid YAML"),
    ("opencode", "AGENTS.md", f"{BEGIN}\nhalf a block\n", "are not one pair"),
])
def test_a_bad_config_file_is_refused_in_one_line_and_nothing_is_written(
        cli, repo: Path, isolated_home: Path, agent: str, where: str, content: str,
        message: str):
    path = _place(where, isolated_home, repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    before = snapshot(isolated_home, repo)
    done = cli("connect", agent)
    assert done.code == 1
    assert done.err.startswith("loremap: error: ") and done.err.count("\n") == 1, done.err
    assert message in done.err and str(path.name) in done.err
    assert "nothing was changed" in done.err
    assert snapshot(isolated_home, repo) == before


@pytest.mark.parametrize(("data", "reason"), [
    (b"\x00\x01binary\xff", "it is a binary file"),
    (b'{"mcpServers": {"a": "caf\xe9"}}', "it is not UTF-8 text"),
])
def test_binary_and_non_utf8_files_are_refused(cli, repo: Path, data: bytes, reason: str):
    (repo / ".cursor").mkdir()
    (repo / ".cursor" / "mcp.json").write_bytes(data)
    done = cli("connect", "cursor")
    assert done.code == 1 and reason in done.err and "mcp.json" in done.err
    assert not (repo / ".cursor" / "rules").exists()


def test_a_folder_where_a_file_should_be_is_refused(cli, repo: Path):
    (repo / "GEMINI.md").mkdir()
    done = cli("connect", "gemini")
    assert done.code == 1 and "GEMINI.md: it is a directory" in done.err
    assert not (repo / ".gemini").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes everything")
def test_an_unreadable_or_unwritable_file_is_refused(cli, repo: Path):
    path = repo / "opencode.json"
    path.write_text("{}", encoding="utf-8")
    path.chmod(0o000)
    try:
        done = cli("connect", "opencode")
        assert done.code == 1 and "opencode.json" in done.err
        path.chmod(0o444)
        done = cli("connect", "opencode")
        assert done.code == 1 and "cannot write" in done.err
        assert not (repo / "AGENTS.md").exists()
    finally:
        path.chmod(0o644)


def test_an_unknown_agent_gets_one_line_listing_the_known_ones(cli, repo: Path):
    done = cli("connect", "emacs")
    assert done.code == 1 and done.err.count("\n") == 1
    assert "unknown agent 'emacs'; known agents: codex, gemini, cursor" in done.err
    assert "claude-desktop" in done.err
    assert "loremap hooks install claude" in cli("connect", "claude").err
    assert "name an agent" in cli("connect").err


def test_an_empty_object_file_of_the_user_comes_back_as_it_was(cli, repo: Path):
    (repo / ".cursor").mkdir()
    (repo / ".cursor" / "mcp.json").write_text("{}", encoding="utf-8")
    assert cli("connect", "cursor").code == 0
    assert cli("connect", "cursor", "--undo").code == 0
    assert (repo / ".cursor" / "mcp.json").read_text(encoding="utf-8") == "{}"


def test_undo_keeps_a_backup_of_a_file_of_ours_the_user_edited(cli, repo: Path):
    assert cli("connect", "windsurf").code == 0
    rule = repo / ".windsurf" / "rules" / "loremap.md"
    rule.write_text(rule.read_text(encoding="utf-8") + "My own line.\n", encoding="utf-8")
    done = cli("connect", "windsurf", "--undo")
    assert done.code == 0 and "backup: loremap.md.loremap-backup" in done.out
    assert not rule.exists()
    assert "My own line." in (rule.parent / "loremap.md.loremap-backup").read_text(
        encoding="utf-8")


def test_windows_line_endings_survive_a_connect_and_an_undo(cli, repo: Path,
                                                            isolated_home: Path):
    agents_md = repo / "AGENTS.md"
    agents_md.write_bytes(b"# Demo\r\n\r\nRules.\r\n")
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_bytes(b'model = "o3"\r\n')
    assert cli("connect", "codex").code == 0
    assert b"\n" not in agents_md.read_bytes().replace(b"\r\n", b"")
    assert b"\n" not in config.read_bytes().replace(b"\r\n", b"")
    assert cli("connect", "codex").out.startswith("loremap is already connected")
    assert cli("connect", "codex", "--undo").code == 0
    assert agents_md.read_bytes() == b"# Demo\r\n\r\nRules.\r\n"
    assert config.read_bytes() == b'model = "o3"\r\n'


def test_hooks_of_an_odd_shape_are_left_alone(cli, repo: Path, isolated_home: Path):
    hooks = isolated_home / ".codex" / "hooks.json"
    hooks.parent.mkdir()
    original = '{"hooks": {"SessionStart": [{"hooks": 3}, "x"]}}\n'
    hooks.write_text(original, encoding="utf-8")
    assert cli("connect", "codex").code == 0
    assert json.loads(hooks.read_text(encoding="utf-8"))["hooks"]["SessionStart"][:2] == [
        {"hooks": 3}, "x"]
    assert cli("connect", "codex", "--undo").code == 0
    assert hooks.read_text(encoding="utf-8") == original


def test_every_agent_connected_then_undone_leaves_the_machine_as_it_was(
        cli, repo: Path, isolated_home: Path):
    for case in CASES:
        seed(case, isolated_home, repo)
    before = snapshot(isolated_home, repo)
    for case in CASES:
        assert cli("connect", case.agent).code == 0, case.agent
    listed = json.loads(cli("connect", "--list", "--json").out)["agents"]
    assert {agent["state"] for agent in listed} == {"connected"}
    for case in CASES:
        assert cli("connect", case.agent, "--undo").code == 0, case.agent
    assert snapshot(isolated_home, repo) == before
