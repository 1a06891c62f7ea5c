"""The code tables of a shared database: files, their definitions and the names they use.

The same operations as `store/sqlite/code.py`, with the same results in the same order: text is
ordered with `COLLATE "C"` (byte order, as SQLite's BINARY and Python's `sorted`), NULLs where
SQLite puts them. Files are nodes (`kind = 'file'`, id = the path) and modules
(`kind = 'module'`, id = the folder + '/') with postings in the six columns of the SQLite FTS
table; sections of code files have their own postings (`section_postings`) and the counters
`sections` and `section_tokens` that BM25 needs.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from loremap.model import Edge
from loremap.model.code import CodeFile, FileStamp
from loremap.store.rows import FILE_COLUMNS, FileRow, file_body, read_file_row
from loremap.text import Analyzer

C = 'COLLATE "C"'  # SQLite compares text byte by byte; so does PostgreSQL's C collation
_EDGE_COLUMNS = ("src", "dst", "rel", "origin", "weight")


class PgCodeTables:
    """Mixin of `PostgresStore`: the code-map operations (inside `write()` for changes)."""

    project: str
    analyzer: Analyzer

    def execute(self, sql: str, params: Sequence[object] | None = None) -> Any: ...

    def copy_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[object]]
                  ) -> None: ...

    def put_node(self, node_id: str, kind: str, columns: Sequence[str],
                 fields: dict[str, object]) -> None: ...

    def drop_node(self, node_id: str) -> None: ...

    def bump(self, name: str, delta: int) -> None: ...

    def source_file_count(self) -> int:
        return int(self.execute(
            "SELECT count(*) FROM files WHERE project = %s AND language IS NOT NULL",
            (self.project,)).fetchone()[0])

    def skipped_counts(self) -> dict[str, int]:
        """Files whose content was left out, by reason (recorded so they are not re-read)."""
        return {r[0]: int(r[1]) for r in self.execute(
            f"SELECT skip, count(*) FROM files WHERE project = %s AND skip IS NOT NULL "
            f"GROUP BY skip ORDER BY skip {C}", (self.project,))}

    def file_stamps(self) -> dict[str, FileStamp]:
        rows = self.execute("SELECT path, size, mtime_ns, content_hash FROM files "
                            "WHERE project = %s", (self.project,))
        return {r[0]: FileStamp(r[1], r[2], r[3]) for r in rows}

    def defined_names(self, paths: Iterable[str]) -> set[str]:
        """The names the given files define (to know whose reference edges a change moves)."""
        wanted = list(dict.fromkeys(paths))
        if not wanted:
            return set()
        return {r[0] for r in self.execute(
            "SELECT DISTINCT name FROM symbols WHERE project = %s AND file = ANY(%s)",
            (self.project, wanted))}

    def upsert_file(self, file: CodeFile) -> None:
        """Insert or replace one file: its row, definitions, references and search text."""
        from psycopg.types.json import Jsonb

        old = self.execute("SELECT rank, subjects FROM files WHERE project = %s AND path = %s",
                           (self.project, file.path)).fetchone()
        rank = float(old[0]) if old is not None else 0.0  # kept until the graph is ranked again
        if old is not None and not file.subjects:
            # Parsing knows nothing of history: the commit subjects stay until git's next read.
            file = file._replace(subjects=tuple(old[1]))
        # Trigger: a file this project never indexed (every file of its first index).
        # Why: it has no rows to forget (they are written and removed with its `files` row),
        #   and each delete would be planned on statistics that may not know the project yet.
        # Outcome: no per-file deletes; a file indexed before still loses its old rows first
        #   (a source file keeps its node: put_node replaces it in place).
        if old is not None:
            self._forget_file(file.path, keep_edges=True, keep_node=file.language is not None)
        elif file.language is None:
            self.drop_node(file.path)  # as SQLite's upsert does: a note whose id is the path
        self.execute(
            "INSERT INTO files (project, path, module, language, size, mtime_ns, content_hash, "
            "docstring, imports, subjects, syntax_errors, skip, rank, name) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (self.project, file.path, file.module, file.language, file.size, file.mtime_ns,
             file.content_hash, file.docstring, Jsonb(list(file.imports)),
             Jsonb(list(file.subjects)), int(file.syntax_errors), file.skip, rank,
             file.path.rsplit("/", 1)[-1]))
        if file.definitions:
            self.copy_rows("symbols", ("file", "name", "kind", "line"),
                           [(file.path, d.name, d.kind, d.line) for d in file.definitions])
        if file.references:
            self.copy_rows("refs", ("file", "name"),
                           [(file.path, name) for name in dict.fromkeys(file.references)])
        if file.language is not None:
            self._index_file_node(file, rank)
            self._add_sections(file.path, file.chunks)

    def _index_file_node(self, file: CodeFile, rank: float) -> None:
        path = file.path
        body = file_body(file.docstring, file.subjects)
        tokens = self.analyzer.tokens
        columns = (" ".join(tokens(path.rsplit("/", 1)[-1])), " ".join(tokens(body)), "",
                   " ".join(tokens(" ".join(d.name for d in file.definitions))),
                   " ".join(tokens(path)), file.text)
        self.put_node(path, "file", columns,
                      {"title": path, "body": body, "path": path, "rank": rank})

    def _add_sections(self, path: str, chunks: Sequence[tuple[int, str]]) -> None:
        """The file's sections and their postings. Their ids are taken from the identity's
        sequence in one query, in order (a later section has a larger id, as SQLite's rowids),
        and the rows go in by COPY."""
        if not chunks:
            return
        ids = sorted(int(r[0]) for r in self.execute(
            "SELECT nextval(pg_get_serial_sequence('sections', 'id')) "
            "FROM generate_series(1, %s)", (len(chunks),)))
        rows: list[tuple[int, str, int, int]] = []
        postings: list[tuple[str, int, int, int]] = []
        for section, (line, text) in zip(ids, chunks, strict=True):
            words = text.split()
            rows.append((section, path, line, len(words)))
            postings += [(term, section, tf, len(words)) for term, tf in Counter(words).items()]
        self.copy_rows("sections", ("id", "file", "line", "dl"), rows)
        self.copy_rows("section_postings", ("term", "section", "tf", "dl"), postings)
        self.bump("sections", len(rows))
        self.bump("section_tokens", sum(r[3] for r in rows))

    def set_subjects(self, subjects: dict[str, tuple[str, ...]]) -> int:
        """Record the latest commit subjects of each file; re-index the body of those that
        changed: only the body column's counts of the node's postings move (the other columns,
        the file's whole text among them, stay as they are)."""
        from psycopg.types.json import Jsonb

        changed = 0
        rows = self.execute(
            "SELECT f.path, f.subjects, f.docstring, n.body FROM files f JOIN nodes n ON "
            "n.project = f.project AND n.id = f.path WHERE f.project = %s AND "
            f"f.language IS NOT NULL ORDER BY f.path {C}", (self.project,)).fetchall()
        tokens = self.analyzer.tokens
        for path, old, docstring, old_body in rows:
            new = list(subjects.get(path, ()))
            if list(old) == new:
                continue
            changed += 1
            body = file_body(docstring, new)
            self.execute("UPDATE files SET subjects = %s WHERE project = %s AND path = %s",
                         (Jsonb(new), self.project, path))
            # The words as put_node counted them: the tokens joined by spaces, split again.
            before = Counter(" ".join(tokens(old_body)).split())
            after = Counter(" ".join(tokens(body)).split())
            delta = sum(after.values()) - sum(before.values())
            terms = sorted(set(before) | set(after))
            self.execute(
                "INSERT INTO postings (project, term, node, dl, t1) SELECT %s, u.term, %s, 0, "
                "u.tf FROM unnest(%s::text[], %s::int[]) AS u(term, tf) "
                "ON CONFLICT (project, term, node) DO UPDATE SET t1 = EXCLUDED.t1",
                (self.project, path, terms, [after.get(t, 0) for t in terms]))
            self.execute("DELETE FROM postings WHERE project = %s AND node = %s AND "
                         "t0 + t1 + t2 + t3 + t4 + t5 = 0", (self.project, path))
            row = self.execute("UPDATE nodes SET body = %s, doc_len = doc_len + %s WHERE "
                               "project = %s AND id = %s RETURNING doc_len",
                               (body, delta, self.project, path)).fetchone()
            self.execute("UPDATE postings SET dl = %s WHERE project = %s AND node = %s",
                         (int(row[0]), self.project, path))
            self.bump("tokens", delta)
        return changed

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        self.execute("UPDATE files SET size = %s, mtime_ns = %s WHERE project = %s AND path = %s",
                     (size, mtime_ns, self.project, path))

    def delete_files(self, paths: Iterable[str]) -> None:
        for path in paths:
            self._forget_file(path, keep_edges=False)

    def _forget_file(self, path: str, keep_edges: bool, keep_node: bool = False) -> None:
        p = self.project
        self.execute("DELETE FROM files WHERE project = %s AND path = %s", (p, path))
        self.execute("DELETE FROM symbols WHERE project = %s AND file = %s", (p, path))
        self.execute("DELETE FROM refs WHERE project = %s AND file = %s", (p, path))
        # The section ids as an array, not a join of the two deletes: a join lets a planner that
        # expects one row of the project walk all of the project's postings for every file.
        gone = self.execute("DELETE FROM sections WHERE project = %s AND file = %s "
                            "RETURNING id, dl", (p, path)).fetchall()
        if gone:
            self.execute("DELETE FROM section_postings WHERE project = %s AND section = ANY(%s)",
                         (p, [int(r[0]) for r in gone]))
            self.bump("sections", -len(gone))
            self.bump("section_tokens", -sum(int(r[1]) for r in gone))
        if not keep_node:
            self.drop_node(path)
        if not keep_edges:
            self.execute("DELETE FROM edges WHERE project = %s AND (src = %s OR dst = %s) AND "
                         "origin NOT IN ('declared', 'files')", (p, path, path))

    # --- graph -----------------------------------------------------------------------------

    def file_imports(self, paths: Iterable[str] | None = None
                     ) -> list[tuple[str, str, list[str]]]:
        """(path, language, import specifiers) of every parsed source file (or of `paths`)."""
        sql = ("SELECT path, language, imports FROM files WHERE project = %s AND "
               "language IS NOT NULL")
        if paths is None:
            rows = self.execute(sql + f" ORDER BY path {C}", (self.project,)).fetchall()
        else:
            wanted = sorted(set(paths))
            if not wanted:
                return []
            rows = self.execute(sql + f" AND path = ANY(%s) ORDER BY path {C}",
                                (self.project, wanted)).fetchall()
        return [(r[0], r[1], list(r[2])) for r in rows]

    def all_file_paths(self) -> list[str]:
        return [r[0] for r in self.execute(
            f"SELECT path FROM files WHERE project = %s ORDER BY path {C}", (self.project,))]

    def replace_edges(self, origin: str, edges: Iterable[Edge], sources: Iterable[str] | None
                      = None) -> None:
        """Replace the edges of `origin` (only those leaving `sources`, when given).

        The edges of `origin` leaving `sources` were just deleted, so those can only collide
        with one another: the last of each key wins (SQLite's INSERT OR REPLACE) and they go in
        by COPY. Any other edge (another origin, another source) is upserted.
        """
        scope: set[str] | None = None
        if sources is None:
            self.execute("DELETE FROM edges WHERE project = %s AND origin = %s",
                         (self.project, origin))
        else:
            scope = set(sources)
            if scope:
                self.execute("DELETE FROM edges WHERE project = %s AND origin = %s AND "
                             "src = ANY(%s)", (self.project, origin, sorted(scope)))
        fresh: dict[tuple[str, str, str, str], float] = {}
        other: dict[tuple[str, str, str, str], float] = {}
        for e in edges:
            key = (e.src, e.dst, e.rel, e.origin)
            ours = e.origin == origin and (scope is None or e.src in scope)
            (fresh if ours else other)[key] = float(e.weight)
        if fresh:
            self.copy_rows("edges", _EDGE_COLUMNS,
                           [(*key, weight) for key, weight in fresh.items()])
        if other:
            self.execute(
                "INSERT INTO edges (project, src, dst, rel, origin, weight) SELECT %s, * FROM "
                "unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::float8[]) "
                "ON CONFLICT (project, src, dst, rel, origin) DO UPDATE SET "
                "weight = EXCLUDED.weight",
                (self.project, *([k[i] for k in other] for i in range(4)), list(other.values())))

    def rebuild_reference_edges(self, sources: Iterable[str] | None = None,
                                max_definers: int = 20) -> None:
        """File -> file edges for every name a file uses that another file defines, weighted
        like Aider's repository map (see `CodeTables.rebuild_reference_edges`). With `sources`,
        only the edges leaving those files are recomputed."""
        p = self.project
        names, scope = "", ""
        name_args: list[object] = []
        scope_args: list[object] = []
        if sources is None:
            self.execute("DELETE FROM edges WHERE project = %s AND origin = 'reference'", (p,))
        else:
            wanted = sorted(set(sources))
            if not wanted:
                return
            self.execute("DELETE FROM edges WHERE project = %s AND origin = 'reference' AND "
                         "src = ANY(%s)", (p, wanted))
            scope = "AND r.file = ANY(%s) "
            scope_args = [wanted]
            names = ("AND name IN (SELECT name FROM refs WHERE project = %s AND "
                     "file = ANY(%s)) ")
            name_args = [p, wanted]
        with self._hash_joins():
            self.execute(
                "INSERT INTO edges (project, src, dst, rel, origin, weight) "
                "SELECT %s, r.file, s.file, 'references', 'reference', SUM(1.0::float8 / d.n "
                "  * (CASE WHEN length(r.name) >= 8 AND (strpos(r.name, '_') > 0 "
                f"       OR lower(r.name {C}) != r.name) THEN 10.0::float8 ELSE 1.0::float8 END) "
                "  * (CASE WHEN substr(r.name, 1, 1) = '_' THEN 0.1::float8 ELSE 1.0::float8 END)) "
                "FROM refs r "
                "JOIN (SELECT name, COUNT(DISTINCT file) AS n FROM symbols "
                f"      WHERE project = %s AND length(name) >= 3 {names}GROUP BY name "
                "      HAVING COUNT(DISTINCT file) <= %s) d "
                "ON d.name = r.name "
                f"JOIN (SELECT DISTINCT file, name FROM symbols WHERE project = %s {names}) s "
                "ON s.name = r.name "
                f"WHERE r.project = %s AND s.file != r.file {scope}GROUP BY r.file, s.file",
                [p, p, *name_args, max_definers, p, *name_args, p, *scope_args])

    @contextlib.contextmanager
    def _hash_joins(self) -> Iterator[None]:
        """`enable_nestloop = off` for the statements inside, in the current transaction only.

        Trigger: a statement that joins all of the project's rows of several tables.
        Why: where another project's rows were ANALYZEd and this one's were not (its first
          index, or the minutes before autovacuum reads what it committed), the planner expects
          one row of the project, picks nested loops and re-runs an aggregate for every row of
          the other side: the reference edges of Django's `django/` folder ran ten minutes
          without finishing (all of Django: 0.5 s with hash joins). ANALYZE in the transaction
          would fix the estimate but holds, until commit, a lock that stops other projects'
          ANALYZE and autovacuum on the table (and waits for theirs); the setting for the whole
          write would cost the per-key statements their index nested loops.
        Outcome: hash or merge joins, linear in the project's rows whatever the statistics say;
          the prior value is restored after, so the rest of the write and every search keep the
          server's settings. (On an error the rollback undoes the SET LOCAL.)
        """
        prior = self.execute("SELECT current_setting('enable_nestloop')").fetchone()[0]
        self.execute("SET LOCAL enable_nestloop = off")
        yield
        self.execute("SELECT set_config('enable_nestloop', %s, true)", (prior,))

    def referencing(self, names: Iterable[str]) -> set[str]:
        """Files that use any of `names`."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return set()
        return {r[0] for r in self.execute(
            "SELECT DISTINCT file FROM refs WHERE project = %s AND name = ANY(%s)",
            (self.project, wanted))}

    def outgoing(self, sources: Iterable[str]) -> set[tuple[str, str, str, float]]:
        """The import and reference edges leaving `sources` (to tell whether a change moved
        the graph at all)."""
        wanted = list(dict.fromkeys(sources))
        if not wanted:
            return set()
        return {(r[0], r[1], r[2], round(float(r[3]), 12)) for r in self.execute(
            "SELECT src, dst, origin, weight FROM edges WHERE project = %s AND src = ANY(%s) "
            "AND origin IN ('import', 'reference')", (self.project, wanted))}

    def weighted_edges(self, origins: Sequence[str]) -> Iterator[tuple[str, str, float]]:
        """(src, dst, weight) of the edges of `origins`, in (src, dst) order and, between
        edges of one pair, by origin and rel (as SQLite returns them). The rows arrive in one
        result held by the cursor (in libpq's memory, not as Python objects) and become tuples
        one at a time."""
        cur = self.execute(
            f"SELECT src, dst, weight FROM edges WHERE project = %s AND origin = ANY(%s) "
            f"ORDER BY src {C}, dst {C}, origin {C}, rel {C}", (self.project, list(origins)))
        for src, dst, weight in cur:
            yield src, dst, float(weight)

    def graph_edges(self, origins: Sequence[str], touching: Iterable[str] | None = None
                    ) -> list[Edge]:
        """Edges of `origins` (only those leaving or reaching `touching`, when given)."""
        sql = "SELECT src, dst, rel, origin, weight FROM edges WHERE project = %s AND " \
              "origin = ANY(%s)"
        args: list[object] = [self.project, list(origins)]
        if touching is not None:
            nodes = list(dict.fromkeys(touching))
            if not nodes:
                return []
            sql += " AND (src = ANY(%s) OR dst = ANY(%s))"
            args += [nodes, nodes]
        rows = self.execute(sql + f" ORDER BY src {C}, dst {C}, rel {C}", args)
        return [Edge(r[0], r[1], r[2], r[3], float(r[4])) for r in rows]

    def file_ranks(self) -> dict[str, float]:
        return {r[0]: float(r[1]) for r in self.execute(
            "SELECT path, rank FROM files WHERE project = %s AND language IS NOT NULL",
            (self.project,))}

    def set_file_ranks(self, ranks: dict[str, float]) -> None:
        if not ranks:
            return
        paths = list(ranks)
        values = [float(ranks[p]) for p in paths]
        for table, key in (("files", "path"), ("nodes", "id")):
            self.execute(
                f"UPDATE {table} t SET rank = u.rank FROM unnest(%s::text[], %s::float8[]) "
                f"AS u(key, rank) WHERE t.project = %s AND t.{key} = u.key",
                (paths, values, self.project))

    def replace_modules(self, modules: dict[str, tuple[str, float]], partial: bool = False
                        ) -> None:
        """Module nodes: folder path + '/' -> (summary, rank); searchable like files.

        `partial` replaces only the given modules and leaves the others as they are.
        """
        wanted = {(m or ".") + "/" for m in modules}
        if not partial:
            for (node_id,) in self.execute(
                    f"SELECT id FROM nodes WHERE project = %s AND kind = 'module' "
                    f"ORDER BY id {C}", (self.project,)).fetchall():
                if node_id not in wanted:
                    self.drop_node(node_id)
        tokens = self.analyzer.tokens
        for module, (summary, rank) in sorted(modules.items()):
            node_id = (module or ".") + "/"
            columns = (" ".join(tokens(module.rsplit("/", 1)[-1])), " ".join(tokens(summary)),
                       "", "", " ".join(tokens(module)), "")
            self.put_node(node_id, "module", columns,
                          {"title": node_id, "body": summary, "path": module, "rank": rank})

    # --- reading ----------------------------------------------------------------------------

    def code_files(self) -> list[FileRow]:
        rows = self.execute(
            f"SELECT {FILE_COLUMNS} FROM files WHERE project = %s AND "
            f"language IS NOT NULL ORDER BY path {C}", (self.project,))
        return [read_file_row(r) for r in rows]

    def file_row(self, path: str) -> FileRow | None:
        r = self.execute(f"SELECT {FILE_COLUMNS} FROM files WHERE project = %s AND path = %s",
                         (self.project, path)).fetchone()
        return None if r is None else read_file_row(r)

    def symbols_of(self, path: str) -> list[tuple[str, str, int]]:
        return [(r[0], r[1], int(r[2])) for r in self.execute(
            "SELECT name, kind, line FROM symbols WHERE project = %s AND file = %s "
            f"ORDER BY line, name {C}", (self.project, path))]

    def symbols_in(self, paths: Sequence[str]) -> dict[str, list[tuple[str, str, int]]]:
        """Every path of `paths` -> its definitions as `symbols_of` gives them, in one read."""
        out: dict[str, list[tuple[str, str, int]]] = {path: [] for path in paths}
        if out:
            for path, name, kind, line in self.execute(
                    "SELECT file, name, kind, line FROM symbols WHERE project = %s AND "
                    f"file = ANY(%s) ORDER BY file, line, name {C}",
                    (self.project, list(out))):
                out[path].append((name, kind, int(line)))
        return out

    def module_symbols(self, module: str) -> dict[str, list[tuple[str, str, int]]]:
        """path -> (name, kind, line) definitions of the files of one module, in line order."""
        out: dict[str, list[tuple[str, str, int]]] = {}
        for path, name, kind, line in self.execute(
                "SELECT s.file, s.name, s.kind, s.line FROM files f JOIN symbols s "
                "ON s.project = f.project AND s.file = f.path WHERE f.project = %s AND "
                f"f.module = %s ORDER BY s.file {C}, s.line, s.name {C}",
                (self.project, module)):
            out.setdefault(path, []).append((name, kind, int(line)))
        return out

    def notes_by_path(self) -> dict[str, list[tuple[str, str, str]]]:
        """path -> (id, type, title) of the active notes naming it in `files` or a link."""
        out: dict[str, set[tuple[str, str, str]]] = {}
        for note_id, note_type, title, files in self.execute(
                "SELECT id, type, title, files FROM nodes WHERE project = %s AND "
                "kind = 'note' AND status = 'active'", (self.project,)):
            for path in files:
                out.setdefault(path, set()).add((note_id, note_type or "", title))
        for dst, note_id, note_type, title in self.execute(
                "SELECT e.dst, n.id, n.type, n.title FROM edges e JOIN nodes n ON "
                "n.project = e.project AND n.id = e.src WHERE e.project = %s AND "
                "e.origin = 'declared' AND n.kind = 'note' AND n.status = 'active'",
                (self.project,)):
            out.setdefault(dst, set()).add((note_id, note_type or "", title))
        return {path: sorted(notes) for path, notes in out.items()}

    def notes_about(self, paths: Sequence[str]) -> list[tuple[str, str, str]]:
        """(id, type, title) of active notes whose files or links name one of `paths`."""
        by_path = self.notes_by_path()
        return sorted({note for path in paths for note in by_path.get(path, ())})

    def file_warnings(self, path: str, types: Sequence[str]) -> list[tuple[str, str, str, str]]:
        """(id, type, title, body) of active notes of `types` naming `path`, newest first
        (notes without a date last, as SQLite orders them)."""
        if not types:
            return []
        rows = self.execute(
            "SELECT id, type, title, body FROM nodes n WHERE n.project = %s AND "
            "kind = 'note' AND status = 'active' AND type = ANY(%s) AND "
            "(n.files @> jsonb_build_array(%s::text) OR EXISTS (SELECT 1 FROM edges e WHERE "
            "e.project = n.project AND e.src = n.id AND e.dst = %s AND e.origin = 'declared')) "
            f"ORDER BY recorded_at {C} DESC NULLS LAST, id {C}",
            (self.project, list(types), path, path))
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def warnings_by_path(self, types: Sequence[str]) -> dict[str, list[tuple[str, str, str, str]]]:
        """Every path (in a note's `files` or a declared link) -> `file_warnings` of it, in
        one statement: what the pre-tool hook keeps for a while instead of asking each time."""
        out: dict[str, list[tuple[str, str, str, str]]] = {}
        if not types:
            return out
        for note_id, note_type, title, body, files, links in self.execute(
                "SELECT id, type, title, body, files, coalesce((SELECT array_agg(e.dst) FROM "
                "edges e WHERE e.project = n.project AND e.src = n.id AND "
                "e.origin = 'declared'), '{}') FROM nodes n WHERE n.project = %s AND "
                "kind = 'note' AND status = 'active' AND type = ANY(%s) "
                f"ORDER BY recorded_at {C} DESC NULLS LAST, id {C}", (self.project, list(types))):
            for path in dict.fromkeys([*files, *links]):
                out.setdefault(path, []).append((note_id, note_type, title, body))
        return out

    def module_summaries(self) -> dict[str, str]:
        """Folder path ("" for the root) -> the summary stored on its module node."""
        return {r[0]: r[1] for r in self.execute(
            "SELECT path, body FROM nodes WHERE project = %s AND kind = 'module'",
            (self.project,))}

    def notes_digest(self) -> str:
        """A digest of what the map pages show of the notes (ids, types, titles, files, links);
        the rows are hashed as SQLite's are (`files` as its JSON text)."""
        import hashlib

        digest = hashlib.sha1(usedforsecurity=False)
        for note_id, note_type, title, files in self.execute(
                "SELECT id, type, title, files FROM nodes WHERE project = %s AND kind = 'note' "
                f"AND status = 'active' ORDER BY id {C}", (self.project,)):
            row = (note_id, note_type, title, json.dumps(files))
            digest.update(repr(row).encode("utf-8", "surrogatepass"))
        for row in self.execute(
                "SELECT src, dst, rel FROM edges WHERE project = %s AND origin = 'declared' "
                f"ORDER BY src {C}, dst {C}, rel {C}", (self.project,)):
            digest.update(repr(tuple(row)).encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    def note_counts(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self.execute(
            "SELECT type, count(*) FROM nodes WHERE project = %s AND kind = 'note' AND "
            f"status = 'active' GROUP BY type ORDER BY type {C} NULLS FIRST", (self.project,))}
