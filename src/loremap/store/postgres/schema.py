"""The PostgreSQL schema of a shared memory, as ordered migrations in `loremap_migrations`.

One database holds many projects: every table has a `project` column first in its primary key,
and every query of `PostgresStore` names the project (`loremap db secure` adds row-level
security, so a role that forgets to can still read nothing else).

Full-text search keeps its own statistics instead of using `tsvector`: `postings` holds, per
(term, node), the term's count in each of the six columns of the SQLite FTS table (title, body,
tags, symbols, path, content) and the node's length in tokens, and `counters` the number of
nodes and their total length. BM25 is computed from those in SQL with FTS5's formula, so both
stores rank the same analyzer tokens the same way (`ts_rank_cd` has no IDF at all).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loremap.errors import SchemaTooNew

# The tables of a shared memory's index, in the order they are dropped; each has a `project`
# column. (The audit chain's, `AUDIT_TABLES`, are not among them: nothing drops or clears them.)
TABLES = ("vectors", "vector_models", "section_postings", "sections", "postings", "refs",
          "symbols", "files", "edges", "note_versions", "note_docs", "nodes", "counters", "meta")

_M1 = """
CREATE TABLE meta (
    project text NOT NULL, key text NOT NULL, value text NOT NULL,
    PRIMARY KEY (project, key));
CREATE TABLE counters (
    project text NOT NULL, name text NOT NULL, value bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (project, name));
CREATE TABLE nodes (
    project text NOT NULL,
    id text NOT NULL,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    kind text NOT NULL,
    scope text NOT NULL DEFAULT 'project',
    type text,
    title text NOT NULL DEFAULT '',
    body text NOT NULL DEFAULT '',
    path text NOT NULL DEFAULT '',
    status text NOT NULL DEFAULT 'active',
    recorded_at text,
    valid_from text,
    valid_to text,
    superseded_by text,
    commit_sha text,
    files jsonb NOT NULL DEFAULT '[]',
    tags jsonb NOT NULL DEFAULT '[]',
    aliases jsonb NOT NULL DEFAULT '[]',
    file_hashes jsonb NOT NULL DEFAULT '{}',
    content_hash text NOT NULL DEFAULT '',
    mtime_ns bigint NOT NULL DEFAULT 0,
    size bigint NOT NULL DEFAULT 0,
    rank double precision NOT NULL DEFAULT 0,
    doc_len integer NOT NULL DEFAULT 0,
    PRIMARY KEY (project, id));
CREATE INDEX nodes_kind_type ON nodes (project, kind, type, status);
CREATE TABLE postings (
    project text NOT NULL, term text NOT NULL, node text NOT NULL,
    dl integer NOT NULL,
    t0 integer NOT NULL DEFAULT 0, t1 integer NOT NULL DEFAULT 0,
    t2 integer NOT NULL DEFAULT 0, t3 integer NOT NULL DEFAULT 0,
    t4 integer NOT NULL DEFAULT 0, t5 integer NOT NULL DEFAULT 0,
    PRIMARY KEY (project, term, node));
CREATE INDEX postings_node ON postings (project, node);
CREATE TABLE edges (
    project text NOT NULL, src text NOT NULL, dst text NOT NULL, rel text NOT NULL,
    origin text NOT NULL, weight double precision NOT NULL DEFAULT 1.0,
    PRIMARY KEY (project, src, dst, rel, origin));
CREATE INDEX edges_dst ON edges (project, dst);
CREATE INDEX edges_origin ON edges (project, origin);
CREATE TABLE files (
    project text NOT NULL,
    path text NOT NULL,
    module text NOT NULL,
    language text,
    size bigint NOT NULL,
    mtime_ns bigint NOT NULL,
    content_hash text NOT NULL,
    docstring text NOT NULL DEFAULT '',
    imports jsonb NOT NULL DEFAULT '[]',
    subjects jsonb NOT NULL DEFAULT '[]',
    syntax_errors integer NOT NULL DEFAULT 0,
    skip text,
    rank double precision NOT NULL DEFAULT 0,
    name text NOT NULL DEFAULT '',
    PRIMARY KEY (project, path));
CREATE INDEX files_module ON files (project, module);
CREATE INDEX files_name ON files (project, name);
CREATE TABLE symbols (
    project text NOT NULL, file text NOT NULL, name text NOT NULL, kind text NOT NULL,
    line integer NOT NULL);
CREATE INDEX symbols_name ON symbols (project, name);
CREATE INDEX symbols_file ON symbols (project, file);
CREATE TABLE refs (
    project text NOT NULL, file text NOT NULL, name text NOT NULL,
    PRIMARY KEY (project, file, name));
CREATE INDEX refs_name ON refs (project, name);
CREATE TABLE sections (
    project text NOT NULL, id bigint GENERATED ALWAYS AS IDENTITY, file text NOT NULL,
    line integer NOT NULL, dl integer NOT NULL,
    PRIMARY KEY (project, id));
CREATE INDEX sections_file ON sections (project, file);
CREATE TABLE section_postings (
    project text NOT NULL, term text NOT NULL, section bigint NOT NULL,
    tf integer NOT NULL, dl integer NOT NULL,
    PRIMARY KEY (project, term, section));
CREATE INDEX section_postings_section ON section_postings (project, section);
CREATE TABLE vectors (
    project text NOT NULL, id text NOT NULL, model text NOT NULL, dim integer NOT NULL,
    vec vector NOT NULL,
    PRIMARY KEY (project, model, id));
CREATE TABLE note_docs (
    project text NOT NULL,
    id text NOT NULL,
    text text NOT NULL,
    hash text NOT NULL,
    deleted boolean NOT NULL DEFAULT false,
    version integer NOT NULL DEFAULT 1,
    updated_at timestamptz NOT NULL DEFAULT now(),
    updated_by text NOT NULL DEFAULT '',
    PRIMARY KEY (project, id));
CREATE TABLE note_versions (
    project text NOT NULL,
    id text NOT NULL,
    version integer NOT NULL,
    text text NOT NULL,
    hash text NOT NULL,
    deleted boolean NOT NULL,
    updated_at timestamptz NOT NULL,
    updated_by text NOT NULL,
    kept_at timestamptz NOT NULL DEFAULT now(),
    reason text NOT NULL DEFAULT 'replaced',
    PRIMARY KEY (project, id, version, kept_at));
"""


def _m1_initial(conn: Any) -> None:
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    for statement in _M1.split(";"):
        if statement.strip():
            conn.execute(statement)


def _m2_covering_postings(conn: Any) -> None:
    """The postings' primary keys carry the columns BM25 reads, so a search scans the index
    alone (index-only) instead of fetching each posting's row from the table: a common term
    holds thousands of postings, and those fetches were half the time of a search. The table
    is locked while its key is rebuilt (seconds for a 10k-node project)."""
    conn.execute("ALTER TABLE postings DROP CONSTRAINT postings_pkey, ADD PRIMARY KEY "
                 "(project, term, node) INCLUDE (dl, t0, t1, t2, t3, t4, t5)")
    conn.execute("ALTER TABLE section_postings DROP CONSTRAINT section_postings_pkey, ADD "
                 "PRIMARY KEY (project, term, section) INCLUDE (tf, dl)")


# The functions migration 3 makes (`loremap db secure` grants EXECUTE on them).
FUNCTIONS = ("loremap_vector_index(text, text, integer)", "loremap_analyze(text[])")


def _m3_owner_functions(conn: Any) -> None:
    """Two things loremap needs that only the tables' owner may do, as functions that run as
    the owner for a role that is not (the runtime role of `loremap db secure`):

    - `loremap_vector_index(name, model, dim)` builds the HNSW index of one (model, dimension)
      of `vectors`: building an index needs ownership, and the first machine to embed with a
      new model is rarely the owner's;
    - `loremap_analyze(tables)` runs ANALYZE on loremap's tables after a bulk write (see
      `PostgresStore._analyze`): ANALYZE needs ownership too.

    SECURITY DEFINER, so: a search path of pg_catalog and pg_temp only (every name inside is
    schema-qualified), an index name that must look like loremap's, a dimension pgvector can
    index, the model quoted as a literal, only loremap's tables analyzed, and EXECUTE revoked
    from PUBLIC.
    """
    from psycopg import sql

    (tables,) = conn.execute("SELECT relnamespace::regnamespace::text FROM pg_class "
                             "WHERE oid = to_regclass('vectors')").fetchone()
    (extension,) = conn.execute("SELECT extnamespace::regnamespace::text FROM pg_extension "
                                "WHERE extname = 'vector'").fetchone()
    tables, extension = tables.replace("%", "%%"), extension.replace("%", "%%")  # format()'s
    create = (f"CREATE INDEX IF NOT EXISTS %I ON {tables}.vectors USING hnsw "
              f"((vec::{extension}.vector(%s)) {extension}.vector_cosine_ops) "
              "WHERE model = %L AND dim = %s")
    header = ("RETURNS void LANGUAGE plpgsql SECURITY DEFINER "
              "SET search_path = pg_catalog, pg_temp AS $body$ ")
    conn.execute(sql.SQL(
        "CREATE FUNCTION loremap_vector_index(name text, model text, dim integer) " + header +
        "BEGIN "
        "IF name !~ '^vectors_hnsw_[0-9a-f]{{12}}$' OR dim NOT BETWEEN 1 AND 2000 THEN "
        "RAISE EXCEPTION 'loremap_vector_index: no index % of % dimensions', name, dim; "
        "END IF; "
        "EXECUTE format({}, name, dim, model, dim); "
        "END $body$").format(sql.Literal(create)))
    _analyze_function(conn, "CREATE", TABLES)
    for function in FUNCTIONS:
        conn.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")


def _analyze_function(conn: Any, verb: str, allowed: tuple[str, ...]) -> None:
    """`loremap_analyze(tables)`: ANALYZE, as the owner, of the tables in `allowed` only."""
    from psycopg import sql

    (schema,) = conn.execute("SELECT relnamespace::regnamespace::text FROM pg_class "
                             "WHERE oid = to_regclass('vectors')").fetchone()
    schema = schema.replace("%", "%%")  # format()'s
    conn.execute(sql.SQL(
        verb + " FUNCTION loremap_analyze(tables text[]) RETURNS void LANGUAGE plpgsql "
        "SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $body$ "
        "DECLARE t text; BEGIN "
        "FOREACH t IN ARRAY tables LOOP "
        "IF NOT t = ANY ({}) THEN "
        "RAISE EXCEPTION 'loremap_analyze: % is not a table of loremap', t; "
        "END IF; "
        "EXECUTE format({}, t); "
        "END LOOP; "
        "END $body$").format(sql.Literal(list(allowed)), sql.Literal(f"ANALYZE {schema}.%I")))


_M4 = """
ALTER TABLE vectors ADD COLUMN chunk integer NOT NULL DEFAULT 0;
ALTER TABLE vectors DROP CONSTRAINT vectors_pkey, ADD PRIMARY KEY (project, model, id, chunk);
CREATE INDEX vectors_node ON vectors (project, id);
CREATE TABLE vector_models (
    project text NOT NULL, model text NOT NULL, dim integer NOT NULL,
    PRIMARY KEY (project, model));
INSERT INTO vector_models (project, model, dim)
    SELECT project, model, min(dim) FROM vectors GROUP BY project, model
    HAVING count(DISTINCT dim) = 1;
DELETE FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM vector_models m
    WHERE m.project = v.project AND m.model = v.model)
"""


def _m4_vector_chunks(conn: Any) -> None:
    """Vectors by chunk (a long node is embedded in parts and scores as its best one), the
    node's id indexed (a rewritten node drops its vectors by id), and each project's model
    dimensions recorded in `vector_models`, so vectors of another dimension are refused
    instead of mixed. Existing vectors become chunk 0; those of a model stored with mixed
    dimensions are dropped, to be embedded again. The HNSW indexes are unchanged: they are
    per (model, dimension), whatever the chunk."""
    for statement in _M4.split(";"):
        if statement.strip():
            conn.execute(statement)


def _m5_track_record_and_errors(conn: Any) -> None:
    """As SQLite's migration 5: a procedure's track record (`successes`, `failures`) and an
    error note's `signature`, `remedy` and `command` on its node."""
    conn.execute("ALTER TABLE nodes ADD COLUMN successes integer NOT NULL DEFAULT 0, "
                 "ADD COLUMN failures integer NOT NULL DEFAULT 0, "
                 "ADD COLUMN signature text NOT NULL DEFAULT '', ADD COLUMN remedy text, "
                 "ADD COLUMN command text")
    conn.execute("CREATE INDEX nodes_signature ON nodes (project, signature) "
                 "WHERE signature <> ''")
    conn.execute("CREATE INDEX nodes_command ON nodes (project, command) "
                 "WHERE command IS NOT NULL")


# The audit chain's tables (never dropped nor cleared: they are not derived) and what the
# runtime role of `loremap db secure` may do on each: append and read; a payload also goes
# when an erasure of its note is recorded before it (the trigger checks it).
AUDIT_TABLES = {"audit_log": ("SELECT", "INSERT"),
                "audit_payloads": ("SELECT", "INSERT", "DELETE")}
AUDIT_MAINTENANCE = "loremap.audit_maintenance"


def _m6_audit(conn: Any) -> None:
    """The audit chain (`audit/chain.py`): `audit_log`, one row per record keyed by (project,
    seq), and `audit_payloads`, each record's erasable title and detail with their salt.

    Append-only for everyone: the runtime role is granted no UPDATE or DELETE on `audit_log`
    (`admin.grant`), row-level security gives it no policy for them, and a trigger refuses
    UPDATE, DELETE and TRUNCATE even to the owner and superusers unless the session says
    `SET loremap.audit_maintenance = on` (a setting any role may set, which is why the grants
    and policies are what bind the runtime role). A payload may be deleted once a later
    `erase` record of its note is in the chain, and changed never. The trigger functions name
    the tables with their schema: they run as the caller, whose temporary tables come first
    in the search path.
    """
    from psycopg import sql

    from loremap.audit.chain import COLUMNS

    columns = ", ".join(f"{c} {'bigint' if c == 'seq' else 'text'} NOT NULL" for c in COLUMNS)
    conn.execute(f"CREATE TABLE audit_log ({columns}, PRIMARY KEY (project, seq))")
    conn.execute("CREATE INDEX audit_log_note ON audit_log (project, note, seq)")
    conn.execute("CREATE INDEX audit_log_at ON audit_log (project, at)")
    conn.execute("CREATE TABLE audit_payloads (project text NOT NULL, seq bigint NOT NULL, "
                 "salt text NOT NULL, payload text NOT NULL, PRIMARY KEY (project, seq))")
    (schema,) = conn.execute("SELECT relnamespace::regnamespace::text FROM pg_class "
                             "WHERE oid = to_regclass('audit_log')").fetchone()
    maintenance = sql.Literal(AUDIT_MAINTENANCE)
    header = "RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $body$ "
    refuse = ("RAISE EXCEPTION 'loremap: % on % refused: the audit log is append-only (for "
              "maintenance: SET {} = on)', TG_OP, TG_TABLE_NAME "
              "USING ERRCODE = 'insufficient_privilege'; ")
    conn.execute(sql.SQL(
        "CREATE FUNCTION loremap_audit_append_only() " + header +
        "BEGIN IF current_setting({}, true) = 'on' THEN "
        "RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END; END IF; " + refuse +
        "END $body$").format(maintenance, sql.SQL(AUDIT_MAINTENANCE)))
    conn.execute(sql.SQL(
        "CREATE FUNCTION loremap_audit_payload_kept() " + header +
        "BEGIN IF current_setting({}, true) = 'on' THEN "
        "RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END; END IF; "
        "IF TG_OP = 'DELETE' AND EXISTS (SELECT 1 FROM {}.audit_log r JOIN {}.audit_log e "
        "ON e.project = r.project AND e.note = r.note AND e.op = 'erase' AND e.seq > r.seq "
        "WHERE r.project = OLD.project AND r.seq = OLD.seq) THEN RETURN OLD; END IF; "
        + refuse + "END $body$").format(maintenance, sql.Identifier(schema),
                                         sql.Identifier(schema), sql.SQL(AUDIT_MAINTENANCE)))
    for table, function in (("audit_log", "loremap_audit_append_only"),
                            ("audit_payloads", "loremap_audit_payload_kept")):
        conn.execute(f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                     f"FOR EACH ROW EXECUTE FUNCTION {function}()")
        conn.execute(f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
                     f"FOR EACH STATEMENT EXECUTE FUNCTION {function}()")


def _m7_erased_tombstones(conn: Any) -> None:
    """A tombstone says whether the note was erased (`forget --erase`): its texts are gone
    from the database, and every clone that syncs erases its own copy, edited or not."""
    conn.execute("ALTER TABLE note_docs ADD COLUMN erased boolean NOT NULL DEFAULT false")


# The tables the runtime role may have the owner ANALYZE (`loremap_analyze`, migration 8):
# the index's and the audit chain's erasable payloads, whose statistics an erasure must
# refresh (`PostgresStore.compact`); never the chain's own records.
ANALYZED = (*TABLES, "audit_payloads")


def _m8_analyze_audit_payloads(conn: Any) -> None:
    """`loremap_analyze` accepts `audit_payloads` too: after an erasure the runtime role has
    its statistics sampled again, so `pg_statistic` drops the erased payloads' values (a
    replaced function keeps its owner and the EXECUTE `loremap db secure` granted)."""
    _analyze_function(conn, "CREATE OR REPLACE", ANALYZED)


MIGRATIONS: tuple[Callable[[Any], None], ...] = (_m1_initial, _m2_covering_postings,
                                                 _m3_owner_functions, _m4_vector_chunks,
                                                 _m5_track_record_and_errors, _m6_audit,
                                                 _m7_erased_tombstones,
                                                 _m8_analyze_audit_payloads)


def current_version(conn: Any) -> int:
    """The schema version of the database (0 for one loremap never touched); a read."""
    row = conn.execute("SELECT to_regclass('loremap_migrations')").fetchone()
    if row is None or row[0] is None:
        return 0
    row = conn.execute("SELECT max(version) FROM loremap_migrations").fetchone()
    return int(row[0] or 0)


def migrate(conn: Any) -> tuple[int, int]:
    """Apply pending migrations inside the caller's transaction; (version before, after).

    A transaction-scoped advisory lock makes two machines migrating at once take turns.
    """
    conn.execute("SELECT pg_advisory_xact_lock(hashtext('loremap.migrate'))")
    if current_version(conn) == 0:  # (an up-to-date database needs no privilege to say so)
        conn.execute("CREATE TABLE IF NOT EXISTS loremap_migrations (version integer PRIMARY "
                     "KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
    before = current_version(conn)
    if before > len(MIGRATIONS):
        raise SchemaTooNew(
            f"the database has schema version {before}, newer than this loremap knows "
            f"({len(MIGRATIONS)}); upgrade loremap")
    for number, step in enumerate(MIGRATIONS[before:], start=before + 1):
        step(conn)
        conn.execute("INSERT INTO loremap_migrations (version, name) VALUES (%s, %s)",
                     (number, step.__name__.lstrip("_")))
    return before, len(MIGRATIONS)
