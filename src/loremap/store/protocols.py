"""What the layers above ask of an index, as protocols both backends satisfy.

`Store` is what the services (remember, forget, reconcile, doctor) need; `SearchStore` the
search engine's reads (text, names, the graph walk, vectors); `CodeStore` the code map's
operations (index, graph, rank, render, the hooks' warnings). `IndexStore` is all of them:
what `App` holds and the code map takes. They are declared here, below `search` and
`codemap`, so those layers and `App` name an index without naming a backend;
`tests/test_store_contract.py` runs the same operations on both. `AuditLog` is not part of
the index: it is the audit chain, which lives beside it (a file of its own on SQLite,
append-only tables on PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from loremap.audit import Entry, Record, Stamp
from loremap.model import Edge, IndexedNote, Note, NoteStamp
from loremap.model.code import CodeFile, FileStamp
from loremap.model.search import Filters, Neighbor, NodeRow, SymbolRow, TextQuery
from loremap.store.rows import ErrorRow, FileRow
from loremap.text import Analyzer


class Store(Protocol):
    """Operations the services need from an index."""

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

    def erase_note(self, note_id: str) -> None:
        """Remove every row of the note (inside `write()`): its index rows and vectors, and on
        a shared database every text it had (versions included), leaving a tombstone that
        says erased with the id and last hash only (`forget --erase`)."""
        ...

    def compact(self) -> list[str]:
        """After an erasure has committed: free the erased bytes from the store's files where
        it can (SQLite: the FTS segments merged, VACUUM, the WAL truncated; PostgreSQL:
        VACUUM of the touched tables); what it could not do, as warnings."""
        ...

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

    def error_notes(self, signature: str = "", command: str | None = None) -> list[ErrorRow]:
        """The active error notes recording `signature` (text/signature.py) or `command`
        (`command_key`), oldest first, each with its remedy's title."""
        ...

    def failed_commands(self) -> dict[str, list[ErrorRow]]:
        """Every active error note's command -> its notes, oldest first: the table the hooks
        keep before each shell command on a shared database."""
        ...

    def existing_ids(self, ids: Iterable[str]) -> set[str]: ...

    def broken_vectors(self) -> int:
        """How many stored vectors are corrupt (search skips them; doctor reports them)."""
        ...


class VectorStore(Protocol):
    """Embeddings by (node, model, chunk): a long node is embedded in chunks and scores as its
    best one. Each model's dimension is recorded with its first vectors; `search.embed` fills
    and queries them. Writes go inside `write()`."""

    def missing_vectors(self, model: str, limit: int) -> list[tuple[str, str]]:
        """(id, text) of up to `limit` nodes without a vector of `model`."""
        ...

    def put_vectors(self, model: str, dim: int,
                    rows: Iterable[tuple[str, int, Sequence[float]]]) -> None:
        """Store (node id, chunk, vector) rows of `model`, replacing those nodes' earlier
        chunks of it. `InvalidInput`, and nothing written, for a `dim` other than the one
        recorded for `model` (the message says to run `loremap reembed`) or a row whose
        vector is not `dim` finite numbers."""
        ...

    def nearest_vectors(self, model: str, vec: Sequence[float], limit: int
                        ) -> list[tuple[str, float]]:
        """(id, cosine) of the `limit` nodes nearest `vec`, one per node (its best chunk),
        best first; vectors are unit length, so the dot product is the cosine. Nothing for a
        model without vectors; `InvalidInput` for a `vec` of another dimension than the
        model's. A stored vector of the wrong length is skipped (`broken_vectors`)."""
        ...

    def best_chunks(self, model: str, vec: Sequence[float], ids: Sequence[str]
                    ) -> dict[str, tuple[int, int]]:
        """Each node of `ids` -> (the number of its chunk of `model` nearest `vec`, how many
        chunks of it the node has); ties go to the lowest number; a node without such a vector
        is left out. Nothing for a model without vectors; `InvalidInput` for a `vec` of
        another dimension than the model's."""
        ...

    def vector_models(self) -> list[tuple[str, int, int]]:
        """(model, dimension, nodes with a vector of it) of every recorded model, by name."""
        ...

    def broken_vectors(self) -> int:
        """How many stored vectors `nearest_vectors` skips as corrupt."""
        ...

    def drop_vectors(self, model: str | None) -> None:
        """Forget the vectors of `model` and its recorded dimension (None: every model's)."""
        ...


class SearchStore(VectorStore, Protocol):
    """The search engine's reads. `edge_batch`: how many nodes' edges one read of the walk
    should fetch (1 where a read is a local call, more where each is a round trip)."""

    edge_batch: int

    def node_count(self) -> int: ...

    def language_files(self) -> dict[str, int]:
        """language -> how many source files of the index are written in it."""
        ...

    def doc_freqs(self, terms: Sequence[str], cap: int) -> dict[str, int]: ...

    def text_search(self, query: TextQuery, limit: int, filters: Filters,
                    weights: Sequence[float]) -> list[tuple[str, float]]: ...

    def section_search(self, query: TextQuery, limit: int) -> list[tuple[str, int, float]]: ...

    def nodes(self, ids: Sequence[str], filters: Filters | None = None
              ) -> dict[str, NodeRow]: ...

    def held_terms(self, node_ids: Iterable[str], terms: Iterable[str]
                   ) -> dict[str, set[str]]: ...

    def neighborhoods(self, nodes: Sequence[str], cap: int
                      ) -> Mapping[str, list[Neighbor] | None]:
        """Every node of `nodes` -> its edges seen from it, heaviest first; None for a node
        with more than `cap` edges, whose edges are not read."""
        ...

    def neighbors(self, node_id: str, limit: int = 256) -> list[Neighbor]: ...

    def degree(self, node_id: str) -> int: ...

    def degree_over(self, node_id: str, limit: int) -> bool: ...

    def files_named(self, names: Iterable[str]) -> dict[str, list[str]]: ...

    def symbols_named(self, names: Iterable[str], max_definers: int) -> list[SymbolRow]: ...

    def existing_ids(self, ids: Iterable[str]) -> set[str]: ...

    def symbols_in(self, paths: Sequence[str]) -> dict[str, list[tuple[str, str, int]]]: ...


class CodeStore(Protocol):
    """The code map's operations (changes inside `write()`): files with their definitions
    and references, the file graph and its ranks, module nodes, and the reads of the map
    pages, `show` and the hooks. `analyzer`: the one the index's text was built with."""

    analyzer: Analyzer

    # --- files ------------------------------------------------------------------------------

    def source_file_count(self) -> int: ...

    def skipped_counts(self) -> dict[str, int]: ...

    def file_stamps(self) -> dict[str, FileStamp]: ...

    def defined_names(self, paths: Iterable[str]) -> set[str]: ...

    def upsert_file(self, file: CodeFile) -> None: ...

    def set_subjects(self, subjects: dict[str, tuple[str, ...]]) -> int:
        """Record each file's latest commit subjects; the number of files whose changed."""
        ...

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None: ...

    def delete_files(self, paths: Iterable[str]) -> None: ...

    # --- graph ------------------------------------------------------------------------------

    def file_imports(self, paths: Iterable[str] | None = None
                     ) -> list[tuple[str, str, list[str]]]: ...

    def all_file_paths(self) -> list[str]: ...

    def replace_edges(self, origin: str, edges: Iterable[Edge], sources: Iterable[str] | None
                      = None) -> None: ...

    def rebuild_reference_edges(self, sources: Iterable[str] | None = None,
                                max_definers: int = 20) -> None: ...

    def referencing(self, names: Iterable[str]) -> set[str]: ...

    def outgoing(self, sources: Iterable[str]) -> set[tuple[str, str, str, float]]: ...

    def weighted_edges(self, origins: Sequence[str]) -> Iterator[tuple[str, str, float]]: ...

    def graph_edges(self, origins: Sequence[str], touching: Iterable[str] | None = None
                    ) -> list[Edge]: ...

    def file_ranks(self) -> dict[str, float]: ...

    def set_file_ranks(self, ranks: dict[str, float]) -> None: ...

    def replace_modules(self, modules: dict[str, tuple[str, float]], partial: bool = False
                        ) -> None: ...

    # --- reading ----------------------------------------------------------------------------

    def code_files(self) -> list[FileRow]: ...

    def file_row(self, path: str) -> FileRow | None: ...

    def symbols_of(self, path: str) -> list[tuple[str, str, int]]: ...

    def symbols_in(self, paths: Sequence[str]) -> dict[str, list[tuple[str, str, int]]]: ...

    def module_symbols(self, module: str) -> dict[str, list[tuple[str, str, int]]]: ...

    def notes_by_path(self) -> dict[str, list[tuple[str, str, str]]]: ...

    def notes_about(self, paths: Sequence[str]) -> list[tuple[str, str, str]]: ...

    def file_warnings(self, path: str, types: Sequence[str]
                      ) -> list[tuple[str, str, str, str]]: ...

    def warnings_by_path(self, types: Sequence[str]
                         ) -> dict[str, list[tuple[str, str, str, str]]]:
        """Every path -> `file_warnings` of it, in one read."""
        ...

    def module_summaries(self) -> dict[str, str]: ...

    def notes_digest(self) -> str: ...

    def note_counts(self) -> dict[str, int]: ...


class IndexStore(Store, SearchStore, CodeStore, Protocol):
    """A whole index: what `App` opens (SQLite or PostgreSQL) and the code map takes."""


# Appends entries to the chain as records stamped alike; returns the records written.
Append = Callable[[Sequence[Entry], Stamp], list[Record]]


class AuditLog(Protocol):
    """One audit chain (docs/audit.md): a project's, or the personal vault's. Records are
    appended, never changed; `location` says where the chain is, for messages."""

    location: str

    def appending(self) -> AbstractContextManager[Append]:
        """A block to append records in, entered around the index's write transaction and the
        appender called inside it, so the records commit with the change: in the same
        transaction on PostgreSQL; on SQLite in the chain's own file, whose transaction opens
        at the append (which then waits for the chain's lock) and commits when the block
        ends. Nothing is appended when the block fails."""
        ...

    def records(self, note: str | None = None, since: str | None = None) -> Iterator[Record]:
        """The records, oldest first, with their payloads (None where erased); only those of
        `note`, or at or after the time `since` (ISO 8601), when given."""
        ...

    def close(self) -> None:
        """Let go of what the chain holds open (a connection of its own, if any)."""
        ...
