"""What one change leaves behind: the note-file batches it landed and the audit entries of it.

The body of a change (`Memory._files_and_index`, or `Memory.recorded` for a change of index
rows and shared texts alone: a sync, a reconcile that quarantines a note) gets a `Write`,
lands its batches through it and records each note it changed; the entries become records of
the vault's audit chain inside the same index transaction (`store.AuditLog.appending`), so a
change that is undone leaves no record and one that commits leaves one per note.
"""

from __future__ import annotations

from loremap.audit import Entry
from loremap.memory.batch import Batch
from loremap.vault.layout import content_hash


def hash_of(data: bytes | None) -> str:
    """The audit's content hash of a note file's bytes ("" for no file)."""
    return "" if data is None else content_hash(data)


class Write:
    """The batches and the audit entries (by vault scope) of one change."""

    __slots__ = ("batches", "entries")

    def __init__(self) -> None:
        self.batches: list[Batch] = []
        self.entries: dict[str, list[Entry]] = {}

    def land(self, batch: Batch) -> None:
        """Apply `batch` (undone with the others if the change fails later)."""
        self.batches.append(batch)
        batch.apply()

    def record(self, scope: str, op: str, note_id: str, before: str, after: str,
               title: str = "", detail: str = "") -> None:
        """One note changed by `op` in the vault of `scope`, from the content hash `before`
        to `after`; `title` and `detail` are the record's erasable payload."""
        self.entries.setdefault(scope, []).append(
            Entry(op, note_id, before, after, title, detail))
