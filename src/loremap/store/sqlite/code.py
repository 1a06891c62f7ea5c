"""The code tables of the SQLite index: files, their definitions and the names they use.

Files are nodes of the same graph as the notes (`nodes.kind = 'file'`, id = the repository
path; modules are `kind = 'module'`, id = the folder path with a trailing `/`), searchable
through the same FTS table: the path and file name weigh like a title, the definitions go to
the `symbols` column, the top docstring and the last commit subjects to the body.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence

from loremap.model import Edge
from loremap.model.code import CodeFile, FileStamp
from loremap.store.rows import (
    ERROR_COLUMNS,
    FILE_COLUMNS,
    ErrorRow,
    FileRow,
    error_row,
    file_body,
    read_file_row,
)
from loremap.text import Analyzer


class CodeTables:
    """Mixin of `SqliteStore`: the code-map operations (inside `write()` for changes)."""

    conn: sqlite3.Connection
    analyzer: Analyzer

    def source_file_count(self) -> int:
        return int(self.conn.execute(
            "SELECT count(*) FROM files WHERE language IS NOT NULL").fetchone()[0])

    def skipped_counts(self) -> dict[str, int]:
        """Files whose content was left out, by reason (recorded so they are not re-read)."""
        return {r[0]: r[1] for r in self.conn.execute(
            "SELECT skip, count(*) FROM files WHERE skip IS NOT NULL GROUP BY skip")}

    def file_stamps(self) -> dict[str, FileStamp]:
        rows = self.conn.execute("SELECT path, size, mtime_ns, content_hash FROM files")
        return {r[0]: FileStamp(r[1], r[2], r[3]) for r in rows}

    def defined_names(self, paths: Iterable[str]) -> set[str]:
        """The names the given files define (to know whose reference edges a change moves)."""
        names: set[str] = set()
        for path in paths:
            names.update(r[0] for r in self.conn.execute(
                "SELECT name FROM symbols WHERE file = ?", (path,)))
        return names

    def upsert_file(self, file: CodeFile) -> None:
        """Insert or replace one file: its row, definitions, references and search text."""
        c = self.conn
        old = c.execute("SELECT rank, subjects FROM files WHERE path = ?",
                        (file.path,)).fetchone()
        rank = old[0] if old is not None else 0.0  # kept until the graph is ranked again
        if old is not None and not file.subjects:
            # Parsing knows nothing of history: the commit subjects stay until git's next read.
            file = file._replace(subjects=tuple(json.loads(old[1])))
        self._forget_file(file.path, keep_edges=True)
        c.execute(
            "INSERT INTO files (path, module, language, size, mtime_ns, content_hash, docstring,"
            " imports, subjects, syntax_errors, skip, rank, name) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (file.path, file.module, file.language, file.size, file.mtime_ns,
             file.content_hash, file.docstring, json.dumps(list(file.imports)),
             json.dumps(list(file.subjects)), int(file.syntax_errors), file.skip, rank,
             file.path.rsplit("/", 1)[-1]))
        c.executemany("INSERT INTO symbols (file, name, kind, line) VALUES (?, ?, ?, ?)",
                      [(file.path, d.name, d.kind, d.line) for d in file.definitions])
        c.executemany("INSERT OR IGNORE INTO refs (file, name) VALUES (?, ?)",
                      [(file.path, name) for name in file.references])
        if file.language is not None:
            self._index_file_node(file, rank)
            for line, text in file.chunks:
                cur = c.execute("INSERT INTO sections (file, line) VALUES (?, ?)",
                                (file.path, line))
                c.execute("INSERT INTO chunks (rowid, text) VALUES (?, ?)",
                          (cur.lastrowid, text))

    def _index_file_node(self, file: CodeFile, rank: float) -> None:
        c = self.conn
        path = file.path
        body = file_body(file.docstring, file.subjects)
        cur = c.execute("INSERT INTO nodes (id, kind, title, body, path, rank) "
                        "VALUES (?, 'file', ?, ?, ?, ?)", (path, path, body, path, rank))
        tokens = self.analyzer.tokens
        c.execute(
            "INSERT INTO fts (rowid, title, body, tags, symbols, path, content) "
            "VALUES (?, ?, ?, '', ?, ?, ?)",
            (cur.lastrowid, " ".join(tokens(path.rsplit("/", 1)[-1])), " ".join(tokens(body)),
             " ".join(tokens(" ".join(d.name for d in file.definitions))),
             " ".join(tokens(path)), file.text))

    def set_subjects(self, subjects: dict[str, tuple[str, ...]]) -> int:
        """Record the latest commit subjects of each file; re-index the body of those that
        changed (FTS5 rewrites one column of a row in place; the content stays)."""
        changed = 0
        c = self.conn
        rows = c.execute("SELECT f.path, f.subjects, f.docstring, n.rowid FROM files f "
                         "JOIN nodes n ON n.id = f.path WHERE f.language IS NOT NULL").fetchall()
        for path, old, docstring, rowid in rows:
            new = list(subjects.get(path, ()))
            if json.loads(old) == new:
                continue
            changed += 1
            body = file_body(docstring, new)
            c.execute("UPDATE files SET subjects = ? WHERE path = ?", (json.dumps(new), path))
            c.execute("UPDATE nodes SET body = ? WHERE rowid = ?", (body, rowid))
            c.execute("UPDATE fts SET body = ? WHERE rowid = ?",
                      (" ".join(self.analyzer.tokens(body)), rowid))
        return changed

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        self.conn.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?",
                          (size, mtime_ns, path))

    def delete_files(self, paths: Iterable[str]) -> None:
        for path in paths:
            self._forget_file(path, keep_edges=False)

    def _drop_node(self, node_id: str) -> None:
        row = self.conn.execute("SELECT rowid FROM nodes WHERE id = ?", (node_id,)).fetchone()
        if row is not None:
            self.conn.execute("DELETE FROM fts WHERE rowid = ?", (row[0],))
            self.conn.execute("DELETE FROM nodes WHERE rowid = ?", (row[0],))
        self.conn.execute("DELETE FROM vectors WHERE id = ?", (node_id,))

    def _forget_file(self, path: str, keep_edges: bool) -> None:
        c = self.conn
        c.execute("DELETE FROM files WHERE path = ?", (path,))
        c.execute("DELETE FROM symbols WHERE file = ?", (path,))
        c.execute("DELETE FROM refs WHERE file = ?", (path,))
        c.execute("DELETE FROM chunks WHERE rowid IN (SELECT rowid FROM sections WHERE "
                  "file = ?)", (path,))
        c.execute("DELETE FROM sections WHERE file = ?", (path,))
        self._drop_node(path)
        if not keep_edges:
            c.execute("DELETE FROM edges WHERE (src = ? OR dst = ?) AND origin NOT IN "
                      "('declared', 'files')", (path, path))

    # --- graph -----------------------------------------------------------------------------

    def file_imports(self, paths: Iterable[str] | None = None
                     ) -> list[tuple[str, str, list[str]]]:
        """(path, language, import specifiers) of every parsed source file (or of `paths`)."""
        sql = "SELECT path, language, imports FROM files WHERE language IS NOT NULL"
        if paths is None:
            rows = self.conn.execute(sql + " ORDER BY path").fetchall()
        else:
            rows = [row for p in sorted(set(paths))
                    for row in self.conn.execute(sql + " AND path = ?", (p,))]
        return [(r[0], r[1], json.loads(r[2])) for r in rows]

    def all_file_paths(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT path FROM files ORDER BY path")]

    def replace_edges(self, origin: str, edges: Iterable[Edge], sources: Iterable[str] | None
                      = None) -> None:
        """Replace the edges of `origin` (only those leaving `sources`, when given)."""
        c = self.conn
        if sources is None:
            c.execute("DELETE FROM edges WHERE origin = ?", (origin,))
        else:
            c.executemany("DELETE FROM edges WHERE origin = ? AND src = ?",
                          [(origin, s) for s in sources])
        c.executemany("INSERT OR REPLACE INTO edges (src, dst, rel, origin, weight) "
                      "VALUES (?, ?, ?, ?, ?)",
                      [(e.src, e.dst, e.rel, e.origin, e.weight) for e in edges])

    def rebuild_reference_edges(self, sources: Iterable[str] | None = None,
                                max_definers: int = 20) -> None:
        """File -> file edges for every name a file uses that another file defines.

        Weighted like Aider's repository map: a name defined in many files says little, so
        each shared name adds 1/(number of files defining it), times 10 for a specific-looking
        name (8+ characters with `_` or a capital: `BlockContext`, `apply_coupon`, where `pop`
        or `render` could be anyone's method) and times 0.1 for a private one (`_x`); names
        defined in more than `max_definers` files, or shorter than three characters, add
        nothing. With `sources`, only the edges leaving those files are recomputed.
        """
        c = self.conn
        if sources is None:
            c.execute("DELETE FROM edges WHERE origin = 'reference'")
            scope, names = "", ""
        else:
            c.execute("CREATE TEMP TABLE IF NOT EXISTS ref_sources (file TEXT PRIMARY KEY)")
            c.execute("DELETE FROM ref_sources")
            c.executemany("INSERT OR IGNORE INTO ref_sources VALUES (?)", [(s,) for s in sources])
            c.execute("DELETE FROM edges WHERE origin = 'reference' AND src IN "
                      "(SELECT file FROM ref_sources)")
            scope = "AND r.file IN (SELECT file FROM ref_sources) "
            names = ("AND name IN (SELECT name FROM refs WHERE file IN "
                     "(SELECT file FROM ref_sources)) ")
        c.execute(
            "INSERT INTO edges (src, dst, rel, origin, weight) "
            "SELECT r.file, s.file, 'references', 'reference', SUM(1.0 / d.n "
            "  * (CASE WHEN length(r.name) >= 8 AND (instr(r.name, '_') > 0 "
            "       OR lower(r.name) != r.name) THEN 10.0 ELSE 1.0 END) "
            "  * (CASE WHEN substr(r.name, 1, 1) = '_' THEN 0.1 ELSE 1.0 END)) "
            "FROM refs r "
            "JOIN (SELECT name, COUNT(DISTINCT file) AS n FROM symbols "
            f"      WHERE length(name) >= 3 {names}GROUP BY name HAVING n <= ?) d "
            "ON d.name = r.name "
            f"JOIN (SELECT DISTINCT file, name FROM symbols WHERE 1 {names}) s "
            "ON s.name = r.name "
            f"WHERE s.file != r.file {scope}GROUP BY r.file, s.file",
            (max_definers,))

    def referencing(self, names: Iterable[str]) -> set[str]:
        """Files that use any of `names`."""
        found: set[str] = set()
        for name in names:
            found.update(r[0] for r in self.conn.execute(
                "SELECT file FROM refs WHERE name = ?", (name,)))
        return found

    def outgoing(self, sources: Iterable[str]) -> set[tuple[str, str, str, float]]:
        """The import and reference edges leaving `sources` (to tell whether a change moved
        the graph at all)."""
        out: set[tuple[str, str, str, float]] = set()
        for src in sources:
            out.update((r[0], r[1], r[2], round(r[3], 12)) for r in self.conn.execute(
                "SELECT src, dst, origin, weight FROM edges WHERE src = ? AND origin IN "
                "('import', 'reference')", (src,)))
        return out

    def weighted_edges(self, origins: Sequence[str]) -> Iterator[tuple[str, str, float]]:
        """(src, dst, weight) of the edges of `origins`, streamed: PageRank reads them once,
        and a large repository's edges need not all be held as Python objects."""
        marks = ", ".join("?" for _ in origins)
        yield from self.conn.execute(
            f"SELECT src, dst, weight FROM edges WHERE origin IN ({marks}) ORDER BY src, dst",
            list(origins))

    def graph_edges(self, origins: Sequence[str], touching: Iterable[str] | None = None
                    ) -> list[Edge]:
        """Edges of `origins` (only those leaving or reaching `touching`, when given)."""
        marks = ", ".join("?" for _ in origins)
        where = ""
        if touching is not None:
            self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS touching (node TEXT PRIMARY KEY)")
            self.conn.execute("DELETE FROM touching")
            self.conn.executemany("INSERT OR IGNORE INTO touching VALUES (?)",
                                  [(n,) for n in touching])
            where = (" AND (src IN (SELECT node FROM touching) OR "
                     "dst IN (SELECT node FROM touching))")
        rows = self.conn.execute(
            f"SELECT src, dst, rel, origin, weight FROM edges WHERE origin IN ({marks}){where} "
            "ORDER BY src, dst, rel", list(origins))
        return [Edge(*r) for r in rows]

    def file_ranks(self) -> dict[str, float]:
        return {r[0]: r[1] for r in self.conn.execute(
            "SELECT path, rank FROM files WHERE language IS NOT NULL")}

    def set_file_ranks(self, ranks: dict[str, float]) -> None:
        self.conn.executemany("UPDATE files SET rank = ? WHERE path = ?",
                              [(rank, path) for path, rank in ranks.items()])
        self.conn.executemany("UPDATE nodes SET rank = ? WHERE id = ?",
                              [(rank, path) for path, rank in ranks.items()])

    def replace_modules(self, modules: dict[str, tuple[str, float]], partial: bool = False
                        ) -> None:
        """Module nodes: folder path + '/' -> (summary, rank); searchable like files.

        `partial` replaces only the given modules and leaves the others as they are.
        """
        c = self.conn
        if partial:
            stale = [((m or ".") + "/",) for m in modules]
        else:
            stale = c.execute("SELECT id FROM nodes WHERE kind = 'module'").fetchall()
        for (node_id,) in stale:
            self._drop_node(node_id)
        tokens = self.analyzer.tokens
        for module, (summary, rank) in sorted(modules.items()):
            node_id = (module or ".") + "/"
            cur = c.execute("INSERT INTO nodes (id, kind, title, body, path, rank) "
                            "VALUES (?, 'module', ?, ?, ?, ?)",
                            (node_id, node_id, summary, module, rank))
            c.execute("INSERT INTO fts (rowid, title, body, tags, symbols, path, content) "
                      "VALUES (?, ?, ?, '', '', ?, '')",
                      (cur.lastrowid, " ".join(tokens(module.rsplit("/", 1)[-1])),
                       " ".join(tokens(summary)), " ".join(tokens(module))))

    # --- reading ----------------------------------------------------------------------------

    def code_files(self) -> list[FileRow]:
        rows = self.conn.execute(f"SELECT {FILE_COLUMNS} FROM files "
                                 "WHERE language IS NOT NULL ORDER BY path")
        return [read_file_row(r) for r in rows]

    def file_row(self, path: str) -> FileRow | None:
        row = self.conn.execute(f"SELECT {FILE_COLUMNS} FROM files WHERE path = ?",
                                (path,)).fetchone()
        return None if row is None else read_file_row(row)

    def symbols_of(self, path: str) -> list[tuple[str, str, int]]:
        return [(r[0], r[1], r[2]) for r in self.conn.execute(
            "SELECT name, kind, line FROM symbols WHERE file = ? ORDER BY line, name", (path,))]

    def symbols_in(self, paths: Sequence[str]) -> dict[str, list[tuple[str, str, int]]]:
        """Every path of `paths` -> its definitions as `symbols_of` gives them."""
        return {path: self.symbols_of(path) for path in dict.fromkeys(paths)}

    def module_symbols(self, module: str) -> dict[str, list[tuple[str, str, int]]]:
        """path -> (name, kind, line) definitions of the files of one module, in line order."""
        out: dict[str, list[tuple[str, str, int]]] = {}
        for path, name, kind, line in self.conn.execute(
                "SELECT s.file, s.name, s.kind, s.line FROM files f JOIN symbols s "
                "ON s.file = f.path WHERE f.module = ? ORDER BY s.file, s.line, s.name",
                (module,)):
            out.setdefault(path, []).append((name, kind, line))
        return out

    def notes_by_path(self) -> dict[str, list[tuple[str, str, str]]]:
        """path -> (id, type, title) of the active notes naming it in `files` or a link."""
        out: dict[str, set[tuple[str, str, str]]] = {}
        for note_id, note_type, title, files in self.conn.execute(
                "SELECT id, type, title, files FROM nodes WHERE kind = 'note' AND "
                "status = 'active'"):
            for path in json.loads(files):
                out.setdefault(path, set()).add((note_id, note_type or "", title))
        for dst, note_id, note_type, title in self.conn.execute(
                "SELECT e.dst, n.id, n.type, n.title FROM edges e JOIN nodes n ON n.id = e.src "
                "WHERE e.origin = 'declared' AND n.kind = 'note' AND n.status = 'active'"):
            out.setdefault(dst, set()).add((note_id, note_type or "", title))
        return {path: sorted(notes) for path, notes in out.items()}

    def notes_about(self, paths: Sequence[str]) -> list[tuple[str, str, str]]:
        """(id, type, title) of active notes whose files or links name one of `paths`."""
        by_path = self.notes_by_path()
        return sorted({note for path in paths for note in by_path.get(path, ())})

    def file_warnings(self, path: str, types: Sequence[str]) -> list[tuple[str, str, str, str]]:
        """(id, type, title, body) of active notes of `types` naming `path`, newest first.

        One query over the notes of those types (the index on kind/type/status), instead of
        `notes_by_path`'s walk over every note: the pre-tool hook asks this before each read.
        """
        marks = ", ".join("?" for _ in types)
        rows = self.conn.execute(
            "SELECT id, type, title, body FROM nodes n WHERE kind = 'note' AND status = 'active' "
            f"AND type IN ({marks}) AND (EXISTS (SELECT 1 FROM json_each(n.files) j "
            "WHERE j.value = ?) OR EXISTS (SELECT 1 FROM edges e WHERE e.src = n.id AND "
            "e.dst = ? AND e.origin = 'declared')) ORDER BY recorded_at DESC, id",
            (*types, path, path))
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def warnings_by_path(self, types: Sequence[str]) -> dict[str, list[tuple[str, str, str, str]]]:
        """Every path (in a note's `files` or a declared link) -> `file_warnings` of it, in
        one query (what the pre-tool hook keeps for a while on a shared database)."""
        out: dict[str, list[tuple[str, str, str, str]]] = {}
        if not types:
            return out
        marks = ", ".join("?" for _ in types)
        for note_id, note_type, title, body, files, links in self.conn.execute(
                "SELECT id, type, title, body, files, (SELECT json_group_array(e.dst) FROM "
                "edges e WHERE e.src = n.id AND e.origin = 'declared') FROM nodes n WHERE "
                f"kind = 'note' AND status = 'active' AND type IN ({marks}) "
                "ORDER BY recorded_at DESC, id", tuple(types)):
            for path in dict.fromkeys([*json.loads(files), *json.loads(links)]):
                out.setdefault(path, []).append((note_id, note_type, title, body))
        return out

    def module_summaries(self) -> dict[str, str]:
        """Folder path ("" for the root) -> the summary stored on its module node."""
        return {r[0]: r[1] for r in self.conn.execute(
            "SELECT path, body FROM nodes WHERE kind = 'module'")}

    def notes_digest(self) -> str:
        """A digest of what the map pages show of the notes (ids, types, titles, files, links)."""
        import hashlib

        digest = hashlib.sha1(usedforsecurity=False)
        for row in self.conn.execute(
                "SELECT id, type, title, files FROM nodes WHERE kind = 'note' AND "
                "status = 'active' ORDER BY id"):
            digest.update(repr(row).encode("utf-8", "surrogatepass"))
        for row in self.conn.execute("SELECT src, dst, rel FROM edges WHERE origin = 'declared' "
                                     "ORDER BY src, dst, rel"):
            digest.update(repr(row).encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    def note_counts(self) -> dict[str, int]:
        return {r[0]: r[1] for r in self.conn.execute(
            "SELECT type, count(*) FROM nodes WHERE kind = 'note' AND status = 'active' "
            "GROUP BY type ORDER BY type")}

    def _error_rows(self, condition: str, params: Sequence[object]) -> list[ErrorRow]:
        """The active error notes meeting `condition` (on `e`), oldest first."""
        return [error_row(r) for r in self.conn.execute(
            f"SELECT {ERROR_COLUMNS} FROM nodes e LEFT JOIN nodes r ON r.id = e.remedy "
            "WHERE e.kind = 'note' AND e.type = 'error' AND e.status = 'active' AND "
            f"({condition}) ORDER BY e.recorded_at, e.id", params)]

    def failed_commands(self) -> dict[str, list[ErrorRow]]:
        """Every active error note's command -> its notes (see `Store`)."""
        out: dict[str, list[ErrorRow]] = {}
        for row in self._error_rows("e.command IS NOT NULL", ()):
            out.setdefault(str(row.command), []).append(row)
        return out

    def error_notes(self, signature: str = "", command: str | None = None) -> list[ErrorRow]:
        """The active error notes recording `signature` or `command` (see `Store`)."""
        if not signature and not command:
            return []
        return self._error_rows("(? != '' AND e.signature = ?) OR "
                                "(? IS NOT NULL AND e.command = ?)",
                                (signature, signature, command, command))

class CodeReader(CodeTables):
    """The code tables' queries on a connection the caller opened (read-only, for the hooks:
    no migration, no analyzer, no write lock)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
