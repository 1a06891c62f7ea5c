"""The Claude Code plugin in `plugin/` and its marketplace in `.claude-plugin/`, checked by the
real `claude plugin validate` (Claude Code 2.1.328 from npm) and against our own hook program.

`--strict` passes with no manifest warning; the plugin even declares `network.hosts: []` (it
reaches no host) so the validator's "Hosts not declared" notice goes away. What the validator
still prints is "Hosts not read for: hooks, mcpServers, commands": an inventory line saying it
cannot see which hosts a process reaches. It is not a warning and no field silences it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

import loremap
from loremap.hook import EVENTS
from npm_tools import npm_tool

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "plugin"
# Claude Code's event names for the argument `loremap-hook` takes.
EVENT_ARGS = {"SessionStart": "session-start", "UserPromptSubmit": "prompt",
              "PreToolUse": "pre-tool", "PostToolUse": "post-tool",
              "PostToolUseFailure": "tool-failure", "Stop": "stop",
              "PreCompact": "pre-compact", "SessionEnd": "session-end"}


def claude(*args: str) -> subprocess.CompletedProcess[str]:
    """`claude ARGS...` with the test's temporary HOME, offline."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
    env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    return subprocess.run([str(npm_tool("claude")), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)


def validate(target: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return claude("plugin", "validate", str(target), *flags)


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("target", [PLUGIN, ROOT], ids=["plugin", "marketplace"])
@pytest.mark.parametrize("strict", [False, True], ids=["plain", "strict"])
def test_claude_code_validates_the_plugin_and_the_marketplace(target, strict):
    done = validate(target, *(["--strict"] if strict else []))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation passed" in done.stdout


@pytest.mark.parametrize("target", [PLUGIN, ROOT], ids=["plugin", "marketplace"])
def test_the_json_report_has_no_manifest_error_or_warning(target):
    done = validate(target, "--json", "--strict")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["success"] is True
    assert report["manifest"]["errors"] == []
    assert report["manifest"]["warnings"] == []
    assert report["advice"] == []


def test_the_plugin_passes_the_plugin_directory_checks():
    done = validate(PLUGIN, "--json", "--strict", "--profile", "directory")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["directory"]["findings"] == []


def test_the_validator_sees_every_part_of_the_plugin():
    provides = json.loads(validate(PLUGIN, "--json").stdout)["provides"]
    assert {(h["event"], h["command"], tuple(h["args"])) for h in provides["hooks"]} == {
        ("SessionStart", "loremap-hook", ("session-start",)),
        ("UserPromptSubmit", "loremap-hook", ("prompt",)),
        ("PreToolUse", "loremap-hook", ("pre-tool",)),
        ("PostToolUse", "loremap-hook", ("post-tool",)),
        ("PostToolUseFailure", "loremap-hook", ("tool-failure",)),
        ("Stop", "loremap-hook", ("stop",)),
        ("PreCompact", "loremap-hook", ("pre-compact",))}
    assert [(s["name"], s["type"], s["target"], s["args"]) for s in provides["mcpServers"]] == [
        ("loremap", "stdio", "loremap", ["serve"])]
    assert sorted(provides["commands"]) == ["loremap:handoff", "loremap:recall", "loremap:slim",
                                            "loremap:xray"]
    assert provides["agents"] == ["loremap:researcher"]


def test_the_hooks_name_only_events_loremap_hook_knows():
    hooks = load(PLUGIN / "hooks" / "hooks.json")["hooks"]
    for event, groups in hooks.items():
        for group in groups:
            for handler in group["hooks"]:
                assert handler["type"] == "command"
                assert handler["command"] == "loremap-hook"
                assert handler["args"] == [EVENT_ARGS[event]], event
                assert handler["args"][0] in EVENTS
                assert 0 < handler["timeout"] <= 30


def test_the_hooks_fire_where_the_memory_needs_them():
    hooks = load(PLUGIN / "hooks" / "hooks.json")["hooks"]
    matchers = {event: [group.get("matcher") for group in groups]
                for event, groups in hooks.items()}
    assert matchers == {"SessionStart": ["startup|resume|clear|compact"],
                        "UserPromptSubmit": [None],
                        "PreToolUse": ["Read|Edit|Write|MultiEdit|NotebookEdit|Bash"],
                        "PostToolUse": [None], "PostToolUseFailure": [None], "Stop": [None],
                        "PreCompact": [None]}


def test_the_plugin_version_is_the_package_version():
    assert load(PLUGIN / ".claude-plugin" / "plugin.json")["version"] == loremap.__version__
    entry, = load(ROOT / ".claude-plugin" / "marketplace.json")["plugins"]
    assert (entry["name"], entry["source"], entry["version"]) == (
        "loremap", "./plugin", loremap.__version__)


def test_the_mcp_server_is_loremap_serve():
    assert load(PLUGIN / ".mcp.json") == {
        "mcpServers": {"loremap": {"command": "loremap", "args": ["serve"]}}}


def frontmatter(path: Path) -> dict[str, str]:
    found = re.match(r"---\n(.*?)\n---\n", path.read_text(encoding="utf-8"), re.S)
    assert found, path
    return dict(line.split(": ", 1) for line in found.group(1).splitlines())


def test_the_slash_commands_take_their_arguments():
    for name in ("recall", "handoff", "xray", "slim"):
        path = PLUGIN / "commands" / f"{name}.md"
        meta = frontmatter(path)
        assert meta["description"] and meta["argument-hint"], name
        assert "$ARGUMENTS" in path.read_text(encoding="utf-8"), name


def test_the_researcher_is_a_small_read_only_agent():
    meta = frontmatter(PLUGIN / "agents" / "researcher.md")
    assert meta["name"] == "researcher" and meta["model"] == "haiku"
    tools = set(meta["tools"].split(", "))
    assert tools == {"Read", "Grep", "Glob", "mcp__plugin_loremap_loremap__recall",
                     "mcp__plugin_loremap_loremap__read", "mcp__plugin_loremap_loremap__map"}


def test_the_marketplace_installs_the_plugin(isolated_home):
    added = claude("plugin", "marketplace", "add", str(ROOT))
    assert added.returncode == 0, added.stdout + added.stderr
    installed = claude("plugin", "install", "loremap@loremap")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listed = json.loads(claude("plugin", "list", "--json").stdout)
    assert [(p["id"], p["version"], p["enabled"]) for p in listed] == [
        ("loremap@loremap", loremap.__version__, True)]
    settings = load(isolated_home / ".claude" / "settings.json")
    assert settings["enabledPlugins"] == {"loremap@loremap": True}
