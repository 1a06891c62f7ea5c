"""The agents' own command-line tools from npm, for the tests that check our files with them.

Claude Code, Codex, Gemini CLI and the MCP Bundle tool are installed once per machine, at pinned
versions, into a folder under the real home's cache (the tests run with a temporary HOME, so the
path is taken when this module is imported, before any fixture runs). A test asks for a tool
with `npm_tool("claude")`; it is skipped only when npm itself is missing.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGES = {
    "claude": "@anthropic-ai/claude-code@2.1.328",
    "codex": "@openai/codex@0.169.0",
    "gemini": "@google/gemini-cli@0.61.0",
    # The MCP Bundle tool: `mcpb validate` checks the manifest `loremap bundle` writes.
    "mcpb": "@anthropic-ai/mcpb@2.1.2",
}
REAL_HOME = Path(os.path.expanduser("~"))
TOOLS_DIR = Path(os.environ.get("LOREMAP_TEST_NPM_DIR",
                               REAL_HOME / ".cache" / "loremap-npm-tools"))
NPM_CACHE = REAL_HOME / ".npm"


def npm_tool(name: str) -> Path:
    """The path of the tool's executable, installing the pinned packages on first use."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    binary = TOOLS_DIR / "node_modules" / ".bin" / name
    stamp = TOOLS_DIR / "installed.txt"
    wanted = " ".join(sorted(PACKAGES.values()))
    TOOLS_DIR.mkdir(parents=True, exist_ok=True)
    with open(TOOLS_DIR / ".lock", "w", encoding="utf-8") as lock:
        # Two test processes may ask at once; one installs, the other waits for it.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (binary.exists() and stamp.is_file()
                and stamp.read_text(encoding="utf-8") == wanted):
            env = {**os.environ, "HOME": str(REAL_HOME), "npm_config_cache": str(NPM_CACHE),
                   "npm_config_update_notifier": "false", "npm_config_fund": "false",
                   "npm_config_audit": "false"}
            done = subprocess.run(["npm", "install", "--prefix", str(TOOLS_DIR),
                                   *PACKAGES.values()], env=env, capture_output=True, text=True,
                                  timeout=600)
            if done.returncode != 0:
                raise RuntimeError(f"npm install failed: {done.stderr[-2000:]}")
            stamp.write_text(wanted, encoding="utf-8")
    return binary
