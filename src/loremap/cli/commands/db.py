"""`loremap db migrate|status|secure|local start|stop|status`: the shared PostgreSQL memory's
schema, health and access, and a local server for those who have none (docs/postgres.md).

The database is the one of the `store.url` setting (`LOREMAP_DATABASE_URL`). Every database
error becomes one line; passwords are never printed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from loremap.cli.output import count, emit_json, lines, warn
from loremap.config import CONFIG_FILE, LOREMAP_DIR, UserPaths, find_project_root, load_settings
from loremap.errors import InvalidInput, StoreError
from loremap.store.postgres import first_line, local, schema

if TYPE_CHECKING:
    from psycopg import Connection

    Conn = Connection[tuple[Any, ...]]

POLICY = "loremap_project"
_PROJECT = "current_setting('loremap.project', true)"


def run(args: argparse.Namespace) -> int:
    if args.action == "local":
        return _local(args)
    if args.local_action is not None:
        raise InvalidInput(f"`{args.local_action}` goes with `local`: "
                           f"`loremap db local {args.local_action}`")
    url = _database_url()
    with _session(url) as conn:
        if args.action == "migrate":
            return _migrate(conn, args.json)
        if args.action == "status":
            return _status(conn, url, args.json)
        return _secure(conn, url, args)


def _database_url() -> str:
    root = find_project_root(Path.cwd())
    config = root / LOREMAP_DIR / CONFIG_FILE if root is not None else None
    url = load_settings(config, os.environ).get_str("store.url")
    if not url:
        raise InvalidInput("no database: set LOREMAP_DATABASE_URL (or `url` under [store] in "
                           ".loremap/config.toml), or run `loremap db local start`")
    return url


@contextlib.contextmanager
def _session(url: str) -> Iterator[Conn]:
    """An autocommit connection to `url`; any database error inside becomes one line."""
    try:
        import psycopg
    except ImportError:
        raise StoreError("the shared memory needs psycopg: install loremap[postgres] "
                         "(`pipx install 'loremap[postgres]'`)") from None
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to the database: {first_line(exc)}") from None
    try:
        with conn:
            yield conn
    except psycopg.Error as exc:
        raise StoreError(f"the database refused: {first_line(exc)}") from None


def _one(conn: Conn, query: Any, params: Any = None) -> tuple[Any, ...]:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row


def public_url(url: str, user: str | None = None) -> str:
    """`url` without its password; with `user` as the user when given."""
    if "://" not in url:  # a `key=value` connection string
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        params = conninfo_to_dict(url)
        params.pop("password", None)
        if user is not None:
            params["user"] = user
        return make_conninfo("", **params)
    parts = urlsplit(url)
    credentials, _, hosts = parts.netloc.rpartition("@")
    name = quote(user, safe="") if user is not None else credentials.partition(":")[0]
    dropped = ("password=", "user=") if user is not None else ("password=",)
    query = "&".join(p for p in parts.query.split("&") if p and not p.startswith(dropped))
    return (f"{parts.scheme}://{name + '@' if name else ''}{hosts}{parts.path}"
            + (f"?{query}" if query else ""))


def _export(url: str) -> str:
    return f"export LOREMAP_DATABASE_URL={shlex.quote(url)}"


# --- migrate and status ---------------------------------------------------------------------


def _migrate(conn: Conn, as_json: bool) -> int:
    """Migrate; on a secured database, in the same transaction, renew the runtime roles'
    grants and the policies, so what the new schema added (a table, a function) is theirs
    too without running `secure` again."""
    import psycopg

    try:
        with conn.transaction():
            before, after = schema.migrate(conn)
            roles = _runtime_roles(conn) if after != before else []
            for role in roles:
                _grant(conn, role)
            if roles:
                _enable_policies(conn)
    except psycopg.errors.InsufficientPrivilege as exc:
        owner = conn.execute("SELECT pg_get_userbyid(relowner) FROM pg_class "
                             "WHERE oid = to_regclass('nodes')").fetchone()
        who = f"the tables' owner ({owner[0]})" if owner and owner[0] else \
            "a role that may create tables and the extension vector"
        raise StoreError(f"the database refused: {first_line(exc)}; run `loremap db migrate` "
                         f"as {who}") from None
    if as_json:
        emit_json({"before": before, "after": after, "renewed_roles": roles})
    else:
        lines([_migrated(before, after)]
              + [f"role {role}: grants renewed for schema {after}" for role in roles])
    return 0


def _runtime_roles(conn: Conn) -> list[str]:
    """The roles that may write `nodes` without owning it: those `secure` made."""
    rows = conn.execute(
        "SELECT DISTINCT r.rolname FROM pg_class c, aclexplode(c.relacl) a "
        "JOIN pg_roles r ON r.oid = a.grantee WHERE c.oid = to_regclass('nodes') "
        "AND a.privilege_type = 'INSERT' AND a.grantee <> c.relowner ORDER BY 1").fetchall()
    return [row[0] for row in rows]


def _migrated(before: int, after: int) -> str:
    return f"schema {before} -> {after}" if before != after else f"schema {after} (up to date)"


def _status(conn: Conn, url: str, as_json: bool) -> int:
    found = describe(conn, url)
    if as_json:
        emit_json(found)
        return 0
    version, code = found["schema"]["database"], found["schema"]["code"]
    if version == code:
        schema_line = f"{version} (up to date)"
    elif version > code:
        schema_line = f"{version}, newer than this loremap's {code}: upgrade loremap"
    else:
        schema_line = f"{version}, this loremap's is {code}: run `loremap db migrate`"
    sees = ("sees every project" if found["sees_all_projects"]
            else "sees only the project a session names")
    rls = found["row_level_security"]
    out = [f"database: {found['url']}",
           f"server: PostgreSQL {found['server']}, "
           f"pgvector {found['pgvector'] or 'not installed'}",
           f"schema: {schema_line}",
           f"role: {found['role']} ({sees})",
           "row-level security: " + ("on" if rls == "on" else
                                     f"{rls or 'no tables'} (`loremap db secure` turns it on)"),
           f"projects: {len(found['projects'])}"]
    out += [f"  {p['project']}: {count(p['notes'], 'note')}, {count(p['files'], 'file')}, "
            f"last write {p['last_write'] or 'never'}" for p in found["projects"]]
    lines(out)
    return 0


def describe(conn: Conn, url: str) -> dict[str, Any]:
    """What `loremap db status` reports, as a plain dict."""
    version = schema.current_version(conn)
    server, role, superuser, bypass = _one(
        conn, "SELECT current_setting('server_version'), current_user, r.rolsuper, "
              "r.rolbypassrls FROM pg_roles r WHERE r.rolname = current_user")
    vector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                          ).fetchone()
    tables = conn.execute(
        "SELECT c.relrowsecurity, pg_get_userbyid(c.relowner) FROM unnest(%s::text[]) AS t "
        "JOIN pg_class c ON c.oid = to_regclass(t)", (list(schema.TABLES),)).fetchall()
    secured = {bool(row[0]) for row in tables}
    rls = None if not tables else "on" if secured == {True} else \
        "off" if secured == {False} else "partial"
    owners = {row[1] for row in tables}
    return {
        "url": public_url(url),
        "server": server,
        "pgvector": vector[0] if vector else None,
        "schema": {"database": version, "code": len(schema.MIGRATIONS)},
        "role": role,
        "superuser": bool(superuser),
        "sees_all_projects": bool(superuser or bypass or role in owners or rls != "on"),
        "row_level_security": rls,
        "projects": _projects(conn) if version >= 1 else [],
    }


def _projects(conn: Conn) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT p.project, coalesce(n.notes, 0), coalesce(n.files, 0), d.last_write "
        "FROM (SELECT project FROM nodes UNION SELECT project FROM note_docs) AS p "
        "LEFT JOIN (SELECT project, count(*) FILTER (WHERE kind = 'note') AS notes, "
        "count(*) FILTER (WHERE kind = 'file') AS files FROM nodes GROUP BY project) AS n "
        "USING (project) "
        "LEFT JOIN (SELECT project, max(updated_at) AS last_write FROM note_docs "
        "GROUP BY project) AS d USING (project) ORDER BY p.project").fetchall()
    return [{"project": project, "notes": notes, "files": files,
             "last_write": last.isoformat(timespec="seconds") if last else None}
            for project, notes, files, last in rows]


# --- secure ---------------------------------------------------------------------------------


def _secure(conn: Conn, url: str, args: argparse.Namespace) -> int:
    role = args.role
    version, code = schema.current_version(conn), len(schema.MIGRATIONS)
    if version != code:
        raise StoreError(f"the schema is at version {version} and this loremap's is {code}: "
                         + ("upgrade loremap" if version > code else "run `loremap db migrate`")
                         + " before `loremap db secure`")
    me, owner = _one(conn, "SELECT current_user, pg_get_userbyid(relowner) FROM pg_class "
                           "WHERE oid = to_regclass('nodes')")
    if role == me:
        raise InvalidInput(f"--role {role} is the role you connect as: the runtime needs "
                           "another, unprivileged one")
    if role == owner:
        raise InvalidInput(f"{role} owns the tables, and row-level security does not apply to "
                           "a table's owner: choose another --role")
    password = _password(args.password_env)
    created = secure_role(conn, role, password)
    runtime_url = public_url(url, role)
    if args.json:
        emit_json({"role": role, "created": created, "password_set": password is not None,
                   "tables": list(schema.TABLES), "policy": POLICY, "url": runtime_url})
        return 0
    if created and password is None:
        warn([f"{role} has no password: it can log in only where the server trusts the "
              "connection (set one with --password-env VAR)"])
    lines([f"role {role}: {'created' if created else 'updated'}"
           + (f", password from ${args.password_env}" if password is not None else ""),
           f"granted: connect, temporary tables, read and write on "
           f"{count(len(schema.TABLES), 'table')}, read on loremap_migrations, "
           "execute on loremap_vector_index and loremap_analyze",
           f"row-level security on every table (policy {POLICY}): a session sees only the "
           "project it names",
           f"the runtime connects as {role} (its password goes in ~/.pgpass or PGPASSWORD):",
           f"  {_export(runtime_url)}"])
    return 0


def secure_role(conn: Conn, role: str, password: str | None) -> bool:
    """In one transaction: the runtime role made (True) or updated, its grants, row-level
    security on every table (the tests and bench/store.py use it too)."""
    with conn.transaction():
        created = _ensure_role(conn, role, password)
        _grant(conn, role)
        _enable_policies(conn)
    return created


def _password(variable: str | None) -> str | None:
    if variable is None:
        return None
    value = os.environ.get(variable, "")
    if not value:
        raise InvalidInput(f"--password-env {variable}: that environment variable is not set "
                           "or empty")
    return value


def _ensure_role(conn: Conn, role: str, password: str | None) -> bool:
    """Create `role` or bring an existing one back to LOGIN with no privileges; True if new.

    The password is hashed here (libpq's PQencryptPasswordConn, SCRAM by default), so the
    clear text never reaches the server or its statement log.
    """
    from psycopg import sql

    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    query = sql.SQL("{} ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE").format(
        sql.SQL("ALTER" if exists else "CREATE"), sql.Identifier(role))
    if password is not None:
        secret = conn.pgconn.encrypt_password(password.encode(), role.encode())
        query += sql.SQL(" PASSWORD {}").format(sql.Literal(secret.decode()))
    conn.execute(query)
    return exists is None


def _grant(conn: Conn, role: str) -> None:
    """Exactly: connect and temporary tables (bulk writes are staged in one: COPY FROM is
    refused under row-level security), the schema, read and write on the tables, read on the
    migrations, the owner's functions (vector indexes, ANALYZE), the tables' identity
    sequences."""
    from psycopg import sql

    who = sql.Identifier(role)
    tables = sql.SQL(", ").join(sql.Identifier(t) for t in schema.TABLES)
    (namespace,) = _one(conn, "SELECT relnamespace::regnamespace::text FROM pg_class "
                              "WHERE oid = to_regclass('nodes')")
    for statement, names in (
        ("REVOKE ALL ON {}, loremap_migrations FROM {}", (tables, who)),
        ("GRANT CONNECT, TEMPORARY ON DATABASE {} TO {}",
         (sql.Identifier(conn.info.dbname), who)),
        ("GRANT USAGE ON SCHEMA {} TO {}", (sql.Identifier(namespace), who)),
        ("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {}", (tables, who)),
        ("GRANT SELECT ON loremap_migrations TO {}", (who,)),
    ):
        conn.execute(sql.SQL(statement).format(*names))
    for function in schema.FUNCTIONS:
        conn.execute(sql.SQL(f"REVOKE ALL ON FUNCTION {function} FROM {{}}").format(who))
        conn.execute(sql.SQL(f"GRANT EXECUTE ON FUNCTION {function} TO {{}}").format(who))
    sequences = conn.execute(
        "SELECT n.nspname, s.relname FROM pg_depend d "
        "JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S' "
        "JOIN pg_namespace n ON n.oid = s.relnamespace "
        "WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass "
        "AND d.deptype IN ('a', 'i') "
        "AND d.refobjid IN (SELECT to_regclass(t) FROM unnest(%s::text[]) AS t)",
        (list(schema.TABLES),)).fetchall()
    if sequences:
        conn.execute(sql.SQL("GRANT USAGE ON SEQUENCE {} TO {}").format(
            sql.SQL(", ").join(sql.Identifier(ns, name) for ns, name in sequences), who))


def _enable_policies(conn: Conn) -> None:
    """Row-level security on every table, with one policy keyed on the session's project.

    Not FORCEd: the owner, who runs `loremap db migrate`, still sees every project.
    Dropped and recreated, so running `secure` again changes nothing.
    """
    from psycopg import sql

    for table in schema.TABLES:
        name = sql.Identifier(table)
        conn.execute(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(name))
        conn.execute(sql.SQL("DROP POLICY IF EXISTS {} ON {}").format(sql.Identifier(POLICY),
                                                                      name))
        conn.execute(sql.SQL(f"CREATE POLICY {{}} ON {{}} USING (project = {_PROJECT}) "
                             f"WITH CHECK (project = {_PROJECT})").format(
            sql.Identifier(POLICY), name))


# --- local ----------------------------------------------------------------------------------


def _local(args: argparse.Namespace) -> int:
    pgdata = local.data_dir(UserPaths.from_env(os.environ))
    if args.local_action == "start":
        return _local_start(pgdata, args.json)
    if args.local_action == "stop":
        stopped = local.stop(pgdata)
        if args.json:
            emit_json({"stopped": stopped, "data_dir": str(pgdata)})
        else:
            lines([f"stopped the local PostgreSQL server (its data stays in {pgdata})"
                   if stopped else "the local PostgreSQL server was not running"])
        return 0
    if args.local_action == "status":
        found = local.status(pgdata)
        if args.json:
            emit_json(found)
        elif found["running"]:
            lines([f"local PostgreSQL {found['version']}: running (pid {found['pid']}), data in "
                   f"{found['data_dir']}", f"  {_export(found['url'])}"])
        else:
            where = f"data in {pgdata}" if found["initialized"] else "no data yet"
            lines([f"local PostgreSQL {found['version']}: not running ({where}); "
                   "`loremap db local start` starts it"])
        return 0
    raise InvalidInput("`loremap db local` needs an action: start, stop or status")


def _local_start(pgdata: Path, as_json: bool) -> int:
    url = local.start(pgdata)
    with _session(url) as conn, conn.transaction():
        before, after = schema.migrate(conn)
    found = local.status(pgdata)
    if as_json:
        emit_json({**found, "url": url, "schema": {"before": before, "after": after},
                   "export": _export(url)})
        return 0
    lines([f"local PostgreSQL {found['version']}: running (pid {found['pid']}), data in "
           f"{pgdata}; `loremap db local stop` stops it",
           _migrated(before, after),
           "Use it (here, or in your shell's profile):",
           f"  {_export(url)}"])
    return 0
