"""`loremap connect`: each agent's files on a machine that already has the user's own configs;
no path of this machine in a file the project commits; Codex's hooks flag."""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from loremap import jsonc
from loremap.agents.instructions import BEGIN, END, INSTRUCTIONS
from npm_tools import npm_tool

BIN = Path(sys.executable).absolute().parent
LOREMAP = str(BIN / "loremap")
HOOK = str(BIN / "loremap-hook")
# The agents whose MCP server goes into a file of the project (the team commits it).
PROJECT_LEVEL = ("gemini", "cursor", "vscode", "opencode", "continue")


@pytest.fixture(autouse=True)
def _no_agent_homes(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CODEX_HOME of the caller's; PATH finds this installation, as it would for a user who
    installed loremap (a project file names the programs by their bare names)."""
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', os.defpath)}")


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
    expected = "loremap" if case.agent in PROJECT_LEVEL else LOREMAP
    assert (command[0] if isinstance(command, list) else command) == expected
    assert done.err == ""  # no warning: loremap is on PATH
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


def agent_cli(name: str) -> Path:
    """The agent's CLI from npm; the test is skipped when npm cannot install it (offline)."""
    try:
        return npm_tool(name)
    except RuntimeError as exc:  # npm is there but the registry is not reachable
        pytest.skip(f"npm could not install {name}: {str(exc)[-300:]}")


def _run(tool: Path, args: list[str], home: Path, cwd: Path, stdout: bool = False,
         path: str | None = None) -> str:
    """The agent's own CLI, with no credentials of any kind: it only reads its files."""
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": str(home / ".codex"),
           "NO_COLOR": "1", "PATH": os.environ["PATH"] if path is None else path}
    done = subprocess.run([str(tool), *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout if stdout else done.stdout + done.stderr  # Gemini CLI lists on stderr


def moved(repo: Path, tmp_path: Path) -> Path:
    """The project copied to another path, the original gone: what a teammate's clone is."""
    copy = tmp_path / "elsewhere" / "clone"
    shutil.copytree(repo, copy, symlinks=True)
    shutil.rmtree(repo)
    return copy


def no_path_of(where: Path, *paths: Path) -> None:
    """No file under `where` (but git's and the virtual environment's) names any of `paths`."""
    for file in where.rglob("*"):
        if file.is_file() and not {".git", ".venv"} & set(file.parts):
            text = file.read_text(encoding="utf-8", errors="replace")
            assert not any(str(p) in text for p in paths), f"{file} names {paths}"


def project_venv(repo: Path) -> Path:
    """A virtual environment inside the project that runs this installation (its Python, its
    site-packages and its console scripts, linked), as `uv sync` would leave one."""
    venv = repo / ".venv"
    (venv / "bin").mkdir(parents=True)
    shutil.copy(BIN.parent / "pyvenv.cfg", venv / "pyvenv.cfg")
    (venv / "lib").symlink_to(BIN.parent / "lib")
    for name in ("python", "loremap", "loremap-hook"):
        (venv / "bin" / name).symlink_to(BIN / name)
    return venv


def without_bin() -> str:
    """PATH without this installation's folder: only what a file names can find it."""
    return os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != str(BIN))


def connect_from(venv: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`loremap ARGS` run by the Python of `venv`, in the project around it."""
    env = {**os.environ, "HOME": str(home), "LOREMAP_DAEMON": "off", "PATH": without_bin()}
    return subprocess.run([str(venv / "bin" / "python"), "-m", "loremap", *args],
                          cwd=venv.parent, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)


@contextmanager
def patient(settings: Path) -> Iterator[None]:
    """Gemini CLI's `mcp list` gives each server 5 s to answer (its
    MCP_LIST_DEFAULT_TIMEOUT_MSEC) unless the server's entry names a `timeout`: on a loaded
    machine a fresh interpreter importing the MCP SDK can take longer, and the list says
    Disconnected. The loremap entry gets 100 s while the block runs; then the file connect
    wrote is put back byte for byte."""
    written = settings.read_bytes()
    settings.write_text(jsonc.set_value(written.decode("utf-8"),
                                        ["mcpServers", "loremap", "timeout"], 100_000),
                        encoding="utf-8")
    try:
        yield
    finally:
        settings.write_bytes(written)


def trust(home: Path, folder: Path) -> None:
    """Gemini CLI's trust of `folder` (without it, it starts no server of the folder)."""
    (home / ".gemini").mkdir(exist_ok=True)
    (home / ".gemini" / "trustedFolders.json").write_text(
        json.dumps({str(folder): "TRUST_FOLDER"}), encoding="utf-8")


@pytest.mark.slow
def test_codex_reads_the_server_and_the_hooks_flag_connect_wrote_from_a_moved_project(
        cli, repo: Path, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    codex = agent_cli("codex")
    seed(CASES[0], isolated_home, repo)
    assert cli("connect", "codex").code == 0
    config = (isolated_home / ".codex" / "config.toml").read_text(encoding="utf-8")
    assert config.endswith("\n[features]\nhooks = true # added by loremap connect\n")
    clone = moved(repo, tmp_path)
    no_path_of(clone, repo)
    listed = json.loads(_run(codex, ["mcp", "list", "--json"], isolated_home, clone, True))
    names = {server["name"] for server in listed}
    assert {"loremap", "docs"} <= names
    ours = next(server for server in listed if server["name"] == "loremap")
    assert ours["transport"]["command"] == LOREMAP and ours["transport"]["args"] == ["serve"]
    assert str(repo) not in json.dumps(ours)
    features = _run(codex, ["features", "list"], isolated_home, clone, True)
    assert re.search(r"^hooks\s+\S+\s+true$", features, re.M), features
    monkeypatch.chdir(clone)
    assert cli("connect", "codex", "--undo").code == 0
    listed = json.loads(_run(codex, ["mcp", "list", "--json"], isolated_home, clone, True))
    assert {server["name"] for server in listed} == {"docs"}
    assert (isolated_home / ".codex" / "config.toml").read_text(encoding="utf-8") == CODEX_TOML


@pytest.mark.slow
def test_codex_hooks_the_user_turned_off_stay_off_and_connect_says_so(
        cli, repo: Path, isolated_home: Path):
    codex = agent_cli("codex")
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("[features]\nhooks = false\n", encoding="utf-8")
    done = cli("connect", "codex")
    assert done.code == 0
    assert done.err == ("loremap: warning: ~/.codex/config.toml: [features] hooks = false: Codex "
                        "will not run loremap's hooks until it is true (`codex features enable "
                        "hooks`)\n")
    features = _run(codex, ["features", "list"], isolated_home, repo, True)
    assert re.search(r"^hooks\s+\S+\s+false$", features, re.M), features


@pytest.mark.slow
def test_gemini_starts_the_server_connect_wrote_in_a_moved_project(
        cli, repo: Path, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    gemini = agent_cli("gemini")
    seed(CASES[1], isolated_home, repo)
    assert cli("connect", "gemini").code == 0
    clone = moved(repo, tmp_path)
    no_path_of(clone, repo, BIN)
    trust(isolated_home, clone)
    with patient(clone / ".gemini" / "settings.json"):
        listed = _run(gemini, ["mcp", "list"], isolated_home, clone)
    # `mcp list` starts each server and reports whether it answered.
    assert re.search(r"(^|\s)loremap: loremap serve \(stdio\) - Connected", listed, re.M), listed
    assert re.search(r"(^|\s)github:", listed, re.M), listed
    monkeypatch.chdir(clone)
    assert cli("connect", "gemini", "--undo").code == 0
    listed = _run(gemini, ["mcp", "list"], isolated_home, clone)
    assert not re.search(r"(^|\s)loremap:", listed, re.M), listed
    assert re.search(r"(^|\s)github:", listed, re.M), listed


@pytest.mark.slow
def test_gemini_starts_the_project_s_own_venv_by_its_path_in_the_project(
        repo: Path, isolated_home: Path, tmp_path: Path):
    gemini = agent_cli("gemini")
    venv = project_venv(repo)
    done = connect_from(venv, isolated_home, "connect", "gemini")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    settings = json.loads((repo / ".gemini" / "settings.json").read_text(encoding="utf-8"))
    assert settings["mcpServers"]["loremap"] == {"command": ".venv/bin/loremap",
                                                 "args": ["serve"]}
    assert settings["hooks"]["SessionStart"][0]["hooks"][0]["command"] == \
        ".venv/bin/loremap-hook session-start"
    clone = moved(repo, tmp_path)
    no_path_of(clone, repo, BIN)
    trust(isolated_home, clone)
    with patient(clone / ".gemini" / "settings.json"):
        listed = _run(gemini, ["mcp", "list"], isolated_home, clone, path=without_bin())
    assert "loremap: .venv/bin/loremap serve (stdio) - Connected" in listed, listed


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


def test_project_files_hold_no_path_of_this_machine_and_user_files_do(cli, repo: Path,
                                                                       isolated_home: Path):
    for agent in (*PROJECT_LEVEL, "windsurf"):
        assert cli("connect", agent).code == 0, agent
    no_path_of(repo, repo, BIN, isolated_home)
    cursor = json.loads((repo / ".cursor" / "mcp.json").read_text(encoding="utf-8"))
    assert cursor["mcpServers"]["loremap"] == {
        "command": "loremap", "args": ["serve"],
        "env": {"LOREMAP_PROJECT_DIR": "${workspaceFolder}"}}  # Cursor and VS Code expand it
    gemini = json.loads((repo / ".gemini" / "settings.json").read_text(encoding="utf-8"))
    # Gemini CLI starts the server in the folder whose .gemini/settings.json it read.
    assert gemini["mcpServers"]["loremap"] == {"command": "loremap", "args": ["serve"]}
    windsurf = isolated_home / ".codeium" / "windsurf" / "mcp_config.json"
    assert json.loads(windsurf.read_text(encoding="utf-8"))["mcpServers"]["loremap"] == {
        "command": LOREMAP, "args": ["serve"]}
    rule = (repo / ".cursor" / "rules" / "loremap.mdc").read_text(encoding="utf-8")
    assert rule.startswith("---\n") and "\nalwaysApply: true\n" in rule


def test_a_venv_inside_the_project_is_named_by_its_path_in_the_project(repo: Path,
                                                                       isolated_home: Path):
    venv = project_venv(repo)
    for agent in ("gemini", "vscode", "cursor", "opencode"):
        done = connect_from(venv, isolated_home, "connect", agent)
        assert done.returncode == 0, done.stderr
    no_path_of(repo, repo, BIN, isolated_home)
    vscode = json.loads((repo / ".vscode" / "mcp.json").read_text(encoding="utf-8"))
    assert vscode["servers"]["loremap"] == {
        "type": "stdio", "command": "${workspaceFolder}/.venv/bin/loremap", "args": ["serve"],
        "env": {"LOREMAP_PROJECT_DIR": "${workspaceFolder}"}}
    gemini = json.loads((repo / ".gemini" / "settings.json").read_text(encoding="utf-8"))
    assert gemini["mcpServers"]["loremap"]["command"] == ".venv/bin/loremap"
    assert gemini["hooks"]["BeforeAgent"][0]["hooks"][0]["command"] == \
        ".venv/bin/loremap-hook prompt"
    # OpenCode has no known way to name the project folder: the bare name, and a warning when
    # PATH does not hold it.
    opencode = json.loads((repo / "opencode.json").read_text(encoding="utf-8"))
    assert opencode["mcp"]["loremap"]["command"] == ["loremap", "serve"]
    listed = connect_from(venv, isolated_home, "connect", "--list", "opencode")
    assert (f"  warning: `loremap` is not on PATH, so OpenCode cannot start it: put "
            f"{venv / 'bin'} on PATH") in listed.stdout


def test_a_program_missing_from_path_is_one_warning_naming_the_fix(
        cli, repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    done = cli("connect", "gemini")
    assert done.code == 0 and "Connected loremap to Gemini CLI" in done.out
    assert done.err == (
        "loremap: warning: `loremap` and `loremap-hook` are not on PATH, so Gemini CLI cannot "
        f"start them: put {BIN} on PATH, or install loremap where every program finds it "
        "(`pipx install ./loremap` from a clone)\n")
    report = json.loads(cli("connect", "gemini", "--json").out)
    assert report["changed"] is False and len(report["warnings"]) == 1
    assert cli("connect", "gemini", "--undo").err == ""


def test_an_older_connect_s_absolute_project_dir_goes_on_the_next_connect(cli, repo: Path):
    settings = repo / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"mcpServers": {"loremap": {
        "command": LOREMAP, "args": ["serve"], "env": {"LOREMAP_PROJECT_DIR": str(repo)},
        "timeout": 30000}}}, indent=2), encoding="utf-8")
    listed = json.loads(cli("connect", "--list", "gemini", "--json").out)["agents"]
    assert listed[0]["files"][0]["state"] == "outdated"
    assert cli("connect", "gemini").code == 0
    entry = json.loads(settings.read_text(encoding="utf-8"))["mcpServers"]["loremap"]
    assert entry == {"command": "loremap", "args": ["serve"], "timeout": 30000}
    opencode = repo / "opencode.json"
    opencode.write_text(json.dumps({"mcp": {"loremap": {
        "type": "local", "command": [LOREMAP, "serve"], "enabled": True,
        "environment": {"LOREMAP_PROJECT_DIR": str(repo), "MINE": "1"}}}}), encoding="utf-8")
    assert cli("connect", "opencode").code == 0
    assert json.loads(opencode.read_text(encoding="utf-8"))["mcp"]["loremap"] == {
        "type": "local", "command": ["loremap", "serve"], "enabled": True,
        "environment": {"MINE": "1"}}


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
    assert gemini["hooks"]["SessionStart"][0]["hooks"][0]["command"] == \
        "loremap-hook session-start"
    assert gemini["hooks"]["BeforeAgent"][0]["hooks"][0]["command"] == "loremap-hook prompt"
    assert gemini["hooks"]["AfterTool"] == [{"matcher": "run_shell_command", "hooks": [
        {"type": "command", "command": "loremap-hook post-tool", "name": "loremap"}]}]


OURS = "hooks = true # added by loremap connect\n"


@pytest.mark.parametrize(("before", "begins", "ends"), [
    # No [features]: ours goes at the end, marked, and undo cuts it back out.
    (CODEX_TOML, CODEX_TOML, f"\n[features]\n{OURS}"),
    # The user's [features] table: our key at its end, the rest as it was.
    ('model = "o3"\n\n[features]\nweb_search = true  # mine\n\n[profiles.work]\nx = 1\n',
     f'model = "o3"\n\n[features]\nweb_search = true  # mine\n{OURS}\n[profiles.work]\n',
     'args = ["serve"]\n'),
    # The user said it already, under either name: nothing of ours.
    ("[features]\nhooks = true\n", "[features]\nhooks = true\n", 'args = ["serve"]\n'),
    ("[features]\ncodex_hooks = true\n", "[features]\ncodex_hooks = true\n",
     'args = ["serve"]\n'),
])
def test_codex_gets_its_hooks_feature_flag_and_undo_takes_only_ours(
        cli, repo: Path, isolated_home: Path, before: str, begins: str, ends: str):
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(before, encoding="utf-8")
    done = cli("connect", "codex")
    assert done.code == 0 and done.err == ""
    text = config.read_text(encoding="utf-8")
    assert text.startswith(begins) and text.endswith(ends), text
    assert text.count("added by loremap connect") == (OURS in begins + ends)
    assert cli("connect", "codex").out.startswith("loremap is already connected")
    assert cli("connect", "codex", "--undo").code == 0
    assert config.read_text(encoding="utf-8") == before


def test_codex_hooks_turned_off_by_the_user_are_left_off_with_one_warning(
        cli, repo: Path, isolated_home: Path):
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("[features]\nhooks = false\ncodex_hooks = true\n", encoding="utf-8")
    done = cli("connect", "codex")
    assert done.code == 0
    assert done.err.count("\n") == 1 and "[features] hooks = false" in done.err
    assert "codex features enable hooks" in done.err
    assert config.read_text(encoding="utf-8").startswith(
        "[features]\nhooks = false\ncodex_hooks = true\n")
    listed = cli("connect", "--list", "codex").out
    assert "  warning: ~/.codex/config.toml: [features] hooks = false" in listed


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
    assert data["mcp"]["loremap"] == {"type": "local", "command": ["loremap", "serve"],
                                      "enabled": True}


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
