"""`loremap db`: the schema, the status, row-level security and the local server, run as a user
runs them (the `loremap` program) against a real PostgreSQL."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import pg
from loremap.config import UserPaths
from loremap.store.postgres import local, schema

LOREMAP = Path(sys.executable).parent / "loremap"
CODE_VERSION = len(schema.MIGRATIONS)


def loremap_db(*args: str, url: str | None, home: Path,
               extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOREMAP_")}
    env["LOREMAP_HOME"] = str(home)
    if url is not None:
        env["LOREMAP_DATABASE_URL"] = url
    env.update(extra or {})
    return subprocess.run([str(LOREMAP), "db", *args], cwd=home.parent, env=env,
                          capture_output=True, text=True, timeout=120)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("loremap: error: ") and done.stderr.count("\n") == 1, \
        done.stderr
    return done.stderr


def connect(url: str, **kwargs: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True, **kwargs)


def back_to_schema_6(conn: Any) -> None:
    """Undo migration 7 (erased tombstones), in the caller's transaction."""
    conn.execute("ALTER TABLE note_docs DROP COLUMN erased")
    conn.execute("DELETE FROM loremap_migrations WHERE version > 6")


def back_to_schema_5(conn: Any) -> None:
    """Undo migrations 7 and 6 (the audit chain's tables, their triggers going with them), in
    the caller's transaction."""
    back_to_schema_6(conn)
    conn.execute("DROP TABLE audit_log, audit_payloads")
    conn.execute("DROP FUNCTION loremap_audit_append_only(), loremap_audit_payload_kept()")
    conn.execute("DELETE FROM loremap_migrations WHERE version > 5")


def back_to_schema_4(conn: Any) -> None:
    """Undo migrations 6 and 5 (the track record's and the error notes' columns, their
    indexes going with them), in the caller's transaction."""
    back_to_schema_5(conn)
    conn.execute("ALTER TABLE nodes DROP COLUMN successes, DROP COLUMN failures, "
                 "DROP COLUMN signature, DROP COLUMN remedy, DROP COLUMN command")
    conn.execute("DELETE FROM loremap_migrations WHERE version > 4")


def back_to_schema_3(conn: Any) -> None:
    """Undo migrations 5 and 4 (vectors by chunk, `vector_models`), in the caller's
    transaction."""
    back_to_schema_4(conn)
    conn.execute("DROP TABLE vector_models")
    conn.execute("DROP INDEX vectors_node")
    conn.execute("ALTER TABLE vectors DROP CONSTRAINT vectors_pkey, "
                 "ADD PRIMARY KEY (project, model, id)")
    conn.execute("ALTER TABLE vectors DROP COLUMN chunk")
    conn.execute("DELETE FROM loremap_migrations WHERE version > 3")


def migrated(url: str, home: Path) -> None:
    done = loremap_db("migrate", url=url, home=home)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def test_migrate_creates_the_schema_then_says_it_is_up_to_date(pg_url, home):
    first = loremap_db("migrate", url=pg_url, home=home)
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"schema 0 -> {CODE_VERSION}\n"
    second = loremap_db("migrate", "--json", url=pg_url, home=home)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout) == {"json_version": 1, "before": CODE_VERSION,
                                         "after": CODE_VERSION, "renewed_roles": []}
    assert loremap_db("migrate", url=pg_url, home=home).stdout == \
        f"schema {CODE_VERSION} (up to date)\n"
    with connect(pg_url) as conn:
        assert schema.current_version(conn) == CODE_VERSION


def test_a_version_1_database_keeps_its_rows_and_gains_covering_postings_keys(pg_url, home):
    """Migration 2 rebuilds the postings' keys with the BM25 columns included; a database
    written at version 1 keeps every row and searches as before."""
    from loremap.model.search import Filters, TextQuery
    from loremap.store.postgres.store import PostgresStore
    from loremap.text import Analyzer

    with connect(pg_url) as conn, conn.transaction():
        schema.migrate(conn)
        back_to_schema_3(conn)
        for table in ("section_postings", "postings"):  # back to version 1's keys
            conn.execute(f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey")
        conn.execute("ALTER TABLE postings ADD PRIMARY KEY (project, term, node)")
        conn.execute("ALTER TABLE section_postings ADD PRIMARY KEY (project, term, section)")
        conn.execute("DROP FUNCTION loremap_vector_index(text, text, integer), "
                     "loremap_analyze(text[])")
        conn.execute("DELETE FROM loremap_migrations WHERE version > 1")
    with connect(pg_url) as conn, conn.transaction():
        conn.execute("INSERT INTO nodes (project, id, kind, title, doc_len) VALUES "
                     "('p', 'n1', 'note', 'Coupons', 2)")
        conn.execute("INSERT INTO postings (project, term, node, dl, t0, t1) VALUES "
                     "('p', 'coupon', 'n1', 2, 1, 1)")
        conn.execute("INSERT INTO counters (project, name, value) VALUES ('p', 'nodes', 1), "
                     "('p', 'tokens', 2)")
    done = loremap_db("migrate", url=pg_url, home=home)
    assert done.stdout == f"schema 1 -> {CODE_VERSION}\n", done.stderr
    with connect(pg_url) as conn:
        key = conn.execute("SELECT pg_get_indexdef('postings_pkey'::regclass)").fetchone()[0]
        assert "INCLUDE (dl, t0, t1, t2, t3, t4, t5)" in key
    store = PostgresStore(pg_url, "p", Analyzer(), writer="t")
    try:
        hits = store.text_search(TextQuery(("coupon",), (1,)), 10, Filters(), (1.0,) * 6)
        assert [node for node, _ in hits] == ["n1"]
    finally:
        store.close()


def test_a_version_3_database_keeps_its_vectors_as_chunk_0_with_their_dimension(pg_url, home):
    """Migration 4 adds the chunk to the vectors' key and records each model's dimension; a
    model stored with two dimensions (which nothing can compare) is dropped."""
    from loremap.store.postgres.store import PostgresStore
    from loremap.text import Analyzer

    with connect(pg_url) as conn, conn.transaction():
        schema.migrate(conn)
        back_to_schema_3(conn)
        conn.execute("INSERT INTO nodes (project, id, kind) VALUES ('p', 'a', 'note'), "
                     "('p', 'b', 'note')")
        conn.execute("INSERT INTO vectors (project, id, model, dim, vec) VALUES "
                     "('p', 'a', 'm', 2, '[1,0]'), ('p', 'b', 'm', 2, '[0,1]'), "
                     "('p', 'a', 'mixed', 2, '[1,0]'), ('p', 'b', 'mixed', 3, '[0,1,0]')")
    done = loremap_db("migrate", url=pg_url, home=home)
    assert done.stdout == f"schema 3 -> {CODE_VERSION}\n", done.stderr
    store = PostgresStore(pg_url, "p", Analyzer(), writer="t")
    try:
        assert store.vector_models() == [("m", 2, 2)]
        assert store.nearest_vectors("m", [0.0, 1.0], 5)[0] == ("b", 1.0)
        assert store.broken_vectors() == 0
        assert [i for i, _ in store.missing_vectors("mixed", 5)] == ["a", "b"]
    finally:
        store.close()


def test_migrating_a_secured_database_renews_the_runtime_role_s_grants(pg_url, app_role,
                                                                        home):
    """A database secured at schema 2 gains `loremap_vector_index` at 3: the runtime role may
    call it at once, without `secure` again."""
    import psycopg

    migrated(pg_url, home)
    done = loremap_db("secure", "--role", app_role, "--password-env", "ROLE_PASSWORD",
                      url=pg_url, home=home, extra={"ROLE_PASSWORD": "pw"})
    assert done.returncode == 0, done.stderr
    with connect(pg_url) as conn, conn.transaction():  # back to schema 2
        back_to_schema_3(conn)
        conn.execute("DROP FUNCTION loremap_vector_index(text, text, integer), "
                     "loremap_analyze(text[])")
        conn.execute("DELETE FROM loremap_migrations WHERE version > 2")
    from psycopg.conninfo import make_conninfo

    runtime = make_conninfo(pg_url, user=app_role, password="pw")
    error = one_line_error(loremap_db("migrate", url=runtime, home=home))
    assert "permission denied" in error and "run `loremap db migrate` as the tables' owner (" \
        in error
    done = loremap_db("migrate", url=pg_url, home=home)
    assert done.stdout == f"schema 2 -> {CODE_VERSION}\nrole {app_role}: grants renewed for " \
        f"schema {CODE_VERSION}\n", done.stderr
    done = loremap_db("migrate", url=runtime, home=home)  # up to date: no privilege needed
    assert done.stdout == f"schema {CODE_VERSION} (up to date)\n", done.stderr
    with connect(pg_url, user=app_role, password="pw") as conn:
        conn.execute("SELECT set_config('loremap.project', 'a', false)")
        conn.execute("SELECT loremap_vector_index('vectors_hnsw_0123456789ab', 'm', 3)")
        assert conn.execute("SELECT count(*) FROM nodes").fetchone() == (0,)
        # Migration 6's audit chain: the role reads and appends, and never changes a record.
        assert conn.execute("SELECT count(*) FROM audit_log").fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM audit_log")
    with connect(pg_url) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("SET ROLE " + app_role)
        conn.execute("SELECT set_config('loremap.project', 'a', false)")
        conn.execute("INSERT INTO nodes (project, id, kind) VALUES ('b', 'n', 'note')")


def test_status_reports_versions_projects_and_security(pg_url, home):
    before = json.loads(loremap_db("status", "--json", url=pg_url, home=home).stdout)
    assert before["schema"] == {"database": 0, "code": CODE_VERSION}
    assert before["projects"] == [] and before["row_level_security"] is None
    migrated(pg_url, home)
    with connect(pg_url) as conn:
        conn.execute("INSERT INTO nodes (project, id, kind) VALUES ('acme/app', 'n1', 'note'), "
                     "('acme/app', 'n2', 'note'), ('acme/app', 'src/a.py', 'file'), "
                     "('acme/lib', 'n1', 'note')")
        conn.execute("INSERT INTO note_docs (project, id, text, hash, updated_at) VALUES "
                     "('acme/app', 'n1', 'x', 'h', '2026-01-02T03:04:05Z')")
    done = loremap_db("status", "--json", url=pg_url, home=home)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["server"].split(".")[0].isdigit() and found["pgvector"]
    assert found["schema"] == {"database": CODE_VERSION, "code": CODE_VERSION}
    assert found["row_level_security"] == "off" and found["sees_all_projects"] is True
    assert [(p["project"], p["notes"], p["files"]) for p in found["projects"]] == \
        [("acme/app", 2, 1), ("acme/lib", 1, 0)]
    assert found["projects"][0]["last_write"].startswith("2026-01-02")
    assert found["projects"][1]["last_write"] is None
    with_secret = pg_url.replace("postgres@", "postgres:hunter2@", 1) if not pg.EXTERNAL \
        else pg_url
    text = loremap_db("status", url=with_secret, home=home).stdout
    assert "hunter2" not in text
    assert f"schema: {CODE_VERSION} (up to date)" in text
    assert "projects: 2\n  acme/app: 2 notes, 1 file, last write 2026-01-02" in text
    assert "row-level security: off (`loremap db secure` turns it on)" in text


def test_secure_limits_the_role_to_the_project_its_session_names(pg_url, app_role, home):
    import psycopg

    migrated(pg_url, home)
    with connect(pg_url) as conn:
        conn.execute("INSERT INTO meta (project, key, value) VALUES ('a', 'k1', '1'), "
                     "('a', 'k2', '2'), ('b', 'k1', '3')")
    password = uuid.uuid4().hex
    # A password in the owner's URL must never be printed (the embedded server trusts the
    # socket, so a made-up one is harmless there).
    owner_url = pg_url.replace("postgres@", "postgres:hunter2-owner@", 1) \
        if not pg.EXTERNAL else pg_url
    done = loremap_db("secure", "--role", app_role, "--password-env", "ROLE_PASSWORD",
                      url=owner_url, home=home, extra={"ROLE_PASSWORD": password})
    assert done.returncode == 0, done.stderr
    assert f"role {app_role}: created, password from $ROLE_PASSWORD" in done.stdout
    assert password not in done.stdout + done.stderr and "hunter2" not in done.stdout
    export = done.stdout.splitlines()[-1].strip()
    runtime_url = shlex.split(export.removeprefix("export LOREMAP_DATABASE_URL="))[0]
    if not pg.EXTERNAL:
        assert runtime_url == pg_url.replace("postgres@", f"{app_role}@", 1)

    with connect(pg_url, user=app_role, password=password) as conn:
        assert conn.execute("SELECT count(*) FROM meta").fetchone() == (0,)
        conn.execute("SELECT set_config('loremap.project', 'a', false)")
        assert conn.execute("SELECT key FROM meta ORDER BY key").fetchall() == [("k1",), ("k2",)]
        conn.execute("INSERT INTO meta (project, key, value) VALUES ('a', 'k3', '4')")
        conn.execute("INSERT INTO nodes (project, id, kind) VALUES ('a', 'n1', 'note')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute("INSERT INTO meta (project, key, value) VALUES ('b', 'k9', '9')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute("UPDATE meta SET project = 'b' WHERE key = 'k3'")
        assert conn.execute("DELETE FROM meta WHERE key = 'k1'").rowcount == 1
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DROP TABLE meta")
        # It may not build indexes, but the owner's function builds vector indexes for it:
        # loremap's names only, a dimension HNSW takes, the model quoted.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE INDEX x ON vectors (id)")
        for bad in (("x; DROP TABLE meta", 3), ("vectors_hnsw_0123456789ab", 4000)):
            with pytest.raises(psycopg.errors.RaiseException, match="no index"):
                conn.execute("SELECT loremap_vector_index(%s, 'm', %s)", bad)
        conn.execute("SELECT loremap_vector_index('vectors_hnsw_0123456789ab', %s, 3)",
                     ("m'; DROP TABLE meta; --",))
        # ANALYZE of loremap's tables, by the owner's function, and of nothing else.
        conn.execute("SELECT loremap_analyze(ARRAY['nodes', 'meta'])")
        with pytest.raises(psycopg.errors.RaiseException, match="not a table of loremap"):
            conn.execute("SELECT loremap_analyze(ARRAY['pg_authid'])")
    with connect(pg_url) as conn:
        assert conn.execute("SELECT project, key FROM meta ORDER BY project, key").fetchall() == \
            [("a", "k2"), ("a", "k3"), ("b", "k1")]
        index = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = "
                             "'vectors_hnsw_0123456789ab'").fetchone()[0]
        assert "USING hnsw" in index and "'m''; DROP TABLE meta; --'::text" in index
        # No other role may call it: EXECUTE is not PUBLIC's.
        conn.execute(f"CREATE ROLE {app_role}_other LOGIN PASSWORD '{password}'")
        try:
            with connect(pg_url, user=f"{app_role}_other", password=password) as other, \
                    pytest.raises(psycopg.errors.InsufficientPrivilege):
                other.execute("SELECT loremap_vector_index('vectors_hnsw_0123456789ab', 'm', 3)")
        finally:
            conn.execute(f"DROP ROLE {app_role}_other")
        if not pg.EXTERNAL:  # the server got a hash, never the password (pg_authid: superuser)
            stored = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                                  (app_role,)).fetchone()
            assert stored is not None and stored[0].startswith("SCRAM-SHA-256$")

    again = loremap_db("secure", "--role", app_role, url=pg_url, home=home)
    assert again.returncode == 0, again.stderr
    assert f"role {app_role}: updated" in again.stdout
    status = loremap_db("status", "--json", url=runtime_url, home=home,
                        extra={"PGPASSWORD": password})
    assert status.returncode == 0, status.stderr
    found = json.loads(status.stdout)
    assert found["role"] == app_role and found["row_level_security"] == "on"
    assert found["sees_all_projects"] is False and found["projects"] == []


def test_secure_refuses_an_unmigrated_database_and_the_connecting_role(pg_url, home):
    assert "run `loremap db migrate`" in one_line_error(loremap_db("secure", url=pg_url,
                                                                   home=home))
    migrated(pg_url, home)
    with connect(pg_url) as conn:
        me = conn.execute("SELECT current_user").fetchone()
    assert me is not None
    assert "the role you connect as" in one_line_error(
        loremap_db("secure", "--role", me[0], url=pg_url, home=home))
    assert "ROLE_PASSWORD" in one_line_error(
        loremap_db("secure", "--role", "x", "--password-env", "ROLE_PASSWORD", url=pg_url,
                   home=home))


def test_without_a_database_url_the_error_says_how_to_get_one(home):
    for action in ("migrate", "status", "secure"):
        error = one_line_error(loremap_db(action, url=None, home=home))
        assert "LOREMAP_DATABASE_URL" in error and "`loremap db local start`" in error


def test_an_unreachable_database_is_one_line_not_a_traceback(home):
    for url in ("postgresql://nobody@/nodb?host=/nonexistent", "not a url at all"):
        error = one_line_error(loremap_db("status", url=url, home=home))
        assert "database" in error or "loremap[postgres]" in error


def test_local_start_status_stop_runs_a_server_that_outlives_the_command(home):
    pg.require()
    pgdata = local.data_dir(UserPaths.from_env({"LOREMAP_HOME": str(home)}))
    assert pgdata == home / "postgres"
    try:
        started = loremap_db("local", "start", url=None, home=home)
        assert started.returncode == 0, started.stderr
        assert f"schema 0 -> {CODE_VERSION}" in started.stdout
        assert "export LOREMAP_DATABASE_URL='postgresql://postgres@/postgres?host=" \
            in started.stdout
        found = json.loads(loremap_db("local", "status", "--json", url=None, home=home).stdout)
        assert found["running"] is True and found["data_dir"] == str(pgdata)
        assert found["pid"] > 0 and found["version"].split(".")[0] == found["data_version"]
        with connect(found["url"]) as conn:  # the command has exited; the server runs on
            names = {r[0] for r in conn.execute("SELECT extname FROM pg_extension")}
            assert {"vector", "pg_trgm"} <= names
            assert schema.current_version(conn) == CODE_VERSION
        again = loremap_db("local", "start", url=None, home=home)
        assert f"schema {CODE_VERSION} (up to date)" in again.stdout
        assert f"(pid {found['pid']})" in again.stdout

        stopped = loremap_db("local", "stop", url=None, home=home)
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.startswith("stopped the local PostgreSQL server")
        after = json.loads(loremap_db("local", "status", "--json", url=None, home=home).stdout)
        assert after["running"] is False and after["url"] is None
        assert "not running" in loremap_db("local", "stop", url=None, home=home).stdout
        assert "not running (data in" in loremap_db("local", "status", url=None,
                                                    home=home).stdout
    finally:
        local.stop(pgdata)


def test_local_needs_an_action_and_the_others_take_none(home):
    assert "start, stop or status" in one_line_error(loremap_db("local", url=None, home=home))
    assert "`loremap db local start`" in one_line_error(
        loremap_db("status", "start", url=None, home=home))


def test_local_start_refuses_a_folder_it_cannot_use(home, tmp_path):
    pg.require()
    (home / "postgres").mkdir()
    (home / "postgres" / "notes.txt").write_text("mine\n", encoding="utf-8")
    assert "not a PostgreSQL data directory" in one_line_error(
        loremap_db("local", "start", url=None, home=home))
    deep = tmp_path / ("d" * 60) / ("e" * 40)
    deep.mkdir(parents=True)
    assert "too long a path" in one_line_error(loremap_db("local", "start", url=None, home=deep))
    assert not (deep / "postgres").exists()
