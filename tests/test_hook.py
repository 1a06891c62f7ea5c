"""`loremap-hook` as Claude Code calls it: a subprocess fed a real recorded payload."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).with_name("fixtures") / "claude_code"
PAYLOADS = [json.loads(line) for line in
            (FIXTURES / "hook-stdin-2.1.328.jsonl").read_text(encoding="utf-8").splitlines()]
EVENT_ARG = {"SessionStart": "session-start", "UserPromptSubmit": "prompt", "Setup":
             "session-start", "StopFailure": "stop", "SessionEnd": "session-end"}
BANNED = ("mcp", "pydantic", "yaml", "tree_sitter", "networkx", "scipy", "numpy", "rich",
          "click", "typer", "httpx", "tomlkit", "ruamel", "jsonschema")
# Events the recorded payloads do not cover, in the shapes Claude Code 2.1.328 sends.
MORE = [
    {"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_use_id": "toolu_1",
     "tool_input": {"file_path": "src/auth/login.ts"}},
    {"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_use_id": "toolu_1",
     "tool_input": {"file_path": "src/auth/login.ts"}, "tool_response": "x", "duration_ms": 3},
    {"hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "done"},
    {"hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": None},
    {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_2",
     "tool_input": {"command": "make deploy", "description": "deploy"}},
    {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_use_id": "toolu_2",
     "tool_input": {"command": "make deploy", "description": "deploy"}, "is_interrupt": False,
     "error": "Exit code 2\nFileNotFoundError: no token in /home/ann/.app", "duration_ms": 40},
]
EVENT_ARG.update({"PreToolUse": "pre-tool", "PostToolUse": "post-tool", "Stop": "stop",
                  "PreCompact": "pre-compact", "PostToolUseFailure": "tool-failure"})


def run_hook(event: str, stdin: bytes, *flags: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, *flags, "-m", "loremap.hook", event], input=stdin,
                          capture_output=True, env=os.environ.copy(), timeout=60)


def imported_modules(importtime_stderr: str) -> set[str]:
    names = set()
    for line in importtime_stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


@pytest.mark.parametrize("payload", PAYLOADS + MORE,
                         ids=[p["hook_event_name"] for p in PAYLOADS + MORE])
def test_the_hook_imports_nothing_heavy_on_real_payloads(payload, project, cli, isolated_home):
    """On an indexed project where nothing changed (the common case: every prompt, every
    tool call, a session start), whatever the event does."""
    assert cli("remember", "-t", "gotcha", "--title", "Login needs a fresh token", "-m",
               "login() fails on an expired token", "-f", "src/auth/login.ts").code == 0
    assert cli("remember", "-t", "error", "--title", "No token file", "-m", "Log in first.",
               "--error", "FileNotFoundError: no token in /tmp/x", "--command",
               "make deploy").code == 0
    # Files written within the last clock tick are re-read on principle (their stat cannot be
    # trusted yet); age them, as the files of a real project are.
    for path in [*(project / ".loremap" / "notes").rglob("*.md"), *(project / "src").rglob("*")]:
        os.utime(path, (path.stat().st_atime - 3600, path.stat().st_mtime - 3600))
    assert cli("index").code == 0
    transcript = project / "t.jsonl"
    transcript.write_text(json.dumps({"type": "assistant", "message": {
        "id": "m1", "model": "claude-sonnet-4-5", "content": [],
        "usage": {"input_tokens": 1, "output_tokens": 1}}}) + "\n", encoding="utf-8")
    payload = {"session_id": "s1", **payload, "cwd": str(project),
               "transcript_path": str(transcript)}
    if payload["hook_event_name"] == "UserPromptSubmit":
        payload["prompt"] = "why does login need a fresh token?"
    result = run_hook(EVENT_ARG[payload["hook_event_name"]], json.dumps(payload).encode(),
                      "-X", "importtime")
    assert result.returncode == 0
    assert not (isolated_home / "loremap" / "logs" / "hook.log").exists()
    if payload["hook_event_name"] in ("SessionStart", "Setup", "UserPromptSubmit",
                                      "PostToolUseFailure") or \
            payload.get("tool_name") == "Bash":
        assert b"project-memory" in result.stdout
    modules = imported_modules(result.stderr.decode())
    assert "loremap" in modules  # the package itself was imported and measured
    heavy = sorted(m for m in modules if m.split(".")[0] in BANNED)
    assert heavy == []


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1, 2]", b"\xff\xfe", b'{"a": '])
def test_the_hook_fails_open_with_one_log_line(stdin, isolated_home):
    result = run_hook("prompt", stdin)
    assert (result.returncode, result.stdout) == (0, b"")
    log = (isolated_home / "loremap" / "logs" / "hook.log").read_text(encoding="utf-8")
    assert len(log.splitlines()) == 1
    assert "hook prompt failed" in log


def test_an_unknown_event_fails_open(isolated_home):
    result = run_hook("no-such-event", b"{}")
    assert (result.returncode, result.stdout) == (0, b"")
    log = (isolated_home / "loremap" / "logs" / "hook.log").read_text(encoding="utf-8")
    assert "unknown event 'no-such-event'" in log
