"""The SQLite schema, as ordered migrations recorded in the `migrations` table.

Each migration is a function applied inside the caller's write transaction; `migrate` applies
those not yet recorded. A database whose recorded version is newer than the code refuses to open.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

from loremap.errors import SchemaTooNew

# unicode61 with '_' as a token character indexes the analyzer's tokens ([a-z0-9_]+) as they are.
FTS_TOKENIZER = "unicode61 remove_diacritics 0 tokenchars '_'"
# The FTS columns, in order. `content` holds a code file's whole text (analyzer tokens).
FTS_COLUMNS = ("title", "body", "tags", "symbols", "path", "content")
# (Their bm25() weights are the search engine's: loremap.search.config.DEFAULT_WEIGHTS.)


def _m1_initial(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE nodes (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            scope TEXT NOT NULL DEFAULT 'project',
            type TEXT,
            title TEXT NOT NULL DEFAULT '',
            body TEXT NOT NULL DEFAULT '',
            path TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL DEFAULT 'active',
            recorded_at TEXT,
            valid_from TEXT,
            valid_to TEXT,
            superseded_by TEXT,
            commit_sha TEXT,
            files TEXT NOT NULL DEFAULT '[]',
            tags TEXT NOT NULL DEFAULT '[]',
            content_hash TEXT NOT NULL DEFAULT '',
            mtime_ns INTEGER NOT NULL DEFAULT 0,
            size INTEGER NOT NULL DEFAULT 0,
            rank REAL NOT NULL DEFAULT 0,
            access_count INTEGER NOT NULL DEFAULT 0,
            last_access TEXT
        )"""
    )
    conn.execute("CREATE INDEX nodes_kind_type ON nodes(kind, type, status)")
    conn.execute(
        """CREATE TABLE edges (
            src TEXT NOT NULL,
            dst TEXT NOT NULL,
            rel TEXT NOT NULL,
            origin TEXT NOT NULL,
            weight REAL NOT NULL DEFAULT 1.0,
            PRIMARY KEY (src, dst, rel, origin)
        ) WITHOUT ROWID"""
    )
    conn.execute("CREATE INDEX edges_dst ON edges(dst)")
    conn.execute(
        f"CREATE VIRTUAL TABLE fts USING fts5(title, body, tags, symbols, path, "
        f'tokenize="{FTS_TOKENIZER}")'
    )
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


def _m2_code_map(conn: sqlite3.Connection) -> None:
    """The code map: indexed files with their parse facts, definitions and referenced names."""
    conn.execute(
        """CREATE TABLE files (
            path TEXT PRIMARY KEY,
            module TEXT NOT NULL,
            language TEXT,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            content_hash TEXT NOT NULL,
            docstring TEXT NOT NULL DEFAULT '',
            imports TEXT NOT NULL DEFAULT '[]',
            subjects TEXT NOT NULL DEFAULT '[]',
            syntax_errors INTEGER NOT NULL DEFAULT 0,
            skip TEXT,
            rank REAL NOT NULL DEFAULT 0
        ) WITHOUT ROWID"""
    )
    conn.execute("CREATE INDEX files_module ON files(module)")
    conn.execute(
        "CREATE TABLE symbols (file TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, "
        "line INTEGER NOT NULL)"
    )
    conn.execute("CREATE INDEX symbols_name ON symbols(name)")
    conn.execute("CREATE INDEX symbols_file ON symbols(file)")
    conn.execute(
        "CREATE TABLE refs (file TEXT NOT NULL, name TEXT NOT NULL, PRIMARY KEY (file, name)) "
        "WITHOUT ROWID"
    )
    conn.execute("CREATE INDEX refs_name ON refs(name)")
    conn.execute("CREATE INDEX edges_origin ON edges(origin)")


def _m3_search(conn: sqlite3.Connection) -> None:
    """Hybrid search: code files' whole text in FTS, sections of code files,
    note aliases and recorded file hashes (for entities and staleness), file names, embeddings.

    FTS5 cannot add a column, so the text index is made again; every derived row is cleared
    with it, and the next command re-reads the notes (and `loremap index` the code).
    """
    conn.execute("DROP TABLE fts")
    conn.execute(
        f"CREATE VIRTUAL TABLE fts USING fts5({', '.join(FTS_COLUMNS)}, "
        f'tokenize="{FTS_TOKENIZER}")'
    )
    # Sections of code files (a run of definitions, a dozen lines or more): a long file's
    # relevant function would drown in the file's other text, so sections are ranked too.
    conn.execute("CREATE TABLE sections (rowid INTEGER PRIMARY KEY, file TEXT NOT NULL, "
                 "line INTEGER NOT NULL)")
    conn.execute("CREATE INDEX sections_file ON sections(file)")
    conn.execute(f'CREATE VIRTUAL TABLE chunks USING fts5(text, tokenize="{FTS_TOKENIZER}")')
    conn.execute("ALTER TABLE nodes ADD COLUMN aliases TEXT NOT NULL DEFAULT '[]'")
    conn.execute("ALTER TABLE nodes ADD COLUMN file_hashes TEXT NOT NULL DEFAULT '{}'")
    conn.execute("ALTER TABLE files ADD COLUMN name TEXT NOT NULL DEFAULT ''")
    conn.execute("CREATE INDEX files_name ON files(name)")
    conn.execute(
        "CREATE TABLE vectors (id TEXT NOT NULL, model TEXT NOT NULL, vec BLOB NOT NULL, "
        "PRIMARY KEY (model, id)) WITHOUT ROWID"
    )
    # The node count, kept by triggers: `count(*)` walks a whole index, and search needs the
    # count on every query.
    conn.execute("CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)")
    conn.execute("INSERT INTO counters VALUES ('nodes', 0)")
    conn.execute("CREATE TRIGGER nodes_added AFTER INSERT ON nodes BEGIN "
                 "UPDATE counters SET value = value + 1 WHERE name = 'nodes'; END")
    conn.execute("CREATE TRIGGER nodes_removed AFTER DELETE ON nodes BEGIN "
                 "UPDATE counters SET value = value - 1 WHERE name = 'nodes'; END")
    for table in ("nodes", "edges", "files", "symbols", "refs", "meta"):
        conn.execute(f"DELETE FROM {table}")
    conn.execute("UPDATE counters SET value = 0")


def _m4_vector_chunks(conn: sqlite3.Connection) -> None:
    """Vectors by chunk (a long node is embedded in parts and scores as its best one), each
    model's dimension recorded in `vector_models`, in a rowid table (rows of 1.5 kB took
    twice the space WITHOUT ROWID) with the node's id indexed (a rewritten node drops its
    vectors by id). The vectors of a model whose blobs all have one length are kept as its
    chunk 0; those of a model with mixed lengths are dropped, to be embedded again."""
    conn.execute("ALTER TABLE vectors RENAME TO vectors_m3")
    conn.execute("CREATE TABLE vectors (id TEXT NOT NULL, model TEXT NOT NULL, "
                 "chunk INTEGER NOT NULL, vec BLOB NOT NULL)")
    conn.execute("CREATE UNIQUE INDEX vectors_key ON vectors (model, id, chunk)")
    conn.execute("CREATE INDEX vectors_id ON vectors (id)")
    conn.execute("CREATE TABLE vector_models (model TEXT PRIMARY KEY, dim INTEGER NOT NULL)")
    conn.execute(
        "INSERT INTO vector_models (model, dim) SELECT model, max(length(vec)) / 4 FROM "
        "vectors_m3 GROUP BY model HAVING count(DISTINCT length(vec)) = 1 AND "
        "max(length(vec)) % 4 = 0 AND max(length(vec)) > 0")
    conn.execute("INSERT INTO vectors (id, model, chunk, vec) SELECT id, model, 0, vec FROM "
                 "vectors_m3 WHERE model IN (SELECT model FROM vector_models)")
    conn.execute("DROP TABLE vectors_m3")


def _m5_track_record_and_errors(conn: sqlite3.Connection) -> None:
    """A procedure's track record (`successes`, `failures` of its frontmatter) on its node, so
    recall can rank by it; an error note's `signature`, `remedy` and `command`, so the hooks
    find it again when the same error or command comes back. A note that held the keys before
    is read for them once its file is indexed again (`loremap reindex`, or any edit)."""
    conn.execute("ALTER TABLE nodes ADD COLUMN successes INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE nodes ADD COLUMN failures INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE nodes ADD COLUMN signature TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE nodes ADD COLUMN remedy TEXT")
    conn.execute("ALTER TABLE nodes ADD COLUMN command TEXT")
    conn.execute("CREATE INDEX nodes_signature ON nodes(signature) WHERE signature != ''")
    conn.execute("CREATE INDEX nodes_command ON nodes(command) WHERE command IS NOT NULL")


def _m6_audit(conn: sqlite3.Connection) -> None:
    """Schema 6 is the audit chain, which on SQLite lives in a file of its own
    (`store/sqlite/audit.py`), never in this index: an index is derived, dropped by `reindex`
    and set aside when damaged, and the chain is not derived. Nothing changes here; the
    version says that this index was opened by a loremap that records every change, and keeps
    one schema number for both stores (PostgreSQL's migration 6 makes the audit tables)."""


def _m7_erased_tombstones(conn: sqlite3.Connection) -> None:
    """Schema 7 marks erased tombstones on a shared database (`note_docs.erased`); a SQLite
    index keeps no tombstones, so nothing changes here: one schema number for both stores."""


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _m1_initial, _m2_code_map, _m3_search, _m4_vector_chunks, _m5_track_record_and_errors,
    _m6_audit, _m7_erased_tombstones)


def current_version(conn: sqlite3.Connection) -> int:
    """The schema version recorded in the file (0 for a new file); a read, never a write."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrations'").fetchone()
    if exists is None:
        return 0
    row = conn.execute("SELECT max(version) FROM migrations").fetchone()
    return int(row[0] or 0)


def migrate(conn: sqlite3.Connection) -> int:
    """Apply pending migrations (inside the caller's transaction); return the new version."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " applied_at REAL NOT NULL)"
    )
    version = current_version(conn)
    if version > len(MIGRATIONS):
        raise SchemaTooNew(
            f"the index has schema version {version}, newer than this loremap knows "
            f"({len(MIGRATIONS)}); upgrade loremap or run `loremap reindex`"
        )
    for number, step in enumerate(MIGRATIONS[version:], start=version + 1):
        step(conn)
        conn.execute("INSERT INTO migrations VALUES (?, ?, ?)",
                     (number, step.__name__.lstrip("_"), time.time()))
    return len(MIGRATIONS)


def drop_all(conn: sqlite3.Connection) -> None:
    """Drop every table of ours (inside the caller's transaction)."""
    for name in ("fts", "chunks", "sections", "edges", "nodes", "meta", "files",
                 "symbols", "refs", "vectors", "vector_models", "counters", "migrations"):
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')
