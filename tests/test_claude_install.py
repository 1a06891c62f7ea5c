"""`loremap hooks install|uninstall|status claude` and `loremap compaction`, on a machine that
already has Claude Code settings of its own (comments, other hooks, other servers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loremap import jsonc
from loremap.agents.claude.install import HOOKS
from loremap.cli import main
from npm_tools import npm_tool
from test_connect import project_venv

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).absolute().parent
# Strict JSON (Claude Code ignores a settings file with comments), in the user's own layout.
USER_SETTINGS = """{
    "model":   "sonnet",
    "hooks": {
        "PostToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/audit.sh"}]}
        ]
    },
    "permissions": {"allow": ["Bash(git status)"]}
}
"""
CLAUDE_JSON = ('{\n  "numStartups": 4,\n  "mcpServers": {\n    "github": {"command": "gh-mcp"}\n'
               '  }\n}\n')


@pytest.fixture
def claude_home(isolated_home: Path) -> Path:
    (isolated_home / ".claude").mkdir()
    (isolated_home / ".claude" / "settings.json").write_text(USER_SETTINGS, encoding="utf-8")
    (isolated_home / ".claude.json").write_text(CLAUDE_JSON, encoding="utf-8")
    return isolated_home


def test_install_adds_the_hooks_and_the_server_and_keeps_everything_else(claude_home, repo, cli):
    result = cli("hooks", "install", "claude")
    assert result.code == 0, result.err
    settings = (claude_home / ".claude" / "settings.json").read_text(encoding="utf-8")
    assert settings.startswith('{\n    "model":   "sonnet",\n')  # the user's layout
    assert '{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/audit.sh"}]}' \
        in settings
    data = json.loads(settings)  # still strict JSON: Claude Code reads it
    assert data["model"] == "sonnet" and data["permissions"] == {"allow": ["Bash(git status)"]}
    post = data["hooks"]["PostToolUse"]
    assert post[0]["hooks"][0]["command"] == "~/bin/audit.sh"  # the user's hook, first
    for spec in HOOKS:
        (group,) = [g for g in data["hooks"][spec.event] if "loremap-hook" in
                    g["hooks"][0]["command"]]
        command = group["hooks"][0]["command"]
        assert command.endswith(f"loremap-hook {spec.argument}")
        assert Path(command.split()[0]).is_absolute() and Path(command.split()[0]).exists()
        assert group.get("matcher") == spec.matcher
    servers = json.loads((claude_home / ".claude.json").read_text(encoding="utf-8"))
    assert servers["numStartups"] == 4 and servers["mcpServers"]["github"] == {
        "command": "gh-mcp"}
    assert servers["mcpServers"]["loremap"]["args"] == ["serve"]
    assert (claude_home / ".claude" / "settings.json.loremap-backup").read_text(
        encoding="utf-8") == USER_SETTINGS
    assert "backup" in result.out


def test_install_twice_changes_nothing_and_uninstall_restores_the_bytes(claude_home, repo, cli):
    assert cli("hooks", "install", "claude").code == 0
    again = cli("hooks", "install", "claude")
    assert again.code == 0 and "already installed" in again.out
    status = json.loads(cli("hooks", "status", "claude", "--json").out)
    assert status["server"] is True and set(status["hooks"]) == {s.event for s in HOOKS}
    assert cli("hooks", "uninstall", "claude").code == 0
    assert (claude_home / ".claude" / "settings.json").read_text(encoding="utf-8") == \
        USER_SETTINGS
    assert (claude_home / ".claude.json").read_text(encoding="utf-8") == CLAUDE_JSON
    assert "not installed" in cli("hooks", "uninstall", "claude").out


def test_a_moved_loremap_replaces_its_old_hooks_instead_of_adding_more(claude_home, repo, cli):
    path = claude_home / ".claude" / "settings.json"
    stale = jsonc.append(USER_SETTINGS, ["hooks", "Stop"], {"hooks": [
        {"type": "command", "command": "/old/venv/bin/loremap-hook stop"}]})
    path.write_text(stale, encoding="utf-8")
    assert cli("hooks", "install", "claude").code == 0
    text = path.read_text(encoding="utf-8")
    assert "/old/venv" not in text and text.count("loremap-hook stop") == 1


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """PATH finds this installation, as it does for a user who installed loremap."""
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', os.defpath)}")


def test_project_scope_writes_the_repository_files_and_removes_what_it_created(repo, cli,
                                                                               on_path):
    assert cli("hooks", "install", "claude", "--project").code == 0
    mcp = json.loads((repo / ".mcp.json").read_text(encoding="utf-8"))
    # Committed by the team: no path of this machine; Claude Code starts the server in the
    # project folder, where it finds the project.
    assert mcp["mcpServers"]["loremap"] == {"type": "stdio", "command": "loremap",
                                            "args": ["serve"]}
    settings = (repo / ".claude" / "settings.json").read_text(encoding="utf-8")
    assert '"command": "loremap-hook prompt"' in settings
    assert str(BIN) not in settings and str(repo) not in settings
    assert cli("hooks", "uninstall", "claude", "--project").code == 0
    assert not (repo / ".mcp.json").exists()
    assert not (repo / ".claude" / "settings.json").exists()
    assert not list(repo.glob("**/*.loremap-backup"))


def test_project_scope_refuses_in_one_line_when_loremap_is_not_on_path(
        repo, cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    done = cli("hooks", "install", "claude", "--project")
    assert done.code == 1 and done.err.count("\n") == 1
    assert done.err == (
        "loremap: error: `loremap` and `loremap-hook` are not on PATH, so Claude Code cannot "
        f"start them: put {BIN} on PATH, or install loremap where every program finds it "
        "(`pipx install ./loremap` from a clone); or use --user. Nothing was changed\n")
    assert not (repo / ".mcp.json").exists() and not (repo / ".claude").exists()


def test_project_scope_names_a_venv_of_the_project_by_its_path_there(repo, isolated_home):
    venv = project_venv(repo)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != str(BIN))
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "loremap", "hooks", "install",
                           "claude", "--project"], cwd=repo, capture_output=True, text=True,
                          env={**os.environ, "PATH": path, "LOREMAP_DAEMON": "off"}, timeout=120)
    assert done.returncode == 0, done.stderr
    mcp = json.loads((repo / ".mcp.json").read_text(encoding="utf-8"))
    assert mcp["mcpServers"]["loremap"]["command"] == ".venv/bin/loremap"
    settings = json.loads((repo / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert settings["hooks"]["Stop"][0]["hooks"][0]["command"] == \
        '"$CLAUDE_PROJECT_DIR"/.venv/bin/loremap-hook stop'


def test_project_scope_drops_an_absolute_project_dir_an_older_install_wrote(repo, cli,
                                                                           on_path):
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"loremap": {
        "type": "stdio", "command": str(BIN / "loremap"), "args": ["serve"],
        "env": {"LOREMAP_PROJECT_DIR": str(repo)}}}}, indent=2), encoding="utf-8")
    assert cli("hooks", "install", "claude", "--project").code == 0
    assert json.loads((repo / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"][
        "loremap"] == {"type": "stdio", "command": "loremap", "args": ["serve"]}


def test_dry_run_prints_the_diff_and_writes_nothing(claude_home, repo, cli):
    result = cli("hooks", "install", "claude", "--dry-run")
    assert result.code == 0
    assert "+++" in result.out and "loremap-hook session-start" in result.out
    assert (claude_home / ".claude" / "settings.json").read_text(encoding="utf-8") == \
        USER_SETTINGS
    assert not (claude_home / ".claude" / "settings.json.loremap-backup").exists()


@pytest.mark.parametrize("settings,claude_json,message", [
    ('{"hooks": {"Stop": [}', CLAUDE_JSON, "settings.json"),
    ('{\n  // mine\n  "model": "sonnet"\n}\n', CLAUDE_JSON, "Claude Code ignores such a file"),
    ('{"model": "sonnet",}', CLAUDE_JSON, "comments or trailing commas"),
    (USER_SETTINGS, '{"mcpServers": {}, /* x */}', ".claude.json has comments"),
    ('{"hooks": []}', CLAUDE_JSON, "`hooks` is not an object"),
    ("[1, 2]", CLAUDE_JSON, "expected a JSON object"),
    (USER_SETTINGS, '{"mcpServers": {"loremap": {"command": "npx", "args": ["other"]}}}',
     "not `loremap serve`"),
    ("\x00\x01binary", CLAUDE_JSON, "settings.json"),
])
def test_bad_settings_are_refused_in_one_line_and_nothing_changes(claude_home, repo, cli,
                                                                   settings, claude_json, message):
    (claude_home / ".claude" / "settings.json").write_text(settings, encoding="utf-8")
    (claude_home / ".claude.json").write_text(claude_json, encoding="utf-8")
    result = cli("hooks", "install", "claude")
    assert result.code == 1
    assert len(result.err.strip().splitlines()) == 1 and message in result.err
    assert (claude_home / ".claude" / "settings.json").read_text(encoding="utf-8") == settings
    assert (claude_home / ".claude.json").read_text(encoding="utf-8") == claude_json
    assert not list(claude_home.glob("**/*.loremap-backup"))


def test_the_plugin_hooks_are_the_installer_s_hooks():
    data = json.loads((ROOT / "plugin" / "hooks" / "hooks.json").read_text(encoding="utf-8"))
    plugin = sorted((event, g.get("matcher"), tuple(h["args"]), h["timeout"])
                    for event, groups in data["hooks"].items() for g in groups
                    for h in g["hooks"])
    ours = sorted((s.event, s.matcher, (s.argument,), s.timeout) for s in HOOKS)
    assert plugin == ours


# --- compaction -------------------------------------------------------------------------------


def test_compaction_set_show_and_undo(claude_home, repo, cli):
    path = claude_home / ".claude" / "settings.json"
    assert "about 167,000" in cli("compaction", "show").out  # the default 200k window
    result = cli("compaction", "set", "150k")
    assert result.code == 0, result.err
    text = path.read_text(encoding="utf-8")
    assert text.startswith('{\n    "model":   "sonnet",')
    assert json.loads(text)["autoCompactWindow"] == 150000
    shown = cli("compaction", "show").out
    assert "about 117,000" in shown and "~/.claude/settings.json" in shown
    assert "--undo" in shown
    assert cli("compaction", "set", "120000").code == 0  # a second set keeps the first value
    assert cli("compaction", "--undo").code == 0
    assert path.read_text(encoding="utf-8") == USER_SETTINGS
    undo = cli("compaction", "--undo")
    assert undo.code == 1 and "nothing to undo" in undo.err


def test_compaction_undo_leaves_a_value_the_user_changed_since(claude_home, repo, cli):
    path = claude_home / ".claude" / "settings.json"
    assert cli("compaction", "set", "150000").code == 0
    path.write_text(path.read_text(encoding="utf-8").replace("150000", "300000"),
                    encoding="utf-8")
    result = cli("compaction", "--undo")
    assert result.code == 1 and "changed since" in result.err
    assert "300000" in path.read_text(encoding="utf-8")


def test_compaction_project_scope_uses_the_local_settings(repo, cli):
    assert cli("compaction", "set", "auto", "--project").code == 0
    local = repo / ".claude" / "settings.local.json"
    assert json.loads(local.read_text(encoding="utf-8")) == {"autoCompactWindow": "auto"}
    assert cli("compaction", "set", "1M", "--project").code == 0
    assert "about 967,000" in cli("compaction", "show").out


@pytest.mark.parametrize("value", ["50k", "2M", "lots", "99999"])
def test_compaction_refuses_a_window_claude_code_would_not_take(claude_home, repo, cli, value):
    result = cli("compaction", "set", value)
    assert result.code == 1 and len(result.err.strip().splitlines()) == 1
    assert (claude_home / ".claude" / "settings.json").read_text(encoding="utf-8") == \
        USER_SETTINGS


def test_compaction_dry_run_writes_nothing(claude_home, repo, cli):
    result = cli("compaction", "set", "150000", "--dry-run")
    assert '+    "autoCompactWindow": 150000' in result.out
    assert (claude_home / ".claude" / "settings.json").read_text(encoding="utf-8") == \
        USER_SETTINGS
    assert "nothing to undo" in cli("compaction", "--undo").err


# --- backups -----------------------------------------------------------------------------


def test_rounds_of_install_compaction_and_connect_leave_one_backup_per_file(claude_home, repo):
    """Each changed file keeps one backup, whatever the number of rounds: the copy from before
    loremap's latest change to it (the commands run through `loremap.cli.main`)."""
    gemini = repo / ".gemini" / "settings.json"
    gemini.parent.mkdir()
    gemini.write_text('{\n  // mine\n  "theme": "dark"\n}\n', encoding="utf-8")
    (repo / "GEMINI.md").write_text("# Notes\n", encoding="utf-8")
    originals = {path: path.read_bytes() for path in (
        claude_home / ".claude" / "settings.json", claude_home / ".claude.json", gemini,
        repo / "GEMINI.md")}
    rounds = [["hooks", "install", "claude"], ["hooks", "uninstall", "claude"],
              ["compaction", "set", "150000"], ["compaction", "--undo"],
              ["connect", "gemini"], ["connect", "gemini", "--undo"]]
    for _ in range(3):
        for args in rounds:
            assert main(args) == 0, args
    for path, data in originals.items():
        assert path.read_bytes() == data  # every round was undone
        backups = sorted(p.name for p in path.parent.glob(path.name + ".loremap-backup*"))
        assert backups == [path.name + ".loremap-backup"], path
    settings = claude_home / ".claude" / "settings.json"
    assert main(["compaction", "set", "150000"]) == 0
    assert main(["compaction", "set", "120000"]) == 0
    backup = settings.with_name("settings.json.loremap-backup").read_text(encoding="utf-8")
    assert json.loads(backup)["autoCompactWindow"] == 150000  # the copy before the last change
    assert len(list(settings.parent.glob("settings.json.loremap-backup*"))) == 1


# --- the real Claude Code reads what install wrote ---------------------------------------


@pytest.mark.slow
def test_claude_code_runs_the_installed_hooks_and_lists_the_server(claude_home, project, cli):
    claude = npm_tool("claude")
    assert cli("hooks", "install", "claude").code == 0
    # A loopback base URL (nothing listens) also keeps it from fetching remote settings.
    env = {**os.environ, "HOME": str(claude_home), "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "ANTHROPIC_API_KEY": "sk-placeholder",
           "DISABLE_AUTOUPDATER": "1"}
    debug = claude_home / "debug.log"
    subprocess.run([str(claude), "--init-only", "--debug-file", str(debug)], cwd=project, env=env,
                   stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    log = debug.read_text(encoding="utf-8")
    assert "loremap-hook session-start" in log
    assert "project-memory" in log  # our JSON output, parsed by Claude Code
    listed = subprocess.run([str(claude), "mcp", "list"], cwd=project, env=env,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert "loremap" in listed.stdout, listed.stdout + listed.stderr
