"""The audit chain on SQLite: a file of its own beside the index, never a table in it.

`.loremap/audit.sqlite` holds the project's chain, `audit.sqlite` in the personal vault's
folder the personal notes'. Why not the index: the index is derived (`reindex` drops it, a
damaged one is set aside and rebuilt from the notes: `use/faults.py`), and the chain can be
rebuilt from nothing. Why not in git (`.loremap/.gitignore` ignores it): each clone's chain is
the record of what was done in that clone, and two clones appending to one binary file would
conflict on every merge; a team's common record is the shared database's chain.

Triggers refuse to change or delete a record, and delete a payload only after an erase record
of its note (`audit/chain.py`); appending an erase record deletes the payloads of the note's
earlier records in the same transaction (`secure_delete`: their bytes are zeroed). The
triggers stop a mistake, not the owner of the file, who can drop them: what shows an edit is
the chain (`loremap audit verify`). WAL with `synchronous=FULL`: a
committed record survives a power cut, as the note file it describes does (fsync'ed).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

from loremap.audit import Entry, Record, Stamp, seal
from loremap.audit.chain import COLUMNS, ERASE
from loremap.errors import IndexLocked, SchemaTooNew, StoreError, UnsafePath
from loremap.store.protocols import Append
from loremap.vault.fs import link_target

AUDIT_FILE = "audit.sqlite"
_VERSION = 1  # the file's own schema (PRAGMA user_version)
_SCHEMA = (
    f"CREATE TABLE audit (seq INTEGER PRIMARY KEY, "
    f"{', '.join(f'{c} TEXT NOT NULL' for c in COLUMNS[1:])})",
    "CREATE INDEX audit_note ON audit (note, seq)",
    "CREATE INDEX audit_at ON audit (at)",
    "CREATE TABLE payloads (seq INTEGER PRIMARY KEY, salt TEXT NOT NULL, payload TEXT NOT NULL)",
    "CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit BEGIN "
    "SELECT RAISE(ABORT, 'the audit log is append-only: a record is never changed'); END",
    "CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit BEGIN "
    "SELECT RAISE(ABORT, 'the audit log is append-only: a record is never deleted'); END",
    "CREATE TRIGGER payloads_no_update BEFORE UPDATE ON payloads BEGIN "
    "SELECT RAISE(ABORT, 'the audit log is append-only: a payload is never changed'); END",
    "CREATE TRIGGER payloads_erased_only BEFORE DELETE ON payloads "
    "WHEN NOT EXISTS (SELECT 1 FROM audit e JOIN audit r ON r.seq = OLD.seq "
    "WHERE e.note = r.note AND e.op = 'erase' AND e.seq > r.seq) BEGIN "
    "SELECT RAISE(ABORT, 'a payload of the audit log goes only with an erasure of its note'); "
    "END",
    f"PRAGMA user_version = {_VERSION}",
)
_INSERT = f"INSERT INTO audit ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
_SELECT = (f"SELECT {', '.join(f'a.{c}' for c in COLUMNS)}, p.payload, p.salt FROM audit a "
           "LEFT JOIN payloads p ON p.seq = a.seq")


class SqliteAudit:
    """The chain in the file `path`; records say `project` and `who` (user@host).

    One connection is kept from the first append to `close()`: a SQLite connection that closes
    checkpoints its WAL into the file, three more fsyncs per write (24 ms against 4 on the
    bench machine: bench/audit.py). Before each append the file is checked to be the one that
    connection opened (a file moved aside or deleted meanwhile is not written through).
    """

    def __init__(self, path: Path, project: str, who: str, busy_timeout_ms: int = 5000) -> None:
        self.path = path
        self.location = str(path)
        self.project = project
        self.who = who
        self.busy_timeout_ms = busy_timeout_ms
        self._conn: sqlite3.Connection | None = None
        self._opened: tuple[int, int] | None = None  # (device, inode) of the file it opened

    def _connect(self) -> sqlite3.Connection:
        for name in (self.path.name, f"{self.path.name}-wal", f"{self.path.name}-shm"):
            target = link_target(self.path.with_name(name))
            if target is not None:  # SQLite takes no O_NOFOLLOW: refuse the link by name
                raise UnsafePath(f"refused: {self.path.with_name(name)} is a symlink to "
                                 f"{target}; loremap does not open it (remove the link)")
        conn = sqlite3.connect(self.path, isolation_level=None,
                               timeout=self.busy_timeout_ms / 1000, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA secure_delete = ON")  # an erased payload's bytes are zeroed
        except sqlite3.Error as exc:
            conn.close()
            raise self._error(exc) from None
        return conn

    def _writer(self) -> sqlite3.Connection:
        """The kept connection, opened again when the file is no longer the one it opened."""
        try:
            found = os.lstat(self.path)
            here: tuple[int, int] | None = (found.st_dev, found.st_ino)
        except FileNotFoundError:
            here = None
        if self._conn is not None and here != self._opened:
            self.close()
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = self._connect()
            found = os.lstat(self.path)
            self._opened = (found.st_dev, found.st_ino)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
        self._conn = self._opened = None

    def _error(self, exc: sqlite3.Error) -> StoreError | IndexLocked:
        code = getattr(exc, "sqlite_errorcode", None)
        if code is not None and (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return IndexLocked(f"the audit log {self.path} is locked by another writer (waited "
                               f"{self.busy_timeout_ms / 1000:g} s, index.busy_timeout_ms); "
                               "nothing was written, try again")
        return StoreError(f"the audit log {self.path} cannot be used ({exc}); it is not "
                          "derived data, so it is never rebuilt: keep the file for the record, "
                          "move it aside, and the next change starts a new chain")

    def _version(self, conn: sqlite3.Connection) -> int:
        """The file's schema version (0: new); `SchemaTooNew` past this loremap's."""
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > _VERSION:
            raise SchemaTooNew(f"the audit log {self.path} has schema version {version}, newer "
                               f"than this loremap knows ({_VERSION}); upgrade loremap")
        return version

    @contextlib.contextmanager
    def appending(self) -> Iterator[Append]:
        begun: list[sqlite3.Connection] = []  # the connection once its transaction is open
        erased: list[tuple[str, int]] = []  # (note, seq) of the erase records appended

        def append(entries: Sequence[Entry], when: Stamp) -> list[Record]:
            if not entries:
                return []
            try:
                if not begun:
                    conn = self._writer()
                    conn.execute("BEGIN IMMEDIATE")
                    begun.append(conn)
                    if self._version(conn) == 0:  # a new file: its schema, in this transaction
                        for statement in _SCHEMA:
                            conn.execute(statement)
                conn = begun[0]
                head = conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1"
                                    ).fetchone()
                records = seal(entries, head, when, self.who, self.project)
                conn.executemany(_INSERT, [r[:len(COLUMNS)] for r in records])
                conn.executemany("INSERT INTO payloads (seq, salt, payload) VALUES (?, ?, ?)",
                                 [(r.seq, r.salt, r.payload) for r in records
                                  if r.payload is not None])
                erasures = [(r.note, r.seq) for r in records if r.op == ERASE]
                conn.executemany("DELETE FROM payloads WHERE seq IN (SELECT seq FROM audit "
                                 "WHERE note = ? AND seq < ?)", erasures)
                erased.extend(erasures)
            except sqlite3.Error as exc:
                raise self._error(exc) from None
            return records

        try:
            yield append
        except BaseException:
            if begun:
                with contextlib.suppress(sqlite3.Error):
                    begun[0].execute("ROLLBACK")
            raise
        if not begun:
            return
        try:
            begun[0].execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                begun[0].execute("ROLLBACK")
            raise StoreError(f"the audit log {self.path} could not commit the change's records "
                             f"({exc}): nothing was recorded") from None
        if erased:
            # Trigger: a note's payloads were erased. Why: the WAL file keeps the pages it
            # held before (the payloads' text among them) until it is overwritten. Outcome:
            # checkpoint it into the file (whose freed cells secure_delete zeroed) and truncate
            # it; a reader holding it open leaves it to the next checkpoint.
            with contextlib.suppress(sqlite3.Error):
                begun[0].execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def records(self, note: str | None = None, since: str | None = None) -> Iterator[Record]:
        if not self.path.exists():
            return
        conditions = [(c, v) for c, v in (("a.note = ?", note), ("a.at >= ?", since))
                      if v is not None]
        where = " WHERE " + " AND ".join(c for c, _ in conditions) if conditions else ""
        conn = self._connect()  # a reader of its own: a walk may be left half done
        try:
            if self._version(conn) == 0:
                return  # made by a writer that has not committed its first record yet
            rows = conn.execute(f"{_SELECT}{where} ORDER BY a.seq",
                                [v for _, v in conditions])
            for row in rows:
                yield Record(int(row[0]), *row[1:])
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        finally:
            conn.close()
