"""Shared fixtures and suite-wide rules: every test runs with its own home, a real git repository
and the real CLI; hypothesis has no wall-clock deadline; PostgreSQL tests skip without the
postgres extra; golden files are compared, and rewritten only by `pytest --update-golden`."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from loremap.cli import main

SRC = Path(__file__).resolve().parents[1] / "src"
GOLDEN = Path(__file__).with_name("fixtures") / "golden"

# One profile for every property test. A wall-clock deadline (hypothesis' 200 ms default) or
# the too-slow health check fails a correct test on a loaded machine, so neither is used; a
# failure prints the blob that replays it (`@reproduce_failure`).
settings.register_profile("loremap", deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("loremap")

# Fixtures that start or use the session's PostgreSQL server (tests/pg.py).
PG_FIXTURES = frozenset({"pg_server_url", "pg_url", "app_role"})


def pytest_configure(config: pytest.Config) -> None:
    """Compile the package's bytecode once, before the workers start.

    The suite starts many `python -m loremap` processes. Where PYTHONDONTWRITEBYTECODE is set
    (as on the machine measured here), no process ever writes `__pycache__`, so each compiled
    every module it imported again: `import loremap.cli, loremap.app, loremap.search.engine`
    took 0.26 s instead of 0.13 s. `compileall` writes the files whatever that variable says,
    and every later process reads them (the variable only stops writing). The same variable
    made pytest rewrite the asserts of every test module again in each worker at each run
    (10.6 s to collect the suite here); the workers may keep that cache too (`__pycache__/`
    is ignored by git)."""
    if hasattr(config, "workerinput"):
        sys.dont_write_bytecode = False
        return
    import compileall

    compileall.compile_dir(SRC / "loremap", quiet=1)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject's addopts): two workers per core, at most four more than cores.

    Much of the suite waits on processes it starts (git, the CLI, servers, the agents' own
    CLIs). On a quiet two-core machine four workers finish as two do (537 s against 544 s);
    beside two CPU-burning processes, where the scheduler shares the cores out per process,
    four workers get two thirds of them instead of half: `.ci/run` took 15 min 22 s there
    (13 min 54 s of tests) against 18 min 33 s (17 min 10 s) with one worker per core."""
    cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else os.cpu_count() or 1)
    return min(2 * cores, cores + 4)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files from what the code renders now instead of "
                          "comparing with them (review the diff before committing)")


def needs_postgres(item: pytest.Item) -> bool:
    """A test that uses the PostgreSQL fixtures, or runs with a `postgres...` backend
    parameter (a fixture of the store contract that asks for the server only once running)."""
    if PG_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    return any(isinstance(value, str) and value.startswith("postgres") for value in params)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the PostgreSQL tests `postgres`; skip them, saying why, without the extra."""
    import pg

    missing = pg.missing()
    for item in items:
        if needs_postgres(item):
            item.add_marker(pytest.mark.postgres)
            if missing:
                item.add_marker(pytest.mark.skip(reason=missing))


class Golden:
    """Compares what the code renders with a golden file; `--update-golden` rewrites it."""

    def __init__(self, update: bool) -> None:
        self.update = update

    def check(self, path: Path, text: str) -> None:
        """`text` must equal the file byte for byte (read and written as UTF-8, no newline
        translation)."""
        if self.update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
            return
        if not path.is_file():
            pytest.fail(f"no golden file {path.name}: run `pytest --update-golden` to write it")
        assert text == path.read_bytes().decode("utf-8"), (
            f"{path.name} differs from its golden file; if the change is intended, run "
            "`pytest --update-golden` and review the diff")

    def check_json(self, path: Path, value: object) -> None:
        """`value` must equal the JSON document of the file (written with indent 1)."""
        if self.update:
            self.check(path, json.dumps(value, indent=1, ensure_ascii=False) + "\n")
            return
        if not path.is_file():
            pytest.fail(f"no golden file {path.name}: run `pytest --update-golden` to write it")
        assert value == json.loads(path.read_bytes().decode("utf-8")), (
            f"{path.name} differs from its golden file; if the change is intended, run "
            "`pytest --update-golden` and review the diff")


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Golden:
    """The golden-file checker of this run (`--update-golden` or not)."""
    return Golden(bool(request.config.getoption("--update-golden")))


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
    # Hooks and `serve` work in their own process unless a test starts a daemon (test_daemon):
    # a daemon started on first need would outlive its test by `daemon.idle_s`.
    monkeypatch.setenv("LOREMAP_DAEMON", "off")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    (home / "gitconfig").write_text(
        "[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n",
        encoding="utf-8")
    yield home


@pytest.fixture
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Claude Code's configuration folder (CLAUDE_CONFIG_DIR), empty, for the X-ray's tests."""
    root = tmp_path / "claude"
    root.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root))
    yield root


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def new_repo(root: Path, files: dict[str, str], message: str = "initial") -> Path:
    """A git repository at `root` holding `files` (path -> text) in one commit."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
    return root


def new_project(root: Path, files: dict[str, str], message: str = "initial", *,
                cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> Path:
    """`new_repo` made the working directory, with `loremap init` run in it."""
    new_repo(root, files, message)
    monkeypatch.chdir(root)
    assert cli("init").code == 0
    return root


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
