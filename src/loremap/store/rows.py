"""What both backends build the same way: the column lists of the rows they return, the
records the code map reads, a file node's body.

Here so that neither backend imports the other (an import-linter contract keeps
`store.sqlite` and `store.postgres` independent) and the two cannot drift apart: a row read
from SQLite and from PostgreSQL goes through the same builder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from loremap.model import Note
from loremap.model.search import NodeRow

# The columns of `IndexedNote`, in its order.
NOTE_COLUMNS = "id, scope, type, title, status, path, recorded_at, content_hash, mtime_ns, size"
# The columns of `NodeRow`, in its order (`node_row` builds one from them).
NODE_COLUMNS = ("id, kind, scope, type, title, body, path, status, recorded_at, valid_from, "
                "valid_to, superseded_by, commit_sha, files, file_hashes, aliases, rank, "
                "successes, failures")
# The columns of `FileRow`, in its order.
FILE_COLUMNS = "path, module, language, docstring, rank"


class FileRow(NamedTuple):
    """A file of the code map as the renderers read it."""

    path: str
    module: str
    language: str | None
    docstring: str
    rank: float


def read_file_row(row: Sequence[Any]) -> FileRow:
    """A `FileRow` from the FILE_COLUMNS of a row (PostgreSQL's rank may come as a Decimal)."""
    return FileRow(str(row[0]), str(row[1]), None if row[2] is None else str(row[2]),
                   str(row[3]), float(row[4]))


def file_body(docstring: str, subjects: Sequence[str]) -> str:
    """A file node's body: its docstring, then (a paragraph apart) its last commit subjects."""
    return "\n\n".join(part for part in (docstring.strip(), "\n".join(subjects)) if part)


def error_keys(note: Note) -> tuple[str, str | None, str | None]:
    """An error note's signature (normalised again: a hand-written one may hold raw error
    text), remedy and command key, as both backends index them ("", None, None for a note
    without them)."""
    from loremap.text.signature import command_key, signature

    return (signature(note.signature) if note.signature else "", note.remedy,
            command_key(note.command) if note.command else None)


class ErrorRow(NamedTuple):
    """An active error note as the hooks read it: what failed, and what fixed it."""

    id: str
    title: str
    signature: str
    remedy: str | None
    remedy_title: str | None  # None: no remedy, or one that is not in the index
    command: str | None


ERROR_COLUMNS = ("e.id, e.title, e.signature, e.remedy, r.title, e.command")


def error_row(row: Sequence[Any]) -> ErrorRow:
    return ErrorRow(str(row[0]), str(row[1]), str(row[2]), _text(row[3]), _text(row[4]),
                    _text(row[5]))


def _as_is(value: Any) -> Any:
    return value


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def node_row(row: Sequence[Any], decode: Callable[[Any], Any] = _as_is) -> NodeRow:
    """A `NodeRow` from the NODE_COLUMNS of a row. `decode` turns a JSON column (files,
    file_hashes, aliases) into its value: SQLite stores JSON text, PostgreSQL's jsonb arrives
    decoded."""
    return NodeRow(
        str(row[0]), str(row[1]), str(row[2]), str(row[3] or ""), str(row[4]), str(row[5]),
        str(row[6]), str(row[7]), _text(row[8]), _text(row[9]), _text(row[10]),
        _text(row[11]), _text(row[12]), tuple(decode(row[13])), dict(decode(row[14])),
        tuple(decode(row[15])), float(row[16]), int(row[17]), int(row[18]))
