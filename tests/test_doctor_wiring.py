"""`loremap doctor` checks the agents wired to loremap: what `loremap hooks install claude`,
the plugin and `loremap connect` wrote, whether each program runs, and whether it is this
installation's. Real files in a tmp home, written by the real installers."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

BIN = Path(sys.executable).absolute().parent
LOREMAP, HOOK = str(BIN / "loremap"), str(BIN / "loremap-hook")


@pytest.fixture(autouse=True)
def _agent_homes_follow_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agents' files under the test's home; PATH finds this installation first (a project
    file names programs by their bare names)."""
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', os.defpath)}")


def doctor(cli: Any, *args: str) -> tuple[int, list[dict[str, Any]]]:
    """doctor's exit code and its wiring findings (the `wiring` and `stale-binary` checks)."""
    result = cli("doctor", "--json", *args)
    report = json.loads(result.out)
    return result.code, [f for f in report["findings"]
                         if f["check"] in ("wiring", "stale-binary")]


def problems(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in findings if f["level"] != "ok"]


def script(path: Path, interpreter: str) -> Path:
    """An executable console script like pip's, run by `interpreter`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{interpreter}\nimport sys\nsys.exit(0)\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def replace(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, path
    path.write_text(text.replace(old, new), encoding="utf-8")


def set_command(path: Path, keys: tuple[str, ...], command: str) -> None:
    """Point the MCP server entry at `keys` of a JSON file at `command`."""
    data = json.loads(path.read_text(encoding="utf-8"))
    node = data
    for key in keys:
        node = node[key]
    node["command"] = command
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def test_nothing_wired_is_one_ok_line_and_no_warning(project, cli):
    code, found = doctor(cli)
    assert code == 0
    assert [(f["level"], f["check"]) for f in found] == [("ok", "wiring")]
    assert "no agent runs loremap" in found[0]["message"]


def test_what_the_installers_wrote_is_reported_as_sound(project, cli, isolated_home):
    for args in (["hooks", "install", "claude"], ["connect", "codex"], ["connect", "gemini"],
                 ["connect", "cursor"], ["connect", "goose"], ["connect", "continue"]):
        assert cli(*args).code == 0, args
    code, found = doctor(cli)
    assert code == 0
    assert problems(found) == []
    messages = [f["message"] for f in found]
    assert messages == [
        "Claude Code runs loremap: hooks in ~/.claude/settings.json (7 events); MCP server in "
        "~/.claude.json",
        "Codex CLI runs loremap: MCP server in ~/.codex/config.toml; hooks in "
        "~/.codex/hooks.json (2 events)",
        "Gemini CLI runs loremap: MCP server in .gemini/settings.json; hooks in "
        ".gemini/settings.json (3 events)",
        "Cursor runs loremap: MCP server in .cursor/mcp.json",
        "Continue runs loremap: MCP server in .continue/mcpServers/loremap.yaml",
        "Goose runs loremap: MCP server in ~/.config/goose/config.yaml"]
    text = cli("doctor").out
    assert "ok    wiring: Codex CLI runs loremap: MCP server in ~/.codex/config.toml" in text


def test_the_project_scope_of_hooks_install_is_read_too(project, cli):
    assert cli("hooks", "install", "claude", "--project").code == 0
    code, found = doctor(cli)
    assert code == 0 and problems(found) == []
    assert found[0]["message"] == ("Claude Code runs loremap: hooks in .claude/settings.json "
                                   "(7 events); MCP server in .mcp.json")


def test_a_server_binary_that_no_longer_exists_is_an_error_fix_rewires_it(
        project, cli, isolated_home, tmp_path):
    assert cli("connect", "codex").code == 0
    config = isolated_home / ".codex" / "config.toml"
    gone = str(tmp_path / "old-venv" / "bin" / "loremap")
    replace(config, LOREMAP, gone)
    code, found = doctor(cli)
    assert code == 1
    [stale] = problems(found)
    assert stale["level"] == "error" and stale["check"] == "stale-binary"
    assert stale["message"] == (f"stale server binary: the MCP server of Codex CLI in "
                                f"~/.codex/config.toml runs {gone}, which no longer exists; "
                                "re-run `loremap connect codex`")
    assert stale["fixed"] is False

    code, found = doctor(cli, "--fix")
    assert code == 0
    [fixed] = problems(found)
    assert fixed["fixed"] is True and "--fix: wrote ~/.codex/config.toml" in fixed["message"]
    assert f'command = "{LOREMAP}"' in config.read_text(encoding="utf-8")
    assert gone in config.with_name("config.toml.loremap-backup").read_text(encoding="utf-8")
    assert doctor(cli) == (0, [{"level": "ok", "check": "wiring", "fixed": False, "message":
                                "Codex CLI runs loremap: MCP server in ~/.codex/config.toml; "
                                "hooks in ~/.codex/hooks.json (2 events)"}])


def test_a_server_binary_of_another_venv_is_a_warning_fix_leaves(project, cli, tmp_path):
    assert cli("connect", "gemini").code == 0
    other = script(tmp_path / "other-venv" / "bin" / "loremap", sys.executable)
    settings = project / ".gemini" / "settings.json"
    set_command(settings, ("mcpServers", "loremap"), str(other))
    before = settings.read_bytes()
    code, found = doctor(cli, "--fix")
    assert code == 0  # it runs: a warning
    [stale] = problems(found)
    assert (stale["level"], stale["check"], stale["fixed"]) == ("warning", "stale-binary", False)
    assert stale["message"] == (
        f"stale server binary: the MCP server of Gemini CLI in .gemini/settings.json runs "
        f"{other}, another installation than this one ({LOREMAP}); re-run `loremap connect "
        "gemini` with this one to use it (`doctor --fix` leaves it: both run)")
    assert settings.read_bytes() == before
    assert found[0]["message"] == ("Gemini CLI runs loremap: hooks in .gemini/settings.json "
                                   "(3 events)")


def test_a_hook_program_whose_interpreter_is_gone_is_stale_and_fix_reinstalls_it(
        project, cli, isolated_home, tmp_path):
    assert cli("hooks", "install", "claude").code == 0
    old = script(tmp_path / "moved" / "bin" / "loremap-hook", str(tmp_path / "gone" / "python"))
    settings = isolated_home / ".claude" / "settings.json"
    replace(settings, HOOK, str(old))
    code, found = doctor(cli)
    assert code == 1
    [stale] = problems(found)
    assert stale["check"] == "stale-binary" and stale["level"] == "error"
    assert (f"stale hook program: the hooks of Claude Code in ~/.claude/settings.json run {old}, "
            f"whose interpreter {tmp_path / 'gone' / 'python'} no longer exists; re-run "
            "`loremap hooks install claude`") == stale["message"]
    code, found = doctor(cli, "--fix")
    assert code == 0 and problems(found)[0]["fixed"] is True
    assert str(old) not in settings.read_text(encoding="utf-8")
    assert HOOK in settings.read_text(encoding="utf-8")
    assert problems(doctor(cli)[1]) == []


def test_the_plugin_runs_names_that_must_be_on_path(project, cli, isolated_home, monkeypatch,
                                                    tmp_path):
    settings = isolated_home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"enabledPlugins": {"loremap@loremap": True}}),
                        encoding="utf-8")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, found = doctor(cli, "--fix")
    assert code == 1
    assert [(f["level"], f["fixed"]) for f in problems(found)] == [("error", False)] * 2
    assert problems(found)[0]["message"] == (
        "the hooks of Claude Code in the plugin loremap@loremap (enabled in "
        "~/.claude/settings.json) run `loremap-hook`, which is not on PATH (the plugin runs its "
        "programs by name): install loremap where Claude Code finds it (`pipx install "
        f"./loremap`), or put {BIN} on PATH")
    monkeypatch.setenv("PATH", str(BIN))
    code, found = doctor(cli)
    assert code == 0 and problems(found) == []
    assert found[0]["message"].startswith("Claude Code runs loremap: hooks in the plugin")


def test_the_plugin_beside_installed_hooks_runs_every_hook_twice(project, cli, isolated_home,
                                                                 monkeypatch):
    monkeypatch.setenv("PATH", str(BIN))
    assert cli("hooks", "install", "claude").code == 0
    settings = isolated_home / ".claude" / "settings.json"
    data = json.loads(settings.read_text(encoding="utf-8"))
    settings.write_text(json.dumps({**data, "enabledPlugins": {"loremap@loremap": True}}),
                        encoding="utf-8")
    code, found = doctor(cli)
    assert code == 0
    [twice] = problems(found)
    assert twice["level"] == "warning" and "so each runs twice" in twice["message"]


def test_hooks_wired_in_part_and_a_settings_file_claude_ignores_are_warnings(
        project, cli, isolated_home):
    assert cli("hooks", "install", "claude", "--project").code == 0
    settings = project / ".claude" / "settings.json"
    data = json.loads(settings.read_text(encoding="utf-8"))
    del data["hooks"]["Stop"]
    settings.write_text(json.dumps(data), encoding="utf-8")
    local = project / ".claude" / "settings.local.json"
    local.write_text('{\n  // mine\n  "hooks": {"Stop": [{"hooks": [{"type": "command", '
                     f'"command": "{HOOK} stop"}}]}}]}}\n}}\n', encoding="utf-8")
    code, found = doctor(cli)
    assert code == 0
    messages = [f["message"] for f in problems(found)]
    assert messages[0].startswith("Claude Code: cannot read .claude/settings.local.json (")
    assert "the agent may not read it either" in messages[0]
    assert messages[1] == ("Claude Code: loremap's hooks for Stop are missing (wired in part); "
                           "re-run `loremap hooks install claude --project`")


def test_a_connect_without_its_hooks_is_wired_in_part(project, cli, isolated_home):
    assert cli("connect", "codex").code == 0
    (isolated_home / ".codex" / "hooks.json").unlink()
    code, found = doctor(cli)
    assert code == 0
    assert [f["message"] for f in problems(found)] == [
        "Codex CLI: loremap's hooks for SessionStart, UserPromptSubmit are missing (wired in "
        "part); re-run `loremap connect codex`"]


def test_a_server_added_by_hand_is_checked_but_not_fixed(project, cli, isolated_home, tmp_path):
    gone = str(tmp_path / "nowhere" / "loremap")
    state = {"projects": {str(project): {"mcpServers": {
        "memory": {"type": "stdio", "command": gone, "args": ["serve"]}}}}}
    (isolated_home / ".claude.json").write_text(json.dumps(state), encoding="utf-8")
    code, found = doctor(cli, "--fix")
    assert code == 1
    [stale] = problems(found)
    assert stale["fixed"] is False
    assert f"~/.claude.json (projects[{project}]) runs {gone}" in stale["message"]
    assert f"`claude mcp add -s local memory -- {LOREMAP} serve`" in stale["message"]


def test_the_json_findings_keep_the_doctor_shape(project, cli, tmp_path):
    assert cli("connect", "cursor").code == 0
    set_command(project / ".cursor" / "mcp.json", ("mcpServers", "loremap"),
                str(tmp_path / "gone"))
    result = cli("doctor", "--json")
    report = json.loads(result.out)
    assert result.code == 1 and report["ok"] is False
    for finding in report["findings"]:
        assert set(finding) == {"level", "check", "message", "fixed"}
        assert finding["level"] in ("ok", "warning", "error")
        assert isinstance(finding["fixed"], bool)
    assert [f["check"] for f in report["findings"]].count("stale-binary") == 1


def test_a_project_file_naming_a_program_missing_from_path_is_an_error(project, cli,
                                                                       monkeypatch, tmp_path):
    assert cli("connect", "gemini").code == 0
    settings = project / ".gemini" / "settings.json"
    set_command(settings, ("mcpServers", "loremap"), "loremap")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, found = doctor(cli, "--fix")
    assert code == 1
    server = next(f for f in problems(found) if "MCP server" in f["message"])
    assert server == {"level": "error", "check": "wiring", "fixed": False, "message":
                      "the MCP server of Gemini CLI in .gemini/settings.json runs `loremap`, "
                      "which is not on PATH: install loremap where Gemini CLI finds it (`pipx "
                      f"install ./loremap`), or put {BIN} on PATH"}


def test_the_workspace_folder_variable_is_the_project(project, cli, isolated_home):
    assert cli("connect", "cursor").code == 0
    mcp = project / ".cursor" / "mcp.json"
    set_command(mcp, ("mcpServers", "loremap"), "${workspaceFolder}/.venv/bin/loremap")
    code, found = doctor(cli)
    assert code == 1
    [stale] = problems(found)
    assert stale["message"] == (
        f"stale server binary: the MCP server of Cursor in .cursor/mcp.json runs "
        f"{project}/.venv/bin/loremap, which no longer exists; re-run `loremap connect cursor`")
    code, found = doctor(cli, "--fix")
    assert code == 0 and problems(found)[0]["fixed"] is True
    assert problems(doctor(cli)[1]) == []
    script(project / ".venv" / "bin" / "loremap", sys.executable)
    set_command(mcp, ("mcpServers", "loremap"), "${workspaceFolder}/.venv/bin/loremap")
    [other] = problems(doctor(cli)[1])
    assert other["level"] == "warning" and "another installation" in other["message"]
