"""The shared index: PostgreSQL (+ pgvector), many projects in one database.

Every row carries the project's key and every query names it. Writes run in one transaction
that first takes a transaction-scoped advisory lock on the project, so writers of one project
take turns as they do on SQLite (`BEGIN IMMEDIATE`) and an id is never allocated twice by two
machines; readers never wait. A connection lost mid-transaction rolls back on the server; the
store says so in one line and reconnects on the next call. A connection lost during COMMIT is
ambiguous (the server may have committed before its answer was lost): the store reconnects and
asks the server (`pg_xact_status` of the transaction's id) instead of guessing.

Many rows go in by COPY. PostgreSQL refuses COPY FROM into a table whose row-level security
binds the session (the runtime role of `loremap db secure`): there they are copied into a
temporary table of the session, then moved by one INSERT ... SELECT, which the policy checks.

Notes of the project also keep their markdown in `note_docs` (the sync's record: text, hash,
version, who wrote it when, tombstones) and the texts they replaced in `note_versions`.
Personal notes never enter a shared database.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import psycopg
from psycopg.types.json import Jsonb

from loremap.errors import IndexLocked, SchemaTooNew, StoreError
from loremap.model import Edge, IndexedNote, Note, NoteStamp
from loremap.model.search import Filters
from loremap.store.postgres import first_line, schema
from loremap.store.postgres.code import PgCodeTables
from loremap.store.postgres.search import PgSearchTables, where
from loremap.store.postgres.vectors import PgVectorTables
from loremap.store.rows import ERROR_COLUMNS, NOTE_COLUMNS, ErrorRow, error_keys, error_row
from loremap.text import Analyzer


class SharedDoc(NamedTuple):
    """A note's markdown as the shared database holds it (`deleted`: a tombstone)."""

    id: str
    text: str
    hash: str
    deleted: bool
    version: int
    updated_at: str  # ISO 8601, UTC
    updated_by: str
    erased: bool = False  # a tombstone of `forget --erase`: no text, and every clone erases it


class KeptVersion(NamedTuple):
    """A text a note had before it was replaced (or deleted), and why it was kept."""

    version: int
    hash: str
    deleted: bool
    updated_at: str
    updated_by: str
    kept_at: str
    reason: str
    text: str


def column_counts(columns: Sequence[str]) -> tuple[dict[str, list[int]], int]:
    """term -> its count in each column, and the total length in tokens, of texts that are
    analyzer tokens joined by spaces (what FTS5 would index)."""
    counts: dict[str, list[int]] = {}
    total = 0
    for index, text in enumerate(columns):
        words = text.split()
        total += len(words)
        for term, n in Counter(words).items():
            counts.setdefault(term, [0] * len(columns))[index] = n
    return counts, total


def describe(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "the database (an unreadable URL)"
    host = info.get("host") or "localhost"
    return f"{info.get('user') or ''}@{host}/{info.get('dbname') or ''}".lstrip("@")


class PostgresStore(PgCodeTables, PgSearchTables, PgVectorTables):
    """`Store` (and the search and code-map operations) on a shared PostgreSQL database."""

    shared = True
    # The walk reads the edges of this many nodes per statement: each read is a round trip.
    # 16 rather than 8: a recall sends 19 statements instead of 22 on Django's code alone, 14
    # instead of 15 on bench/store.py's 10k corpus, and is no slower on a local socket
    # (within this machine's noise); over a network each statement saved is a round trip.
    edge_batch = 16
    # A write that adds this many rows is followed by ANALYZE of the tables it filled.
    analyze_after_rows = 20_000

    def __init__(self, url: str, project: str, analyzer: Analyzer, busy_timeout_ms: int = 5000,
                 writer: str = "", connect_timeout_s: int = 10) -> None:
        if not project:
            raise StoreError("a shared database needs a project key (store.project)")
        self.url = url
        self.project = project
        self.analyzer = analyzer
        self.busy_timeout_ms = busy_timeout_ms
        self.writer = writer
        self.connect_timeout_s = max(2, connect_timeout_s)  # libpq's least
        self.location = f"{describe(url)} (project {project})"
        self._in_write = False
        self._filled: Counter[str] = Counter()  # rows copied into each table by this write
        self.conn: Any = None
        self._bound = False  # row-level security binds this write: COPY through a stage
        self._staged: set[str] = set()  # tables with a temporary stage in this session
        self._connect()
        version = schema.current_version(self.conn)
        if version != len(schema.MIGRATIONS):
            self.close()
            if version > len(schema.MIGRATIONS):
                raise SchemaTooNew(f"{self.location} has schema version {version}, newer than "
                                 f"this loremap knows ({len(schema.MIGRATIONS)}); upgrade loremap")
            raise StoreError(f"{describe(url)} has schema version {version}, this loremap needs "
                             f"{len(schema.MIGRATIONS)}: run `loremap db migrate`")

    def _connect(self) -> None:
        try:
            self.conn = psycopg.connect(self.url, autocommit=True,
                                        connect_timeout=self.connect_timeout_s,
                                        application_name="loremap")
            self.conn.execute("SELECT set_config('loremap.project', %s, false)",
                              (self.project,))
            self.conn.execute("SET hnsw.iterative_scan = relaxed_order")
            self._staged.clear()
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {describe(self.url)}: {first_line(exc)}") from None

    def _alive(self) -> None:
        """Reconnect when the connection was lost (a server restart, a dropped network)."""
        if self.conn is None or self.conn.closed or self.conn.broken:
            with contextlib.suppress(Exception):
                if self.conn is not None:
                    self.conn.close()
            self._connect()

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        """One transaction holding the project's write lock; `IndexLocked` after
        busy_timeout, `StoreError` (and nothing written) when the connection is lost before
        COMMIT. Lost during COMMIT, the answer is looked up (`_lost_commit`): a write that
        landed returns normally."""
        if self._in_write:
            raise StoreError("nested write transaction")  # pragma: no cover - a bug
        self._alive()
        self._filled.clear()
        xid = ""  # the transaction's id, set once the body is done and COMMIT is on its way
        try:
            with self.conn.transaction():
                self._in_write = True
                try:
                    begun = self._begin()
                    yield
                    xid = begun
                except BaseException:
                    self._staged.clear()  # stages made by this transaction are rolled back
                    raise
                finally:
                    self._in_write = False
        except psycopg.OperationalError as exc:
            if not xid:  # lost before COMMIT: the server rolls the transaction back
                raise StoreError(f"lost the connection to {describe(self.url)} "
                                 f"({first_line(exc)}); nothing was written to the database, "
                                 "try again") from None
            self._lost_commit(xid, exc)
        except psycopg.errors.InsufficientPrivilege as exc:
            raise StoreError(f"{self.location}: {first_line(exc)}; nothing was written (the "
                             "database's owner runs `loremap db secure` to grant loremap's "
                             "runtime role what it needs)") from None
        if sum(self._filled.values()) >= self.analyze_after_rows:
            self._analyze(sorted({*self._filled, "nodes", "files"}))

    def _begin(self) -> str:
        """SET LOCAL lock_timeout, see whether row-level security binds the session now
        (`secure` may have turned it on since it connected), take the project's lock; return
        the transaction's id (one round trip with the first two)."""
        row = self.conn.execute(
            "SELECT set_config('lock_timeout', %s, true), "
            "row_security_active(to_regclass('postings')), pg_current_xact_id()::text",
            (str(int(self.busy_timeout_ms)),)).fetchone()
        self._bound = bool(row[1])
        try:
            self.conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))",
                              ("loremap:" + self.project,))
        except psycopg.errors.LockNotAvailable:
            raise IndexLocked(
                f"{self.location} is locked by another writer (waited "
                f"{self.busy_timeout_ms / 1000:g} s, index.busy_timeout_ms); try "
                "again") from None
        return str(row[2])

    def _lost_commit(self, xid: str, exc: psycopg.OperationalError) -> None:
        """Trigger: the connection broke while COMMIT was on its way.
        Why: the server may have committed before the answer was lost; "nothing was written"
          would then be false, and the caller would undo (or redo) a write that landed.
        Outcome: reconnect and ask the server what became of the transaction: committed,
          return normally; aborted (or unknown to it), "nothing was written"; no answer, say
          that it is unknown."""
        where = describe(self.url)
        try:
            self._alive()
            status = self.conn.execute("SELECT pg_xact_status(%s::xid8)", (xid,)).fetchone()[0]
        except (StoreError, psycopg.Error):
            status = None
        if status == "committed":
            return
        if status == "aborted":
            raise StoreError(f"lost the connection to {where} during COMMIT "
                             f"({first_line(exc)}); the database did not commit it: nothing "
                             "was written to the database, try again") from None
        raise StoreError(f"lost the connection to {where} during COMMIT ({first_line(exc)}) "
                         "and could not learn whether it landed: the database may hold this "
                         "write; run the command again once the database answers (a repeated "
                         "write is recognised)") from None

    def _analyze(self, tables: Sequence[str]) -> None:
        """ANALYZE `tables` after a bulk write has committed.

        Trigger: a write that added many rows (a project's first code index, a reindex).
        Why: until autovacuum analyzes them (a minute or more later), the planner's statistics
          may not know this project at all: it then expects one row of it, and single-key
          lookups and deletes pick an index that walks the whole project (a full re-index
          right after a first one took minutes instead of seconds).
        Outcome: statistics that know the project as soon as the write is done, through the
          owner's `loremap_analyze` (ANALYZE needs the tables' owner; the runtime role of
          `loremap db secure` is not); another ANALYZE of a table is waited for at most
          busy_timeout; a failure here costs only speed, so it is not reported.
        """
        with contextlib.suppress(psycopg.Error), self.conn.transaction():
            self.conn.execute(f"SET LOCAL lock_timeout = {int(self.busy_timeout_ms)}")
            self.conn.execute("SELECT loremap_analyze(%s::text[])", (list(tables),))

    def execute(self, sql: str, params: Sequence[object] | None = None) -> Any:
        """Run one statement (a read outside `write()`), reconnecting once if the connection
        was lost since the last call."""
        if not self._in_write:
            self._alive()
        try:
            return self.conn.execute(sql, params)
        except psycopg.OperationalError as exc:
            if self._in_write:
                raise
            raise StoreError(f"lost the connection to {describe(self.url)} ({first_line(exc)}); "
                             "try again") from None
        except psycopg.errors.InsufficientPrivilege as exc:
            if self._in_write:
                raise
            raise StoreError(f"{self.location}: {first_line(exc)} (the database's owner runs "
                             "`loremap db secure` to grant loremap's runtime role what it "
                             "needs)") from None

    def copy_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[object]]
                  ) -> None:
        """Insert many rows with COPY (inside `write()`), `project` prepended to each; through
        a temporary stage when row-level security binds the session (see the module's doc)."""
        cols = ", ".join(("project", *columns))
        target = self._stage(table) if self._bound else table
        count = 0
        with self.conn.cursor() as cur, cur.copy(f"COPY {target} ({cols}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row((self.project, *row))
                count += 1
        if target != table and count:  # (no parameters: both go in one round trip)
            self.conn.execute(f"INSERT INTO {table} ({cols}) OVERRIDING SYSTEM VALUE "
                              f"SELECT {cols} FROM {target}; TRUNCATE {target}")
        self._filled[table] += count

    def _stage(self, table: str) -> str:
        """The session's temporary table with `table`'s columns and no constraints, made on
        first use, empty between moves.

        TRUNCATE, not DELETE, empties it: a temporary table is never vacuumed, and a code
        index moves thousands of batches in one transaction, each of which would scan the
        dead rows of all the batches before it (Django's code map: 132 s instead of 31 s).
        (`OVERRIDING SYSTEM VALUE`: COPY sets identity columns too, the INSERT must as well.)
        """
        stage = f"loremap_stage_{table}"
        if table not in self._staged:
            self.conn.execute(f"CREATE TEMPORARY TABLE IF NOT EXISTS {stage} AS "
                              f"SELECT * FROM {table} WITH NO DATA")
            self._staged.add(table)
        return stage

    def schema_version(self) -> int:
        return schema.current_version(self.conn)

    def clear(self) -> None:
        """Drop this project's rows (its notes' shared texts and versions stay: they are the
        record the index is rebuilt from)."""
        for table in schema.TABLES:
            if table not in ("note_docs", "note_versions"):
                self.execute(f"DELETE FROM {table} WHERE project = %s", (self.project,))

    def bump(self, name: str, delta: int) -> None:
        if delta:
            self.execute(
                "INSERT INTO counters (project, name, value) VALUES (%s, %s, %s) "
                "ON CONFLICT (project, name) DO UPDATE SET value = counters.value + "
                "EXCLUDED.value", (self.project, name, delta))

    def counter(self, name: str) -> int:
        row = self.execute("SELECT value FROM counters WHERE project = %s AND name = %s",
                           (self.project, name)).fetchone()
        return int(row[0]) if row else 0

    # --- nodes and their postings -----------------------------------------------------------

    def put_node(self, node_id: str, kind: str, columns: Sequence[str],
                 fields: dict[str, object]) -> None:
        """Insert or replace one node with its postings (`columns`: the six FTS columns as
        analyzer tokens). A replaced node keeps its `seq` (SQLite keeps its rowid)."""
        counts, total = column_counts(columns)
        old = self.execute("SELECT doc_len, title, body FROM nodes WHERE project = %s AND "
                           "id = %s", (self.project, node_id)).fetchone()
        names = ["kind", "doc_len", *fields]
        values = [kind, total, *(_param(v) for v in fields.values())]
        if old is None:
            self.execute(
                f"INSERT INTO nodes (project, id, {', '.join(names)}) VALUES "
                f"({', '.join(['%s'] * (len(names) + 2))})", (self.project, node_id, *values))
            self.bump("nodes", 1)
        else:
            self.execute(
                f"UPDATE nodes SET {', '.join(f'{n} = %s' for n in names)} "
                "WHERE project = %s AND id = %s", (*values, self.project, node_id))
            self.execute("DELETE FROM postings WHERE project = %s AND node = %s",
                         (self.project, node_id))
            # A note's vectors are of its title and body: a change of anything else keeps
            # them (a code file's text is read from the working tree: always dropped).
            if kind != "note" or (old[1], old[2]) != (fields.get("title"), fields.get("body")):
                self.execute("DELETE FROM vectors WHERE project = %s AND id = %s",
                             (self.project, node_id))
        self.bump("tokens", total - (int(old[0]) if old else 0))
        self.copy_rows("postings", ("term", "node", "dl", "t0", "t1", "t2", "t3", "t4", "t5"),
                       ((term, node_id, total, *tf) for term, tf in counts.items()))

    def drop_node(self, node_id: str) -> None:
        row = self.execute("DELETE FROM nodes WHERE project = %s AND id = %s RETURNING doc_len",
                           (self.project, node_id)).fetchone()
        if row is not None:
            self.bump("nodes", -1)
            self.bump("tokens", -int(row[0]))
            self.execute("DELETE FROM postings WHERE project = %s AND node = %s",
                         (self.project, node_id))
        self.execute("DELETE FROM vectors WHERE project = %s AND id = %s",
                     (self.project, node_id))

    # --- notes ------------------------------------------------------------------------------

    def note_stamps(self) -> dict[str, NoteStamp]:
        rows = self.execute("SELECT id, scope, mtime_ns, size, content_hash FROM nodes "
                            "WHERE project = %s AND kind = 'note'", (self.project,))
        return {row[0]: NoteStamp(row[1], row[2], row[3], row[4]) for row in rows}

    def upsert_note(self, note: Note, scope: str, path: str, content_hash: str, mtime_ns: int,
                    size: int, text: str | None = None, edited_ns: int = 0) -> None:
        """Index a note (and, given its markdown `text`, record it as the shared text).
        Personal notes stay out of a shared database."""
        if scope != "project":
            return
        tokens = self.analyzer.tokens
        columns = (" ".join(tokens(" ".join((note.title, *note.aliases)))),
                   " ".join(tokens(note.body)),
                   " ".join(tokens(" ".join((note.type.value, *note.tags)))),
                   "", " ".join(tokens(" ".join(note.files))), "")
        self.put_node(note.id, "note", columns, {
            "scope": scope, "type": note.type.value, "title": note.title, "body": note.body,
            "path": path, "status": note.status.value, "recorded_at": note.recorded_at,
            "valid_from": note.valid_from, "valid_to": note.valid_to,
            "superseded_by": note.superseded_by, "commit_sha": note.commit,
            "files": list(note.files), "tags": list(note.tags), "aliases": list(note.aliases),
            "file_hashes": dict(note.file_hashes), "content_hash": content_hash,
            "mtime_ns": mtime_ns, "size": size, "successes": note.successes,
            "failures": note.failures,
            **dict(zip(("signature", "remedy", "command"), error_keys(note), strict=True))})
        self.execute("DELETE FROM edges WHERE project = %s AND src = %s AND origin IN "
                     "('declared', 'files')", (self.project, note.id))
        edges = {(target, rel, "declared") for rel, target in note.targets()}
        edges |= {(file, "about", "files") for file in note.files}
        if edges:
            self.copy_rows("edges", ("src", "dst", "rel", "origin", "weight"),
                           ((note.id, dst, rel, origin, 1.0) for dst, rel, origin in edges))
        if text is not None:
            self.put_doc(note.id, text, content_hash, edited_ns=edited_ns)

    def touch_note(self, note_id: str, mtime_ns: int, size: int) -> None:
        self.execute("UPDATE nodes SET mtime_ns = %s, size = %s WHERE project = %s AND id = %s",
                     (mtime_ns, size, self.project, note_id))

    def delete_note(self, note_id: str) -> None:
        """Remove a note from the index and leave a tombstone for the other machines."""
        self.drop_node(note_id)
        self.execute("DELETE FROM edges WHERE project = %s AND src = %s AND origin IN "
                     "('declared', 'files')", (self.project, note_id))
        self.tombstone(note_id)

    def list_notes(self, types: Sequence[str] = (), statuses: Sequence[str] = (),
                   scope: str | None = None) -> list[IndexedNote]:
        if scope not in (None, "project"):
            return []
        cond, params = where(Filters(types=tuple(types), statuses=tuple(statuses)), "",
                             self.project)
        sql = (f"SELECT {NOTE_COLUMNS} FROM nodes WHERE project = %s AND kind = 'note'{cond} "
               "ORDER BY recorded_at DESC NULLS LAST, id COLLATE \"C\"")
        return [IndexedNote(*row) for row in self.execute(sql, [self.project, *params])]

    def iter_note_ids(self) -> Iterator[str]:
        for (note_id,) in self.execute("SELECT id FROM nodes WHERE project = %s AND "
                                       "kind = 'note'", (self.project,)).fetchall():
            yield note_id

    def _error_rows(self, condition: str, params: Sequence[object]) -> list[ErrorRow]:
        """The active error notes meeting `condition` (on `e`), oldest first."""
        return [error_row(r) for r in self.execute(
            f"SELECT {ERROR_COLUMNS} FROM nodes e LEFT JOIN nodes r ON r.project = e.project "
            "AND r.id = e.remedy WHERE e.project = %s AND e.kind = 'note' AND e.type = 'error' "
            f"AND e.status = 'active' AND ({condition}) "
            'ORDER BY e.recorded_at, e.id COLLATE "C"', (self.project, *params)).fetchall()]

    def failed_commands(self) -> dict[str, list[ErrorRow]]:
        out: dict[str, list[ErrorRow]] = {}
        for row in self._error_rows("e.command IS NOT NULL", ()):
            out.setdefault(str(row.command), []).append(row)
        return out

    def error_notes(self, signature: str = "", command: str | None = None) -> list[ErrorRow]:
        if not signature and not command:
            return []
        return self._error_rows("(%s <> '' AND e.signature = %s) OR "
                                "(%s::text IS NOT NULL AND e.command = %s)",
                                (signature, signature, command, command))

    # --- the shared texts (sync) ------------------------------------------------------------

    def docs(self) -> dict[str, SharedDoc]:
        """Every note text of the project, tombstones included."""
        rows = self.execute(
            "SELECT id, text, hash, deleted, version, to_char(updated_at AT TIME ZONE 'UTC', "
            "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), updated_by, erased FROM note_docs "
            "WHERE project = %s",
            (self.project,))
        return {r[0]: SharedDoc(*r) for r in rows}

    def doc(self, note_id: str) -> SharedDoc | None:
        """One note's text as the database holds it (a tombstone included), or None."""
        row = self.execute(
            "SELECT id, text, hash, deleted, version, to_char(updated_at AT TIME ZONE 'UTC', "
            "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), updated_by, erased FROM note_docs WHERE "
            "project = %s AND id = %s", (self.project, note_id)).fetchone()
        return None if row is None else SharedDoc(*row)

    def put_doc(self, note_id: str, text: str, content_hash: str,
                reason: str = "replaced", edited_ns: int = 0) -> int:
        """Record `text` as the note's shared text (inside `write()`); the text it replaces is
        kept in `note_versions`. Returns the new version (the same when nothing changed).

        `updated_at` is when the text was edited: the file's mtime (`edited_ns`, never later
        than the server's now), else now. A sync conflict goes to the newer edit, so a text
        edited before the other side's but pushed after it must not look newer."""
        old = self.execute("SELECT hash, deleted, version FROM note_docs WHERE project = %s "
                           "AND id = %s FOR UPDATE", (self.project, note_id)).fetchone()
        if old is not None and old[0] == content_hash and not old[1]:
            return int(old[2])
        edited = (dt.datetime.fromtimestamp(edited_ns / 1e9, dt.UTC) if edited_ns > 0
                  else None)
        if old is None:
            self.execute("INSERT INTO note_docs (project, id, text, hash, updated_at, "
                         "updated_by) VALUES (%s, %s, %s, %s, least(coalesce(%s, now()), now()), "
                         "%s)", (self.project, note_id, text, content_hash, edited, self.writer))
            return 1
        self.keep_version(note_id, reason)
        self.execute("UPDATE note_docs SET text = %s, hash = %s, deleted = false, erased = false, "
                      "version = version + 1, updated_at = least(coalesce(%s, now()), now()), "
                      "updated_by = %s WHERE project = %s AND id = %s",
                      (text, content_hash, edited, self.writer, self.project, note_id))
        return int(old[2]) + 1

    def keep_version(self, note_id: str, reason: str) -> None:
        """Copy the note's current shared text to `note_versions`."""
        self.execute(
            "INSERT INTO note_versions (project, id, version, text, hash, deleted, updated_at, "
            "updated_by, reason) SELECT project, id, version, text, hash, deleted, updated_at, "
            "updated_by, %s FROM note_docs WHERE project = %s AND id = %s",
            (reason, self.project, note_id))

    def keep_text(self, note_id: str, text: str, content_hash: str, reason: str) -> None:
        """Keep a text that lost a conflict as a previous version of the note."""
        self.execute(
            "INSERT INTO note_versions (project, id, version, text, hash, deleted, updated_at, "
            "updated_by, reason) VALUES (%s, %s, coalesce((SELECT version FROM note_docs WHERE "
            "project = %s AND id = %s), 0), %s, %s, false, now(), %s, %s)",
            (self.project, note_id, self.project, note_id, text, content_hash, self.writer,
             reason))

    def tombstone(self, note_id: str) -> None:
        row = self.execute("SELECT deleted FROM note_docs WHERE project = %s AND id = %s "
                           "FOR UPDATE", (self.project, note_id)).fetchone()
        if row is None or row[0]:
            return
        self.keep_version(note_id, "deleted")
        self.execute("UPDATE note_docs SET deleted = true, version = version + 1, "
                     "updated_at = now(), updated_by = %s WHERE project = %s AND id = %s",
                     (self.writer, self.project, note_id))

    def erase_note(self, note_id: str) -> None:
        """Every row of the note goes: its node, postings, edges and vectors, every earlier
        text in `note_versions`; `note_docs` keeps a tombstone with the id, the last hash and
        `erased` (the other clones erase their copies when they sync), its text emptied."""
        self.drop_node(note_id)
        self.execute("DELETE FROM edges WHERE project = %s AND src = %s AND origin IN "
                     "('declared', 'files')", (self.project, note_id))
        self.execute("DELETE FROM note_versions WHERE project = %s AND id = %s",
                     (self.project, note_id))
        self.execute("UPDATE note_docs SET text = '', deleted = true, erased = true, "
                     "version = version + 1, updated_at = now(), updated_by = %s "
                     "WHERE project = %s AND id = %s", (self.writer, self.project, note_id))

    # The tables an erasure deletes rows of (VACUUM frees their dead tuples).
    ERASED_TABLES = ("nodes", "postings", "edges", "vectors", "note_docs", "note_versions",
                     "audit_payloads")

    def compact(self) -> list[str]:
        """After an erasure: VACUUM the tables it touched and ANALYZE them again, when this
        role owns them; otherwise ANALYZE through the owner's `loremap_analyze` and say, in
        one line, what the owner runs (docs/postgres.md#erasure-and-vacuum).

        A dead tuple keeps its bytes in the table's pages until VACUUM reclaims the space,
        and the planner's statistics (`pg_statistic`, filled by ANALYZE: loremap's after a
        bulk write, autovacuum's) keep sampled values of a column, an erased text among them,
        until the next ANALYZE of the table replaces them (it samples live rows only).
        """
        tables = list(self.ERASED_TABLES)
        try:
            (owned,) = self.execute(
                "SELECT coalesce(bool_and(pg_has_role(c.relowner, 'USAGE')), false) "
                "FROM pg_class c WHERE c.oid = ANY (%s::regclass[])", (tables,)).fetchone()
            if owned:
                self.execute(f"VACUUM (ANALYZE) {', '.join(tables)}")
            else:
                self.execute("SELECT loremap_analyze(%s::text[])",
                             ([t for t in tables if t in schema.ANALYZED],))
        except (StoreError, psycopg.Error) as exc:
            return [f"VACUUM or ANALYZE of the erased rows' tables failed ({first_line(exc)}); "
                    "until they run, their pages and statistics may keep the bytes of the "
                    "deleted rows (docs/postgres.md)"]
        if not owned:
            return [f"{describe(self.url)}: this role does not own loremap's tables, so the "
                    "erased rows' bytes stay in the tables' files until their owner runs "
                    f"`VACUUM (FULL, ANALYZE) {', '.join(tables)}` and the database's owner "
                    "`VACUUM FULL pg_statistic` (docs/postgres.md#erasure-and-vacuum)"]
        return []

    def versions(self, note_id: str) -> list[KeptVersion]:
        rows = self.execute(
            "SELECT version, hash, deleted, to_char(updated_at AT TIME ZONE 'UTC', "
            "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), updated_by, to_char(kept_at AT TIME ZONE 'UTC', "
            "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), reason, text FROM note_versions "
            "WHERE project = %s AND id = %s ORDER BY kept_at DESC, version DESC",
            (self.project, note_id))
        return [KeptVersion(*r) for r in rows]

    def every_text(self) -> Iterator[tuple[str, str, str]]:
        """Every note text the database keeps for the project, as (id, which, text): each
        current text (a tombstone's last one included; an erased one has none), then each
        earlier version, `which` saying which (for `doctor`'s secret scan)."""
        for note_id, version, text in self.execute(
                "SELECT id, version, text FROM note_docs WHERE project = %s AND text <> '' "
                "ORDER BY id", (self.project,)).fetchall():
            yield note_id, f"its current text (version {version})", text
        for note_id, version, text in self.execute(
                "SELECT id, version, text FROM note_versions WHERE project = %s AND text <> '' "
                "ORDER BY id, kept_at, version", (self.project,)).fetchall():
            yield note_id, f"its earlier version {version}", text

    # --- graph and meta ---------------------------------------------------------------------

    def edges(self, node_id: str) -> list[Edge]:
        rows = self.execute(
            "SELECT * FROM (SELECT src, dst, rel, origin, weight FROM edges WHERE project = %s "
            "AND src = %s UNION SELECT src, dst, rel, origin, weight FROM edges WHERE "
            "project = %s AND dst = %s) e ORDER BY src COLLATE \"C\", dst COLLATE \"C\", "
            "rel COLLATE \"C\"", (self.project, node_id, self.project, node_id))
        return [Edge(*row) for row in rows]

    def declared_edges(self) -> list[Edge]:
        rows = self.execute("SELECT src, dst, rel, origin, weight FROM edges WHERE project = %s "
                            "AND origin = 'declared' ORDER BY src COLLATE \"C\", rel, "
                            "dst COLLATE \"C\"", (self.project,))
        return [Edge(*row) for row in rows]

    def meta(self, key: str) -> str | None:
        row = self.execute("SELECT value FROM meta WHERE project = %s AND key = %s",
                           (self.project, key)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.execute("INSERT INTO meta (project, key, value) VALUES (%s, %s, %s) ON CONFLICT "
                     "(project, key) DO UPDATE SET value = EXCLUDED.value",
                     (self.project, key, value))


def _param(value: object) -> object:
    """A Python value as a query parameter (lists and dicts as jsonb)."""
    if isinstance(value, list | dict):
        return Jsonb(value)
    return value
