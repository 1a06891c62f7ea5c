"""Frozen dataclasses shared by every layer: notes, links, search hits."""

from __future__ import annotations

from loremap.model.hit import Hit
from loremap.model.index import Edge, IndexedNote, NoteStamp
from loremap.model.note import (
    MAX_ID_LENGTH,
    Link,
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
    "Hit",
    "IndexedNote",
    "NoteStamp",
    "Link",
    "Note",
    "NoteType",
    "Relation",
    "Source",
    "Status",
    "check_id",
]
