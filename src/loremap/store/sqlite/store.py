"""The embedded index: one SQLite file per project, WAL, one writer at a time.

Writes run in `BEGIN IMMEDIATE` transactions so two writers never interleave; a writer that
cannot get the lock within busy_timeout gets `IndexLocked`, not a hang. Text goes through the
analyzer before it reaches FTS5, and queries are built from analyzer tokens only, each quoted,
so no user text ever reaches `MATCH` as syntax.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from loremap.errors import DiskFull, IndexLocked, StoreError
from loremap.model import Edge, IndexedNote, Note, NoteStamp
from loremap.model.search import Filters
from loremap.store.rows import NOTE_COLUMNS, error_keys
from loremap.store.sqlite import schema
from loremap.store.sqlite.code import CodeTables
from loremap.store.sqlite.search import SearchTables
from loremap.store.sqlite.search import where as search_where
from loremap.store.sqlite.vectors import VectorTables
from loremap.text import Analyzer


def fts5_available() -> bool:
    """Whether this Python's SQLite was built with FTS5."""
    with contextlib.closing(sqlite3.connect(":memory:")) as conn:
        try:
            conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        except sqlite3.OperationalError:
            return False
    return True


def is_locked(exc: sqlite3.Error) -> bool:
    """Whether `exc` says another connection holds the lock (SQLITE_BUSY or SQLITE_LOCKED,
    extended codes included: the primary code is the low byte), whatever its message. An
    error the sqlite3 module raised itself (a closed connection) carries no code: not a lock."""
    code: int | None = getattr(exc, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def is_damaged(exc: BaseException) -> bool:
    """Whether `exc` says the index file itself is damaged (SQLITE_CORRUPT, SQLITE_NOTADB):
    pages overwritten under a running index read as "database disk image is malformed" at the
    first statement that touches them, long after the file was opened."""
    code: int | None = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
    # A row whose bytes were overwritten inside a sound page: SQLite returns it, and Python's
    # sqlite3 module (not SQLite: it has no code for this) fails to decode its text.
    return isinstance(exc, sqlite3.OperationalError) and \
        str(exc).startswith("Could not decode to UTF-8")


def _no_room(path: Path) -> bool:
    """Whether the file system of `path` has less than 64 KiB left: SQLite reports a WAL or
    shared-memory file it cannot extend as a plain I/O error."""
    try:
        found = os.statvfs(path.parent)
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        return False
    return found.f_bavail * found.f_frsize < 65536


def is_full(exc: BaseException) -> bool:
    """Whether `exc` says the disk is full (SQLITE_FULL, or ENOSPC from the file system)."""
    code: int | None = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) == sqlite3.SQLITE_FULL
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def _quick_check(conn: sqlite3.Connection) -> str | None:
    try:
        rows = conn.execute("PRAGMA quick_check(1)").fetchall()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return None if rows == [("ok",)] else str(rows[0][0])


def damage_of(path: Path) -> str | None:
    """What SQLite's quick check finds wrong with the index file `path` (opened read-only and
    alone, as it is: no migration, no set-up), or None when it is sound."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return str(exc)
    try:
        return _quick_check(conn)
    finally:
        conn.close()


def set_aside(index: Path) -> Path:
    """Move a damaged index out of the way (kept for a post-mortem) with its WAL and shared
    memory files: the next open builds a new one from the notes, which are canonical. A process
    still holding the old file keeps reading it until it reopens (the daemon's Apps reopen when
    the file changes)."""
    stamp = int(time.time())
    aside = index.with_name(f"{index.name}.corrupt-{stamp}")
    n = 1
    while aside.exists():  # set aside twice in a second: keep both
        n += 1
        aside = index.with_name(f"{index.name}.corrupt-{stamp}-{n}")
    with contextlib.suppress(OSError):
        os.replace(index, aside)
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(OSError):
            os.unlink(f"{index}{suffix}")
    return aside


class SqliteStore(CodeTables, SearchTables, VectorTables):
    """`Store` on a SQLite file (or `:memory:`)."""

    shared = False
    edge_batch = 1  # the walk's reads of edges are local calls: read only what it needs

    def __init__(self, path: Path, analyzer: Analyzer, busy_timeout_ms: int = 5000) -> None:
        self.location = str(path)
        self.analyzer = analyzer
        self.busy_timeout_ms = busy_timeout_ms
        path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=busy_timeout_ms / 1000,
                                    check_same_thread=False)
        try:
            self._configure()
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            if is_full(exc) or _no_room(path):  # full, not broken: never set aside either
                raise DiskFull(f"no space left on the device holding {path} ({exc}); free some "
                               "space and run the command again") from None
            if is_locked(exc):  # busy, not broken: the file must not be set aside as corrupt
                raise IndexLocked(
                    f"the index {path} is locked by another process (waited "
                    f"{busy_timeout_ms / 1000:g} s, index.busy_timeout_ms); try again") from None
            raise StoreError(f"the index {path} is unreadable ({exc}); run `loremap reindex`")\
                from None

    def damage(self) -> str | None:
        """What SQLite's quick check finds wrong with the index file, or None when it is
        sound (reads every page: for `doctor`, not for every command)."""
        return _quick_check(self.conn)

    def _configure(self) -> None:
        c = self.conn
        c.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        if c.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            c.execute("PRAGMA journal_mode = WAL")
        c.execute("PRAGMA synchronous = NORMAL")
        c.execute("PRAGMA foreign_keys = ON")
        # Freed pages and deleted cells are zeroed: a replaced or forgotten note's text does
        # not linger in the file's free space (`forget --erase` relies on it).
        c.execute("PRAGMA secure_delete = ON")
        version = schema.current_version(c)
        if version > len(schema.MIGRATIONS):
            schema.migrate(c)  # raises StoreError naming both versions
        elif version < len(schema.MIGRATIONS):
            with self.write():
                schema.migrate(c)

    def close(self) -> None:
        self.conn.close()

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        """A `BEGIN IMMEDIATE` transaction, committed on success, rolled back on error."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if is_locked(exc):
                raise IndexLocked(
                    f"the index {self.location} is locked by another writer (waited "
                    f"{self.busy_timeout_ms / 1000:g} s, index.busy_timeout_ms); try again"
                ) from None
            raise
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            # Kept reads may hold rows that were never committed (a rollback leaves
            # total_changes as it was).
            self._vector_cache = self._held = None
            raise
        self.conn.execute("COMMIT")

    def schema_version(self) -> int:
        return schema.current_version(self.conn)

    def clear(self) -> None:
        schema.drop_all(self.conn)
        schema.migrate(self.conn)
        self._vector_cache = self._held = None

    # --- notes ------------------------------------------------------------------------------

    def note_stamps(self) -> dict[str, NoteStamp]:
        rows = self.conn.execute(
            "SELECT id, scope, mtime_ns, size, content_hash FROM nodes WHERE kind = 'note'")
        return {row[0]: NoteStamp(row[1], row[2], row[3], row[4]) for row in rows}

    def upsert_note(self, note: Note, scope: str, path: str, content_hash: str, mtime_ns: int,
                    size: int, text: str | None = None, edited_ns: int = 0) -> None:
        c = self.conn
        row = c.execute("SELECT rowid, title, body FROM nodes WHERE id = ?",
                        (note.id,)).fetchone()
        values = (
            note.id, "note", scope, note.type.value, note.title, note.body, path,
            note.status.value, note.recorded_at, note.valid_from, note.valid_to,
            note.superseded_by, note.commit, json.dumps(list(note.files)),
            json.dumps(list(note.tags)), content_hash, mtime_ns, size,
            json.dumps(list(note.aliases)), json.dumps(dict(note.file_hashes), sort_keys=True),
            note.successes, note.failures, *error_keys(note),
        )
        if row is None:
            cur = c.execute(
                "INSERT INTO nodes (id, kind, scope, type, title, body, path, status, "
                "recorded_at, valid_from, valid_to, superseded_by, commit_sha, files, tags, "
                "content_hash, mtime_ns, size, aliases, file_hashes, successes, failures, "
                "signature, remedy, command) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
            rowid = cur.lastrowid
        else:
            rowid = row[0]
            c.execute(
                "UPDATE nodes SET id = ?, kind = ?, scope = ?, type = ?, title = ?, body = ?, "
                "path = ?, status = ?, recorded_at = ?, valid_from = ?, valid_to = ?, "
                "superseded_by = ?, commit_sha = ?, files = ?, tags = ?, content_hash = ?, "
                "mtime_ns = ?, size = ?, aliases = ?, file_hashes = ?, successes = ?, "
                "failures = ?, signature = ?, remedy = ?, command = ? WHERE rowid = ?",
                (*values, rowid))
            c.execute("DELETE FROM fts WHERE rowid = ?", (rowid,))
            if (row[1], row[2]) != (note.title, note.body):
                # A note's vectors are of its title and body (`missing_vectors`): a change
                # of its counters, links or status keeps them.
                c.execute("DELETE FROM vectors WHERE id = ?", (note.id,))
        tokens = self.analyzer.tokens
        c.execute(
            "INSERT INTO fts (rowid, title, body, tags, symbols, path, content) "
            "VALUES (?, ?, ?, ?, ?, ?, '')",
            (rowid, " ".join(tokens(" ".join((note.title, *note.aliases)))),
             " ".join(tokens(note.body)), " ".join(tokens(" ".join((note.type.value,
                                                                       *note.tags)))),
             "", " ".join(tokens(" ".join(note.files)))),
        )
        c.execute("DELETE FROM edges WHERE src = ? AND origin IN ('declared', 'files')",
                  (note.id,))
        c.executemany(
            "INSERT OR IGNORE INTO edges (src, dst, rel, origin) VALUES (?, ?, ?, 'declared')",
            [(note.id, target, rel) for rel, target in note.targets()],
        )
        # A note's `files` are edges too (origin 'files'), so search walks from a file to the
        # notes about it; kept apart from declared links, which doctor checks.
        c.executemany(
            "INSERT OR IGNORE INTO edges (src, dst, rel, origin) VALUES (?, ?, 'about', 'files')",
            [(note.id, path) for path in note.files],
        )

    def touch_note(self, note_id: str, mtime_ns: int, size: int) -> None:
        self.conn.execute("UPDATE nodes SET mtime_ns = ?, size = ? WHERE id = ?",
                          (mtime_ns, size, note_id))

    def delete_note(self, note_id: str) -> None:
        c = self.conn
        row = c.execute("SELECT rowid FROM nodes WHERE id = ?", (note_id,)).fetchone()
        if row is not None:
            c.execute("DELETE FROM fts WHERE rowid = ?", (row[0],))
            c.execute("DELETE FROM nodes WHERE rowid = ?", (row[0],))
        c.execute("DELETE FROM edges WHERE src = ? AND origin IN ('declared', 'files')",
                  (note_id,))
        c.execute("DELETE FROM vectors WHERE id = ?", (note_id,))

    def erase_note(self, note_id: str) -> None:
        """`delete_note`, then the FTS index merged into one segment: a deleted row's tokens
        stay in the older segments (a delete only adds a marker) until they are merged."""
        self.delete_note(note_id)
        self.conn.execute("INSERT INTO fts (fts) VALUES ('optimize')")

    def compact(self) -> list[str]:
        """VACUUM (an index written before secure_delete was on may hold old text in its free
        pages), then the WAL checkpointed and truncated (it holds the pages as they were)."""
        try:
            self.conn.execute("VACUUM")
            busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.Error as exc:
            return [f"the index {self.location} could not be compacted ({exc}): its free pages "
                    "may still hold the erased text; run `loremap reindex`"]
        self._vector_cache = None
        if busy:
            return [f"the index's WAL ({self.location}-wal) is held open by another process: "
                    "it may hold the erased text until that process ends"]
        return []

    def list_notes(self, types: Sequence[str] = (), statuses: Sequence[str] = (),
                   scope: str | None = None) -> list[IndexedNote]:
        where, params = search_where(Filters(types=tuple(types), statuses=tuple(statuses)), "")
        sql = f"SELECT {NOTE_COLUMNS} FROM nodes WHERE kind = 'note'{where}"
        if scope is not None:
            sql += " AND scope = ?"
            params.append(scope)
        sql += " ORDER BY recorded_at DESC, id"
        return [IndexedNote(*row) for row in self.conn.execute(sql, params)]

    def iter_note_ids(self) -> Iterator[str]:
        for (note_id,) in self.conn.execute("SELECT id FROM nodes WHERE kind = 'note'"):
            yield note_id

    # --- graph and meta ---------------------------------------------------------------------

    def edges(self, node_id: str) -> list[Edge]:
        rows = self.conn.execute(
            "SELECT src, dst, rel, origin, weight FROM edges WHERE src = ? "
            "UNION SELECT src, dst, rel, origin, weight FROM edges WHERE dst = ? "
            "ORDER BY 1, 2, 3", (node_id, node_id))
        return [Edge(*row) for row in rows]

    def declared_edges(self) -> list[Edge]:
        rows = self.conn.execute("SELECT src, dst, rel, origin, weight FROM edges "
                                 "WHERE origin = 'declared' ORDER BY src, rel, dst")
        return [Edge(*row) for row in rows]

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
