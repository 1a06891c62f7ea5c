"""The project's own checks, run by the test command: ruff, mypy --strict, the layer contract."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    found = BIN / name
    if found.exists():
        return str(found)
    which = shutil.which(name)
    if which is None:
        pytest.fail(f"{name} is not installed; install the project with its test extras")
    return which


def check(*cmd: str) -> None:
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_ruff_finds_nothing():
    check(tool("ruff"), "check", "src", "tests", "bench")


def test_mypy_strict_passes_on_src():
    check(tool("mypy"))


def test_imports_flow_down_the_layers():
    check(tool("lint-imports"))
