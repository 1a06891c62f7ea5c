"""Immutable records shared by every layer: notes, links, index rows, search records.

They are `typing.NamedTuple`s rather than frozen dataclasses: just as immutable and typed, but
defining one costs a tenth as much, and the `dataclasses` module pulls in `inspect`, `ast` and
`dis` (several milliseconds on every CLI call and every hook).
"""

from __future__ import annotations

from loremap.model.index import Edge, IndexedNote, NoteStamp
from loremap.model.note import (
    MAX_ID_LENGTH,
    Link,
    NodeKind,
    Note,
    NoteType,
    Relation,
    Source,
    Status,
    check_id,
)

__all__ = [
    "MAX_ID_LENGTH",
    "Edge",
    "IndexedNote",
    "NoteStamp",
    "Link",
    "NodeKind",
    "Note",
    "NoteType",
    "Relation",
    "Source",
    "Status",
    "check_id",
]
