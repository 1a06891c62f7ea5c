"""What the index knows about a note file: where it is, what it hashed to, how it is filed."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class IndexedNote:
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


@dataclass(frozen=True, slots=True)
class Edge:
    """A typed edge of the graph; `origin` says where it came from (declared, import, ...)."""

    src: str
    dst: str
    rel: str
    origin: str
    weight: float = 1.0
