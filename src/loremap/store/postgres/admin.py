"""Administration of a shared database: the schema's migration (with the runtime roles' grants
renewed), what `loremap db status` reports, and row-level security (`loremap db secure`: the
runtime role, its grants, one policy per table keyed on the session's project).

The CLI (`cli/commands/db.py`) parses arguments and prints; the database work is here, beside
the schema it administers, so the tests and `bench/store.py` secure a database the way the
command does. Every function takes an autocommit connection (`session`) and runs its
statements in one transaction.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from loremap.errors import InvalidInput, SchemaTooNew, StoreError
from loremap.store.postgres import INSTALL_HINT, first_line, schema

if TYPE_CHECKING:
    from psycopg import Connection

    Conn = Connection[tuple[Any, ...]]

POLICY = "loremap_project"
_PROJECT = "current_setting('loremap.project', true)"


@contextlib.contextmanager
def session(url: str) -> Iterator[Conn]:
    """An autocommit connection to `url`; any database error inside becomes one line."""
    try:
        import psycopg
    except ImportError:
        raise StoreError(f"the shared memory needs psycopg: {INSTALL_HINT}") from None
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


# --- migrate and status ---------------------------------------------------------------------


class Migrated(NamedTuple):
    """The schema version before and after a migration, and the runtime roles whose grants
    and policies it renewed."""

    before: int
    after: int
    renewed_roles: list[str]


def migrate(conn: Conn) -> Migrated:
    """Migrate; on a secured database, in the same transaction, renew the runtime roles'
    grants and the policies, so what the new schema added (a table, a function) is theirs
    too without running `secure` again. A role that may not migrate is told who may."""
    import psycopg

    try:
        with conn.transaction():
            before, after = schema.migrate(conn)
            roles = runtime_roles(conn) if after != before else []
            for role in roles:
                grant(conn, role)
            if roles:
                enable_policies(conn)
    except psycopg.errors.InsufficientPrivilege as exc:
        owner = conn.execute("SELECT pg_get_userbyid(relowner) FROM pg_class "
                             "WHERE oid = to_regclass('nodes')").fetchone()
        who = f"the tables' owner ({owner[0]})" if owner and owner[0] else \
            "a role that may create tables and the extension vector"
        raise StoreError(f"the database refused: {first_line(exc)}; run `loremap db migrate` "
                         f"as {who}") from None
    return Migrated(before, after, roles)


def runtime_roles(conn: Conn) -> list[str]:
    """The roles that may write `nodes` without owning it: those `secure` made."""
    rows = conn.execute(
        "SELECT DISTINCT r.rolname FROM pg_class c, aclexplode(c.relacl) a "
        "JOIN pg_roles r ON r.oid = a.grantee WHERE c.oid = to_regclass('nodes') "
        "AND a.privilege_type = 'INSERT' AND a.grantee <> c.relowner ORDER BY 1").fetchall()
    return [row[0] for row in rows]


def status(conn: Conn) -> dict[str, Any]:
    """What `loremap db status` reports (but the URL), as a plain dict."""
    version = schema.current_version(conn)
    server, role, superuser, bypass = _one(
        conn, "SELECT current_setting('server_version'), current_user, r.rolsuper, "
              "r.rolbypassrls FROM pg_roles r WHERE r.rolname = current_user")
    vector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                          ).fetchone()
    tables = conn.execute(
        "SELECT c.relrowsecurity, pg_get_userbyid(c.relowner) FROM unnest(%s::text[]) AS t "
        "JOIN pg_class c ON c.oid = to_regclass(t)",
        ([*schema.TABLES, *schema.AUDIT_TABLES],)).fetchall()
    secured = {bool(row[0]) for row in tables}
    rls = None if not tables else "on" if secured == {True} else \
        "off" if secured == {False} else "partial"
    owners = {row[1] for row in tables}
    return {
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


def secure(conn: Conn, role: str, password: str | None) -> bool:
    """`loremap db secure`: refuse a schema out of step, the connecting role and the tables'
    owner (row-level security binds neither), then `secure_role`. True if the role is new."""
    version, code = schema.current_version(conn), len(schema.MIGRATIONS)
    if version != code:
        error = SchemaTooNew if version > code else StoreError
        raise error(f"the schema is at version {version} and this loremap's is {code}: "
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
    return secure_role(conn, role, password)


def secure_role(conn: Conn, role: str, password: str | None) -> bool:
    """In one transaction: the runtime role made (True) or updated, its grants, row-level
    security on every table (the tests and bench/store.py use it too)."""
    with conn.transaction():
        created = ensure_role(conn, role, password)
        grant(conn, role)
        enable_policies(conn)
    return created


def ensure_role(conn: Conn, role: str, password: str | None) -> bool:
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


def grant(conn: Conn, role: str) -> None:
    """Exactly: connect and temporary tables (bulk writes are staged in one: COPY FROM is
    refused under row-level security), the schema, read and write on the index's tables, read
    and append on the audit chain's (`schema.AUDIT_TABLES`: never UPDATE, never DELETE of a
    record), read on the migrations, the owner's functions (vector indexes, ANALYZE), the
    tables' identity sequences."""
    from psycopg import sql

    who = sql.Identifier(role)
    tables = sql.SQL(", ").join(sql.Identifier(t) for t in schema.TABLES)
    audit = sql.SQL(", ").join(sql.Identifier(t) for t in schema.AUDIT_TABLES)
    (namespace,) = _one(conn, "SELECT relnamespace::regnamespace::text FROM pg_class "
                              "WHERE oid = to_regclass('nodes')")
    for statement, names in (
        ("REVOKE ALL ON {}, {}, loremap_migrations FROM {}", (tables, audit, who)),
        ("GRANT CONNECT, TEMPORARY ON DATABASE {} TO {}",
         (sql.Identifier(conn.info.dbname), who)),
        ("GRANT USAGE ON SCHEMA {} TO {}", (sql.Identifier(namespace), who)),
        ("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {}", (tables, who)),
        ("GRANT SELECT ON loremap_migrations TO {}", (who,)),
    ):
        conn.execute(sql.SQL(statement).format(*names))
    for table, privileges in schema.AUDIT_TABLES.items():
        conn.execute(sql.SQL(f"GRANT {', '.join(privileges)} ON {{}} TO {{}}").format(
            sql.Identifier(table), who))
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


def enable_policies(conn: Conn) -> None:
    """Row-level security on every table, with one policy keyed on the session's project; on
    the audit chain's tables, one per command it may run (`schema.AUDIT_TABLES`), so an
    UPDATE or a DELETE of a record finds no row even were it granted.

    Not FORCEd: the owner, who runs `loremap db migrate`, still sees every project.
    Dropped and recreated, so running `secure` again changes nothing.
    """
    from psycopg import sql

    for table in (*schema.TABLES, *schema.AUDIT_TABLES):
        name = sql.Identifier(table)
        conn.execute(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(name))
        commands = schema.AUDIT_TABLES.get(table, ("ALL",))
        for command in dict.fromkeys(("ALL", *commands)):
            conn.execute(sql.SQL("DROP POLICY IF EXISTS {} ON {}").format(
                sql.Identifier(_policy(command)), name))
        for command in commands:
            using = "" if command == "INSERT" else f" USING (project = {_PROJECT})"
            check = "" if command in ("SELECT", "DELETE") else \
                f" WITH CHECK (project = {_PROJECT})"
            conn.execute(sql.SQL(f"CREATE POLICY {{}} ON {{}} FOR {command}{using}{check}"
                                 ).format(sql.Identifier(_policy(command)), name))


def _policy(command: str) -> str:
    """The policy of `command` on a table: `loremap_project` for all of them."""
    return POLICY if command == "ALL" else f"{POLICY}_{command.lower()}"
