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
          "click", "typer", "httpx")


def run_hook(event: str, stdin: bytes, *flags: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, *flags, "-m", "loremap.hook", event], input=stdin,
                          capture_output=True, env=os.environ.copy(), timeout=60)


def imported_modules(importtime_stderr: str) -> set[str]:
    names = set()
    for line in importtime_stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


@pytest.mark.parametrize("payload", PAYLOADS, ids=[p["hook_event_name"] for p in PAYLOADS])
def test_the_hook_imports_nothing_heavy_on_real_payloads(payload, project):
    payload = {**payload, "cwd": str(project)}
    result = run_hook(EVENT_ARG[payload["hook_event_name"]], json.dumps(payload).encode(),
                      "-X", "importtime")
    assert result.returncode == 0
    assert result.stdout == b""
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
