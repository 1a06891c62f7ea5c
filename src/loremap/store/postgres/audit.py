"""The audit chain of a project on the shared database: `audit_log` and `audit_payloads`.

Records are appended inside the write transaction of the change they describe
(`PostgresStore.write`), so a change and its record commit together or not at all. One chain
per project (row-level security shows the runtime role its project's records only). Two
machines appending at once must not both chain after the same head (a fork): the append takes
a transaction-scoped advisory lock of the project's chain before it reads the head, and the
primary key (project, seq) refuses a second record of one number should anything else write.
The tables, their grants, policies and triggers are migration 6's (`schema.py`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import psycopg

from loremap.audit import Entry, Record, Stamp, seal
from loremap.audit.chain import COLUMNS, ERASE
from loremap.errors import StoreError
from loremap.store.postgres import first_line
from loremap.store.protocols import Append

if TYPE_CHECKING:
    from loremap.store.postgres.store import PostgresStore

_INSERT = (f"INSERT INTO audit_log ({', '.join(COLUMNS)}) "
           f"VALUES ({', '.join(['%s'] * len(COLUMNS))})")
_SELECT = (f"SELECT {', '.join(f'a.{c}' for c in COLUMNS)}, p.payload, p.salt FROM audit_log a "
           "LEFT JOIN audit_payloads p ON p.project = a.project AND p.seq = a.seq "
           "WHERE a.project = %s")


class PgAudit:
    """The chain of `store`'s project, written through its connection."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        self.location = f"{store.location}, table audit_log"

    @contextlib.contextmanager
    def appending(self) -> Iterator[Append]:
        yield self._append  # inside `store.write()`: its transaction commits the records

    def close(self) -> None:
        pass  # the store's connection is the store's to close

    def _append(self, entries: Sequence[Entry], when: Stamp) -> list[Record]:
        if not entries:
            return []
        store = self.store
        project = store.project
        store.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("loremap.audit:" + project,))
        head = store.execute("SELECT seq, hash FROM audit_log WHERE project = %s "
                             "ORDER BY seq DESC LIMIT 1", (project,)).fetchone()
        records = seal(entries, None if head is None else (int(head[0]), head[1]), when,
                       store.writer, project)
        with store.conn.cursor() as cur:
            cur.executemany(_INSERT, [r[:len(COLUMNS)] for r in records])
            payloads = [(project, r.seq, r.salt, r.payload) for r in records
                        if r.payload is not None]
            if payloads:
                cur.executemany("INSERT INTO audit_payloads (project, seq, salt, payload) "
                                "VALUES (%s, %s, %s, %s)", payloads)
            erasures = [(project, project, r.note, r.seq) for r in records if r.op == ERASE]
            if erasures:  # an erasure: the payloads of the note's earlier records go with it
                cur.executemany("DELETE FROM audit_payloads WHERE project = %s AND seq IN "
                                "(SELECT seq FROM audit_log WHERE project = %s AND note = %s "
                                "AND seq < %s)", erasures)
        return records

    def records(self, note: str | None = None, since: str | None = None) -> Iterator[Record]:
        conditions = [(c, v) for c, v in (("a.note = %s", note), ("a.at >= %s", since))
                      if v is not None]
        where = "".join(f" AND {c}" for c, _ in conditions)
        store = self.store
        store._alive()
        try:
            with store.conn.cursor() as cur:
                for row in cur.stream(f"{_SELECT}{where} ORDER BY a.seq",
                                      (store.project, *(v for _, v in conditions))):
                    yield Record(int(row[0]), *row[1:])
        except psycopg.Error as exc:
            raise StoreError(f"{self.location}: {first_line(exc)}") from None
