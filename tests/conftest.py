"""Shared fixtures: every test runs with its own home, a real git repository and the real CLI."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from loremap.cli import main

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
                  ) -> Iterator[Path]:
    """Keep every test away from the real home directory and from the caller's settings."""
    home = tmp_path_factory.mktemp("home")
    for key in list(os.environ):
        if key.startswith("LOREMAP_") or key.startswith("XDG_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LOREMAP_HOME", str(home / "loremap"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    (home / "gitconfig").write_text(
        "[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n",
        encoding="utf-8")
    yield home


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository with one commit and a couple of source files; the working directory."""
    root = tmp_path / "repo"
    (root / "src" / "auth").mkdir(parents=True)
    (root / "src" / "auth" / "login.ts").write_text("export function login() {}\n",
                                                    encoding="utf-8")
    (root / "README.md").write_text("# demo\n", encoding="utf-8")
    git(root.parent, "init", "-q", str(root))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    monkeypatch.chdir(root)
    return root


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Iterator[Callable[..., Result]]:
    """Run `loremap ARGS...` in process and return (exit code, stdout, stderr)."""

    def run(*args: str, stdin: str | bytes = b"") -> Result:
        capsys.readouterr()
        old_stdin = sys.stdin
        data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
        try:
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = int(exc.code or 0)
        finally:
            sys.stdin = old_stdin
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    yield run


@pytest.fixture
def project(repo: Path, cli: Callable[..., Result]) -> Path:
    """`repo` after `loremap init`."""
    result = cli("init")
    assert result.code == 0, result.err
    return repo


def run_cli_process(*args: str, cwd: Path, stdin: str = "", env: dict[str, str] | None = None,
                    ) -> subprocess.CompletedProcess[str]:
    """`loremap` as a separate process, as a user or an agent runs it."""
    return subprocess.run([sys.executable, "-m", "loremap", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=120)


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """The PostgreSQL server of the session (see tests/pg.py); skips without the drivers."""
    import pg

    pg.require()
    try:
        yield pg.database_url()
    finally:
        pg.shutdown()


@pytest.fixture
def pg_url(pg_server_url: str) -> Iterator[str]:
    """A fresh, empty database (extensions vector and pg_trgm) for one test, dropped after."""
    import pg

    url = pg.fresh_database(pg_server_url)
    try:
        yield url
    finally:
        pg.drop_database(pg_server_url, url)


@pytest.fixture
def app_role(pg_url: str) -> Iterator[str]:
    """A role name of this test only (roles belong to the whole server), dropped after with
    what it was granted."""
    import uuid

    import psycopg
    from psycopg import sql

    role = f"loremap_app_{uuid.uuid4().hex[:8]}"
    yield role
    with psycopg.connect(pg_url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
