"""`loremap db migrate|status|secure|local start|stop|status`: the shared PostgreSQL memory's
schema, health and access, and a local server for those who have none (docs/postgres.md).

The database is the one of the `store.url` setting (`LOREMAP_DATABASE_URL`). Every database
error becomes one line; passwords are never printed.
"""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

from loremap.cli.output import count, emit_json, lines, warn
from loremap.config import UserPaths, project_settings
from loremap.errors import InvalidInput
from loremap.store.postgres import admin, local, schema

if TYPE_CHECKING:
    from loremap.store.postgres.admin import Conn


def run(args: argparse.Namespace) -> int:
    if args.action == "local":
        return _local(args)
    if args.local_action is not None:
        raise InvalidInput(f"`{args.local_action}` goes with `local`: "
                           f"`loremap db local {args.local_action}`")
    url = _database_url()
    with admin.session(url) as conn:
        if args.action == "migrate":
            return _migrate(conn, args.json)
        if args.action == "status":
            return _status(conn, url, args.json)
        return _secure(conn, url, args)


def _database_url() -> str:
    url = project_settings(Path.cwd(), os.environ).get_str("store.url")
    if not url:
        raise InvalidInput("no database: set LOREMAP_DATABASE_URL (or `url` under [store] in "
                           ".loremap/config.toml), or run `loremap db local start`")
    return url


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
    """Migrate (on a secured database the runtime roles' grants are renewed with it)."""
    done = admin.migrate(conn)
    if as_json:
        emit_json(done._asdict())
    else:
        lines([_migrated(done.before, done.after)]
              + [f"role {role}: grants renewed for schema {done.after}"
                 for role in done.renewed_roles])
    return 0


def _migrated(before: int, after: int) -> str:
    return f"schema {before} -> {after}" if before != after else f"schema {after} (up to date)"


def _status(conn: Conn, url: str, as_json: bool) -> int:
    found = {"url": public_url(url), **admin.status(conn)}
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


# --- secure ---------------------------------------------------------------------------------


def _secure(conn: Conn, url: str, args: argparse.Namespace) -> int:
    role = args.role
    password = _password(args.password_env)
    created = admin.secure(conn, role, password)
    runtime_url = public_url(url, role)
    if args.json:
        emit_json({"role": role, "created": created, "password_set": password is not None,
                   "tables": [*schema.TABLES, *schema.AUDIT_TABLES], "policy": admin.POLICY,
                   "url": runtime_url})
        return 0
    if created and password is None:
        warn([f"{role} has no password: it can log in only where the server trusts the "
              "connection (set one with --password-env VAR)"])
    lines([f"role {role}: {'created' if created else 'updated'}"
           + (f", password from ${args.password_env}" if password is not None else ""),
           f"granted: connect, temporary tables, read and write on "
           f"{count(len(schema.TABLES), 'table')}, read and append on the audit chain's "
           f"{len(schema.AUDIT_TABLES)}, read on loremap_migrations, "
           "execute on loremap_vector_index and loremap_analyze",
           f"row-level security on every table (policy {admin.POLICY}): a session sees only the "
           "project it names",
           f"the runtime connects as {role} (its password goes in ~/.pgpass or PGPASSWORD):",
           f"  {_export(runtime_url)}"])
    return 0


def _password(variable: str | None) -> str | None:
    if variable is None:
        return None
    value = os.environ.get(variable, "")
    if not value:
        raise InvalidInput(f"--password-env {variable}: that environment variable is not set "
                           "or empty")
    return value


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
    with admin.session(url) as conn:
        before, after, _ = admin.migrate(conn)
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
