"""The index behind the vault: the `Store` protocol every backend implements.

The index is derived: it can always be dropped and rebuilt from the vault. Services talk to it
only through this protocol so that SQLite (the embedded default) and PostgreSQL (shared by a
team) stay interchangeable and pass the same contract tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol, TypeAlias

from loremap.model import Edge, IndexedNote, Note, NoteStamp

if TYPE_CHECKING:
    from loremap.store.postgres.store import PostgresStore
    from loremap.store.sqlite import SqliteStore

# The two backends, for the layers that use every operation (search, code map, services).
IndexStore: TypeAlias = "SqliteStore | PostgresStore"

SCHEMA_VERSION = 3


class Store(Protocol):
    """Operations the services need from an index.

    The search engine's reads are the `SearchStore` protocol (loremap.search.engine) and the
    code map's operations are those of `store/sqlite/code.py`; a second backend implements
    all three.
    """

    location: str
    shared: bool  # a database several vaults share (PostgreSQL): not reconciled with one vault

    def close(self) -> None: ...

    def write(self) -> AbstractContextManager[None]:
        """One write transaction; raises `IndexLocked` after busy_timeout."""
        ...

    def schema_version(self) -> int: ...

    def clear(self) -> None:
        """Drop every row (inside `write()`), leaving an empty index of the current schema."""
        ...

    def note_stamps(self) -> dict[str, NoteStamp]:
        """id -> (scope, mtime_ns, size, content_hash) of every note row, for reconciliation."""
        ...

    def upsert_note(self, note: Note, scope: str, path: str, content_hash: str, mtime_ns: int,
                    size: int, text: str | None = None, edited_ns: int = 0) -> None:
        """Index a note; a shared store also keeps its markdown `text` for the other
        machines (and skips personal notes), edited at `edited_ns` (the file's mtime; 0: now).
        `mtime_ns` is the stat signature's (0 while the file is too recent to trust)."""
        ...

    def touch_note(self, note_id: str, mtime_ns: int, size: int) -> None:
        """Record a new stat for a file whose content hash did not change."""
        ...

    def delete_note(self, note_id: str) -> None: ...

    def list_notes(self, types: Sequence[str] = (), statuses: Sequence[str] = (),
                   scope: str | None = None) -> list[IndexedNote]: ...

    def edges(self, node_id: str) -> list[Edge]:
        """Edges leaving or reaching `node_id`."""
        ...

    def declared_edges(self) -> list[Edge]:
        """Every edge notes declare (links and supersedes)."""
        ...

    def meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def iter_note_ids(self) -> Iterator[str]: ...

    def existing_ids(self, ids: Iterable[str]) -> set[str]: ...
