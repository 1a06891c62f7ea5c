"""`loremap xray trim`: the optional built-in tools it denies (and the ones it never does),
`--days`, and loremap's own server under every name it goes by."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from loremap.xray.audit import is_loremap_name, runs_loremap_serve
from loremap.xray.trim import MIN_SESSIONS, OPTIONAL_TOOLS
from test_xray import U, Writer

CORE = ("Read", "Edit", "Write", "MultiEdit", "Bash", "Grep", "Glob", "LS", "Task", "Agent",
        "TodoWrite", "Skill", "ToolSearch", "ExitPlanMode", "CronCreate", "EnterWorktree")


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    project = tmp_path / "shop"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "github": {"command": "gh-mcp"}, "loremap": {"command": "loremap", "args": ["serve"]}}}),
        encoding="utf-8")
    return project


def sessions(claude: Path, project: Path, n: int, tools: tuple[str, ...] = ("Read",),
             days_ago: float = 0, first: int = 0) -> list[Path]:
    """`n` sessions in `project`, each calling `tools`, last written `days_ago`."""
    written = []
    for i in range(first, first + n):
        path = Writer(session=f"s{i}", cwd=str(project)).user().call(
            U(1, 1, 0, 1, 1), tools=tools).write(claude)
        when = time.time() - days_ago * 86400
        os.utime(path, (when, when))
        written.append(path)
    return written


def plan(cli, project: Path, *args: str) -> dict:
    result = cli("xray", "trim", str(project), "--json", *args)
    assert result.code == 0, result.err
    return dict(json.loads(result.out))


def test_optional_built_in_tools_never_called_are_denied_and_undone_exactly(claude, shop, cli):
    sessions(claude, shop, MIN_SESSIONS - 1, tools=CORE)
    # One sub-agent of the last session fetched a page: WebFetch is used.
    Writer(session="s9", cwd=str(shop)).user().call(U(1, 1, 0, 1, 1), tools=CORE).write(claude)
    Writer(session="s9", cwd=str(shop), agent="a1").user().call(
        U(1, 1, 0, 1, 1), tools=("WebFetch",)).write(claude)
    settings = shop / ".claude" / "settings.local.json"
    found = plan(cli, shop)
    assert found["sessions"] == MIN_SESSIONS
    assert found["deny"] == ["mcp__github", "NotebookEdit", "WebSearch"]
    assert not set(found["deny"]) & set(CORE)  # the core tools are never proposed
    assert found["kept"] == ["loremap"] and found["days"] is None
    shown = cli("xray", "trim", str(shop)).out
    assert f"  would deny WebSearch (built-in tool, never called in {MIN_SESSIONS} sessions)" \
        in shown
    assert cli("xray", "trim", str(shop), "--apply").code == 0
    data = json.loads(settings.read_text(encoding="utf-8"))
    assert data == {"permissions": {"deny": ["mcp__github", "NotebookEdit", "WebSearch"]}}
    assert plan(cli, shop)["already_denied"] == ["mcp__github", "NotebookEdit", "WebSearch"]
    assert cli("xray", "trim", str(shop), "--undo").code == 0
    assert not settings.exists()


def test_no_built_in_tool_is_denied_on_few_sessions(claude, shop, cli):
    sessions(claude, shop, MIN_SESSIONS - 1)
    found = plan(cli, shop)
    assert found["deny"] == ["mcp__github"]
    assert f"  built-in tools: none is denied on fewer than {MIN_SESSIONS} sessions" in \
        found["lines"]


def test_a_built_in_tool_a_rule_of_the_user_allows_is_kept(claude, shop, cli, isolated_home):
    sessions(claude, shop, MIN_SESSIONS)
    (shop / ".claude").mkdir()
    (shop / ".claude" / "settings.json").write_text(json.dumps(
        {"permissions": {"allow": ["WebFetch(domain:docs.python.org)"]}}), encoding="utf-8")
    (isolated_home / ".claude").mkdir()
    (isolated_home / ".claude" / "settings.json").write_text(json.dumps(
        {"permissions": {"allow": ["NotebookEdit"]}}), encoding="utf-8")
    found = plan(cli, shop)
    assert found["deny"] == ["mcp__github", "WebSearch"]
    assert found["tools_kept"] == {
        "NotebookEdit": f"allowed in {isolated_home / '.claude' / 'settings.json'}",
        "WebFetch": f"allowed in {shop / '.claude' / 'settings.json'}"}
    assert set(OPTIONAL_TOOLS) == {"NotebookEdit", "WebFetch", "WebSearch"}


def test_days_counts_only_the_recent_transcripts_as_evidence(claude, shop, cli):
    sessions(claude, shop, MIN_SESSIONS)  # recent: Read only
    sessions(claude, shop, 1, tools=("WebSearch", "mcp__github__issues"), days_ago=40,
             first=MIN_SESSIONS)
    everything = plan(cli, shop)
    assert everything["sessions"] == MIN_SESSIONS + 1
    assert everything["deny"] == ["NotebookEdit", "WebFetch"]  # github and WebSearch were used
    recent = plan(cli, shop, "--days", "30")
    assert recent["days"] == 30 and recent["sessions"] == MIN_SESSIONS
    assert recent["deny"] == ["mcp__github", "NotebookEdit", "WebFetch", "WebSearch"]
    assert recent["lines"][0].startswith(f"{MIN_SESSIONS} sessions of the last 30 days of ")


def test_days_with_no_transcript_in_the_window_denies_nothing(claude, shop, cli):
    sessions(claude, shop, MIN_SESSIONS, days_ago=40)
    result = cli("xray", "trim", str(shop), "--days", "7", "--apply")
    assert result.code == 1 and "in the last 7 days" in result.err
    assert not (shop / ".claude").exists()


@pytest.mark.parametrize(("args", "message"), [
    (("trim", "{p}", "--days", "0"), "argument --days: must be 1 or more"),
    (("trim", "{p}", "--days", "-3", "--apply"), "argument --days: must be 1 or more"),
    (("trim", "{p}", "--days", "week"), "argument --days: 'week' is not a whole number"),
    (("--days", "7", "trim", "{p}", "--apply"), "trim takes its own --days, after the project"),
    (("trim", "{p}", "--undo", "--days", "3"), "--undo removes every rule --apply added"),
])
def test_bad_days_are_one_line_and_change_nothing(claude, shop, cli, args, message):
    sessions(claude, shop, MIN_SESSIONS)
    result = cli("xray", *(a.format(p=shop) for a in args))
    assert result.code in (1, 2) and result.err.count("\n") == 1, result.err
    assert message in result.err
    assert sorted(p.name for p in shop.iterdir()) == [".mcp.json"]


def test_loremap_s_own_server_is_kept_under_every_name_and_command(claude, tmp_path, cli,
                                                                  isolated_home):
    project = tmp_path / "app"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "plugin:loremap:loremap": {"command": "loremap", "args": ["serve"]},
        "loremap-dev": {"command": "/src/loremap/.venv/bin/python", "args": ["x.py"]},
        "memory": {"command": "uvx", "args": ["--from", "./loremap", "loremap", "serve"]},
        "py": {"command": "python3", "args": ["-m", "loremap", "serve"]},
        "lorem": {"command": "lorem-ipsum", "args": ["serve"]}}}), encoding="utf-8")
    (isolated_home / ".claude.json").write_text(json.dumps({"projects": {str(project): {
        "mcpServers": {"notes": {"command": "/opt/loremap/bin/loremap.exe",
                                 "args": ["serve", "--x"]}}}}}), encoding="utf-8")
    sessions(claude, project, 1, tools=("mcp__plugin_loremap_loremap__recall",))
    found = plan(cli, project)
    assert found["deny"] == ["mcp__lorem"]
    assert found["kept"] == ["loremap-dev", "memory", "notes", "plugin:loremap:loremap", "py"]


@pytest.mark.parametrize(("name", "ours"), [
    ("loremap", True), ("plugin:loremap:loremap", True), ("plugin_loremap_loremap", True),
    ("Loremap-Dev", True), ("loremapper", False), ("lorem", False), ("github", False),
])
def test_loremap_s_server_names(name, ours):
    assert is_loremap_name(name) is ours


@pytest.mark.parametrize(("entry", "ours"), [
    ({"command": "loremap", "args": ["serve"]}, True),
    ({"command": ".venv/bin/loremap", "args": ["serve"]}, True),
    ({"command": "${workspaceFolder}/.venv/bin/loremap", "args": ["serve"]}, True),
    ({"command": "uvx", "args": ["loremap==0.1.0", "serve"]}, True),
    ({"command": "pipx", "args": ["run", "loremap[postgres]", "serve"]}, True),
    ({"command": "loremap", "args": ["index"]}, False),
    ({"command": "serve", "args": ["loremap"]}, False),
    ({"command": "npx", "args": ["-y", "server-memory"]}, False),
    ("loremap serve", False),
])
def test_what_runs_loremap_serve(entry, ours):
    assert runs_loremap_serve(entry) is ours
