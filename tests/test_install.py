"""A fresh machine installing loremap as the README says: from a clone, with pipx and with uv,
each from PyPI into folders of its own; then the README's first job in another fresh clone
(`init`, `map`, the demo search) with the installed `loremap` on PATH."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from npm_tools import REAL_HOME

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def tool(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """`name` (pipx, uv) from PyPI in a virtual environment of its own."""
    venv = tmp_path_factory.mktemp(name) / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    done = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", name],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PIP_CACHE_DIR": str(REAL_HOME / ".cache" / "pip")})
    if done.returncode != 0:
        pytest.skip(f"{name} could not be installed from PyPI: {done.stderr.strip()[-300:]}")
    return venv / "bin" / name


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A clone of this repository as committed (what a user gets from `git clone`)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    target = tmp_path / "loremap"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(target)], check=True, timeout=300)
    return target


def readme_job(bin_dir: Path, tmp_path: Path, env: dict[str, str]) -> None:
    """The README's first command after the install: in a fresh clone of the repository."""
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(work)], check=True, timeout=300)
    env = {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"}
    for argv in (["loremap", "--version"], ["loremap", "init"], ["loremap", "map"],
                 ["loremap", "search", "how", "are", "note", "files", "written", "safely"]):
        done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, (argv, done.stderr)
    assert re.search(r"\(\d+ items?, ~\d+ tokens", done.stdout), done.stdout  # it answered
    hook = subprocess.run(["loremap-hook", "SessionStart"], cwd=work, env=env, input="{}",
                          capture_output=True, text=True, timeout=300)
    assert hook.returncode == 0, hook.stderr


def test_pipx_installs_from_a_clone_and_runs_the_readme(tmp_path_factory, tmp_path, clone):
    pipx = tool(tmp_path_factory, "pipx")
    env = {**os.environ, "PIPX_HOME": str(tmp_path / "pipx"),
           "PIPX_BIN_DIR": str(tmp_path / "pipx-bin"),
           "PIP_CACHE_DIR": str(REAL_HOME / ".cache" / "pip")}
    done = subprocess.run([str(pipx), "install", str(clone)], env=env, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    readme_job(tmp_path / "pipx-bin", tmp_path, env)


def test_uv_tool_installs_from_a_clone_and_runs_the_readme(tmp_path_factory, tmp_path, clone):
    uv = tool(tmp_path_factory, "uv")
    env = {**os.environ, "UV_TOOL_DIR": str(tmp_path / "uv-tools"),
           "UV_TOOL_BIN_DIR": str(tmp_path / "uv-bin"),
           "UV_CACHE_DIR": str(REAL_HOME / ".cache" / "loremap-test-uv")}
    done = subprocess.run([str(uv), "tool", "install", str(clone)], env=env, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    readme_job(tmp_path / "uv-bin", tmp_path, env)
