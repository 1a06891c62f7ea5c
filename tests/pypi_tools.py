"""Other memory tools from PyPI, for the importers' tests that read what the real tool wrote.

A tool is installed once per machine, at a pinned version, into its own virtual environment
under the real home's cache (`~/.cache/loremap-pypi-tools/<name>`; the tests run with a
temporary HOME, so the path is taken when this module is imported). basic-memory needs Python
3.12 or newer, which need not be the Python running the tests: the first of `python3.13`,
`python3.12` on PATH and the pyenv versions that is new enough builds the environment. A test
asks with `pypi_tool("basic-memory")` and is skipped, with the reason in one line, when no such
Python exists or the install fails.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGES = {"basic-memory": ("basic-memory==0.24.1", (3, 12))}
REAL_HOME = Path(os.path.expanduser("~"))
TOOLS_DIR = Path(os.environ.get("LOREMAP_TEST_PYPI_DIR",
                               REAL_HOME / ".cache" / "loremap-pypi-tools"))


def _version(python: str) -> tuple[int, int] | None:
    try:
        done = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = done.stdout.split()
    return (int(parts[0]), int(parts[1])) if done.returncode == 0 and len(parts) == 2 else None


def _python(least: tuple[int, int]) -> str | None:
    """A Python interpreter at least `least` on this machine, or None."""
    found = [shutil.which(name) for name in ("python3.13", "python3.12", "python3")]
    pyenv = REAL_HOME / ".pyenv" / "versions"
    if pyenv.is_dir():
        found += [str(p / "bin" / "python3") for p in sorted(pyenv.iterdir(), reverse=True)]
    for python in found:
        if python and Path(python).exists():
            version = _version(python)
            if version is not None and version >= least:
                return python
    return None


def pypi_tool(name: str) -> Path:
    """The `bin/` folder of the tool's environment, installing it on first use."""
    requirement, least = PACKAGES[name]
    env_dir = TOOLS_DIR / name
    stamp = env_dir / "installed.txt"
    TOOLS_DIR.mkdir(parents=True, exist_ok=True)
    with open(TOOLS_DIR / f".{name}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test processes: one installs, one waits
        if stamp.is_file() and stamp.read_text(encoding="utf-8") == requirement:
            return env_dir / "bin"
        python = _python(least)
        if python is None:
            pytest.skip(f"{name} needs Python {least[0]}.{least[1]} or newer, and this machine "
                        "has none")
        shutil.rmtree(env_dir, ignore_errors=True)
        env = {**os.environ, "HOME": str(REAL_HOME)}
        for step in ([python, "-m", "venv", str(env_dir)],
                     [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q",
                      requirement]):
            done = subprocess.run(step, env=env, capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                pytest.skip(f"{requirement} could not be installed from PyPI: {last}")
        stamp.write_text(requirement, encoding="utf-8")
    return env_dir / "bin"
