"""What the index knows about a note file: where it is, what it hashed to, how it is filed."""

from __future__ import annotations

from typing import NamedTuple


class IndexedNote(NamedTuple):
    """A note row of the index; `content_hash`, `mtime_ns` and `size` drive reconciliation."""

    id: str
    scope: str
    type: str
    title: str
    status: str
    path: str
    recorded_at: str | None
    content_hash: str
    mtime_ns: int
    size: int


class NoteStamp(NamedTuple):
    """The part of a note row that reconciliation compares with a file's stat and hash."""

    scope: str
    mtime_ns: int
    size: int
    content_hash: str


class Edge(NamedTuple):
    """A typed edge of the graph; `origin` says where it came from (declared, import, ...)."""

    src: str
    dst: str
    rel: str
    origin: str
    weight: float = 1.0
