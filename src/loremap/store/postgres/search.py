"""What the search engine reads from a shared database: the same operations as
`store/sqlite/search.py`, with BM25 computed in SQL from the stored term statistics.

The score is FTS5's `bm25()`, term for term: for each query term (a term the question repeats
counts that many times) IDF = ln((N - n + 0.5) / (n + 0.5)) (1e-6 when not positive), the
term's frequency in a node is the column-weighted sum of its counts, and the length
normalisation uses the node's length in tokens over the average (k1 = 1.2, b = 0.75). N, n and
the average come from `counters` and `postings`, so the same index ranks the same on both
stores.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from loremap.model.search import Filters, Neighbor, NodeRow, SymbolRow, TextQuery

K1 = 1.2
B = 0.75
_NODE_COLUMNS = ("id, kind, scope, type, title, body, path, status, recorded_at, valid_from, "
                 "valid_to, superseded_by, commit_sha, files, file_hashes, aliases, rank")


def fts5_idf(rows: int, hits: int) -> float:
    """FTS5's IDF of a term held by `hits` of `rows` rows. The two are read by separate
    statements, so a writer committing between them can make `hits` exceed `rows`."""
    rows = max(rows, hits)
    value = math.log((rows - hits + 0.5) / (hits + 0.5)) if rows else 0.0
    return value if value > 0 else 1e-6


def _node(row: Sequence[Any]) -> NodeRow:
    return NodeRow(
        row[0], row[1], row[2], row[3] or "", row[4], row[5], row[6], row[7], row[8], row[9],
        row[10], row[11], row[12], tuple(row[13]), dict(row[14]), tuple(row[15]),
        float(row[16]))


def where(filters: Filters, prefix: str, project: str) -> tuple[str, list[object]]:
    """` AND ...` restricting nodes (aliased `prefix`) to `filters`, with its parameters."""
    sql = ""
    params: list[object] = []
    for column, values in (("kind", filters.kinds), ("type", filters.types),
                           ("status", filters.statuses)):
        if values:
            sql += f" AND {prefix}{column} = ANY(%s)"
            params.append(list(values))
    if filters.paths:
        under = []
        for path in filters.paths:
            under.append(
                f"({prefix}kind != 'note' AND left({prefix}id, %s) = %s)"
                f" OR ({prefix}kind = 'note' AND (EXISTS (SELECT 1 FROM "
                f"jsonb_array_elements_text({prefix}files) j(v) WHERE left(j.v, %s) = %s) OR "
                f"EXISTS (SELECT 1 FROM edges e WHERE e.project = %s AND e.src = {prefix}id "
                "AND e.origin = 'declared' AND left(e.dst, %s) = %s)))")
            params += [len(path), path, len(path), path, project, len(path), path]
        sql += " AND (" + " OR ".join(under) + ")"
    if filters.as_of:
        day = filters.as_of
        sql += (f" AND ({prefix}valid_from IS NULL OR {prefix}valid_from <= %s)"
                f" AND ({prefix}valid_to IS NULL OR {prefix}valid_to > %s)"
                f" AND ({prefix}recorded_at IS NULL OR left({prefix}recorded_at, 10) <= %s)")
        params += [day, day, day]
    return sql, params


class PgSearchTables:
    """Mixin of `PostgresStore`: the reads of the search engine."""

    project: str

    def execute(self, sql: str, params: Sequence[object] | None = None) -> Any:
        raise NotImplementedError  # PostgresStore's

    def counter(self, name: str) -> int:
        raise NotImplementedError  # PostgresStore's

    def node_count(self) -> int:
        return self.counter("nodes")

    def doc_freqs(self, terms: Iterable[str], cap: int) -> dict[str, int]:
        """term -> number of nodes holding it, counted up to `cap` (an index-only scan of the
        postings' primary key that stops at the cap)."""
        out = {}
        for term in terms:
            row = self.execute(
                "SELECT count(*) FROM (SELECT 1 FROM postings WHERE project = %s AND term = %s "
                "LIMIT %s) t", (self.project, term, cap)).fetchone()
            out[term] = int(row[0])
        return out

    def _query(self, query: TextQuery, table: str, rows: int, inside: str = ""
               ) -> tuple[list[str], list[float], list[int]]:
        """The query's distinct terms with their IDF (exact counts) and repeats."""
        repeats: dict[str, int] = {}
        for term, times in zip(query.terms, query.repeats, strict=True):
            repeats[term] = repeats.get(term, 0) + times
        terms = list(repeats)
        hits = dict.fromkeys(terms, 0)
        for term, n in self.execute(
                f"SELECT term, count(*) FROM {table} p WHERE project = %s AND term = ANY(%s)"
                f"{inside} GROUP BY term", (self.project, terms)):
            hits[term] = int(n)
        return terms, [fts5_idf(rows, hits[t]) for t in terms], [repeats[t] for t in terms]

    def text_search(self, query: TextQuery, limit: int, filters: Filters,
                    weights: Sequence[float]) -> list[tuple[str, float]]:
        """(id, score) of the nodes matching `query`, best first (see `SqliteStore`): the best
        `pool` matches are filtered first, every match only when that leaves too few."""
        pool = max(limit * 4, 50)
        hits = self._text(query, limit, pool, filters, weights)
        if len(hits) < limit:
            hits = self._text(query, limit, None, filters, weights)
        return hits

    def _text(self, query: TextQuery, limit: int, pool: int | None, filters: Filters,
              weights: Sequence[float]) -> list[tuple[str, float]]:
        if not query.terms:
            return []
        rows = self.counter("nodes")
        avgdl = self.counter("tokens") / rows if rows else 1.0
        w = [float(x) for x in (*weights, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)[:6]]
        freq = " + ".join(f"{w[i]!r} * p.t{i}" for i in range(6))
        having = " HAVING count(*) = %s" if query.all_of else ""
        if query.columns:
            w = [x if i in query.columns else 0.0 for i, x in enumerate(w)]
            inside = " AND (" + " OR ".join(f"p.t{i} > 0" for i in query.columns) + ")"
        else:
            inside = ""
        terms, idfs, repeats = self._query(query, "postings", rows, inside)
        cond, params = where(filters, "n.", self.project)
        sql = (
            "WITH q AS (SELECT * FROM unnest(%s::text[], %s::float8[], %s::int[]) "
            "AS q(term, idf, rep)), "
            f"m AS (SELECT p.node, sum(q.idf * q.rep * (({freq}) * {K1 + 1!r}) / "
            f"(({freq}) + {K1!r} * ({1 - B!r} + {B!r} * p.dl / %s::float8))) AS score "
            f"FROM postings p JOIN q ON p.term = q.term WHERE p.project = %s{inside} "
            f"GROUP BY p.node{having}), "
            'top AS (SELECT node, score FROM m ORDER BY score DESC, node COLLATE "C"'
            f"{' LIMIT %s' if pool else ''}) "
            "SELECT n.id, top.score FROM top JOIN nodes n ON n.project = %s AND n.id = top.node "
            f"WHERE true{cond} ORDER BY top.score DESC, n.id COLLATE \"C\" LIMIT %s")
        args: list[object] = [terms, idfs, repeats, avgdl, self.project]
        if query.all_of:
            args.append(len(terms))
        if pool:
            args.append(pool)
        args += [self.project, *params, limit]
        return [(r[0], float(r[1])) for r in self.execute(sql, args)]

    def section_search(self, query: TextQuery, limit: int) -> list[tuple[str, int, float]]:
        """(file, first line, score) of the best-matching sections of code, best first."""
        if not query.terms:
            return []
        rows = self.counter("sections")
        avgdl = self.counter("section_tokens") / rows if rows else 1.0
        terms, idfs, repeats = self._query(query, "section_postings", rows)
        having = " HAVING count(*) = %s" if query.all_of else ""
        sql = (
            "WITH q AS (SELECT * FROM unnest(%s::text[], %s::float8[], %s::int[]) "
            "AS q(term, idf, rep)), "
            f"top AS (SELECT p.section, sum(q.idf * q.rep * (p.tf * {K1 + 1!r}) / "
            f"(p.tf + {K1!r} * ({1 - B!r} + {B!r} * p.dl / %s::float8))) AS score "
            "FROM section_postings p JOIN q ON p.term = q.term WHERE p.project = %s "
            f"GROUP BY p.section{having} ORDER BY score DESC, p.section LIMIT %s) "
            "SELECT s.file, s.line, top.score FROM top JOIN sections s ON s.project = %s AND "
            "s.id = top.section ORDER BY top.score DESC, s.id")
        args: list[object] = [terms, idfs, repeats, avgdl, self.project]
        if query.all_of:
            args.append(len(terms))
        args += [limit, self.project]
        return [(r[0], int(r[1]), float(r[2])) for r in self.execute(sql, args)]

    def nodes(self, ids: Iterable[str], filters: Filters | None = None) -> dict[str, NodeRow]:
        """The nodes among `ids` that pass `filters` (all of them without)."""
        cond, params = where(filters, "n.", self.project) if filters is not None else ("", [])
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        return {row[0]: _node(row) for row in self.execute(
            f"SELECT {_NODE_COLUMNS} FROM nodes n WHERE n.project = %s AND n.id = ANY(%s)"
            f"{cond}", [self.project, wanted, *params])}

    def held_terms(self, node_id: str, terms: Iterable[str]) -> set[str]:
        """Which of `terms` (analyzer tokens) the node's indexed text holds."""
        wanted = list(dict.fromkeys(terms))
        if not wanted:
            return set()
        return {r[0] for r in self.execute(
            "SELECT term FROM postings WHERE project = %s AND term = ANY(%s) AND node = %s",
            (self.project, wanted, node_id))}

    def neighbors(self, node_id: str, limit: int = 256) -> list[Neighbor]:
        rows = self.execute(
            "SELECT * FROM (SELECT dst AS node, rel, origin, weight, 1 FROM edges WHERE "
            "project = %s AND src = %s UNION ALL SELECT src, rel, origin, weight, 0 FROM edges "
            "WHERE project = %s AND dst = %s) e ORDER BY weight DESC, node COLLATE \"C\" "
            "LIMIT %s",
            (self.project, node_id, self.project, node_id, limit))
        return [Neighbor(r[0], r[1], r[2], float(r[3]), bool(r[4])) for r in rows]

    def degree(self, node_id: str) -> int:
        return int(self.execute(
            "SELECT (SELECT count(*) FROM edges WHERE project = %s AND src = %s) + "
            "(SELECT count(*) FROM edges WHERE project = %s AND dst = %s)",
            (self.project, node_id, self.project, node_id)).fetchone()[0])

    def degree_over(self, node_id: str, limit: int) -> bool:
        return bool(self.execute(
            "SELECT count(*) > %s FROM (SELECT 1 FROM edges WHERE project = %s AND src = %s "
            "UNION ALL SELECT 1 FROM edges WHERE project = %s AND dst = %s LIMIT %s) e",
            (limit, self.project, node_id, self.project, node_id, limit + 1)).fetchone()[0])

    def files_named(self, names: Iterable[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name in dict.fromkeys(names):
            paths = [r[0] for r in self.execute(
                "SELECT path FROM files WHERE project = %s AND name = %s AND language IS NOT "
                "NULL ORDER BY path COLLATE \"C\"", (self.project, name))]
            if paths:
                out[name] = paths
        return out

    def symbols_named(self, names: Iterable[str], max_definers: int) -> list[SymbolRow]:
        out: list[SymbolRow] = []
        for name in dict.fromkeys(names):
            rows = self.execute(
                "SELECT name, file, kind, line FROM symbols WHERE project = %s AND name = %s "
                "ORDER BY file COLLATE \"C\", line", (self.project, name)).fetchall()
            if rows and len({r[1] for r in rows}) <= max_definers:
                out += [SymbolRow(*r) for r in rows]
        return out

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return set()
        return {r[0] for r in self.execute(
            "SELECT id FROM nodes WHERE project = %s AND id = ANY(%s)", (self.project, wanted))}

    # --- vectors ----------------------------------------------------------------------------

    def missing_vectors(self, model: str, limit: int) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self.execute(
            "SELECT n.id, n.title || E'\\n' || n.body FROM nodes n WHERE n.project = %s AND "
            "NOT EXISTS (SELECT 1 FROM vectors v WHERE v.project = n.project AND v.model = %s "
            "AND v.id = n.id) ORDER BY n.id COLLATE \"C\" LIMIT %s", (self.project, model, limit))]

    def put_vectors(self, model: str, vectors: Iterable[tuple[str, Sequence[float]]]) -> None:
        dims: set[int] = set()
        for node_id, vec in vectors:
            dims.add(len(vec))
            self.execute(
                "INSERT INTO vectors (project, id, model, dim, vec) VALUES (%s, %s, %s, %s, "
                "%s::vector) ON CONFLICT (project, model, id) DO UPDATE SET dim = EXCLUDED.dim, "
                "vec = EXCLUDED.vec", (self.project, node_id, model, len(vec), _vector(vec)))
        for dim in dims:
            self._hnsw(model, dim)

    def _hnsw(self, model: str, dim: int) -> None:
        """The HNSW index (cosine) of one model's vectors: pgvector indexes a column of one
        dimension, so each (model, dimension) gets a partial expression index."""
        import hashlib

        name = "vectors_hnsw_" + hashlib.sha1(f"{model}/{dim}".encode(),
                                              usedforsecurity=False).hexdigest()[:12]
        literal = model.replace("'", "''")
        self.execute(f"CREATE INDEX IF NOT EXISTS {name} ON vectors USING hnsw "
                     f"((vec::vector({int(dim)})) vector_cosine_ops) "
                     f"WHERE model = '{literal}' AND dim = {int(dim)}")

    def iter_vectors(self, model: str) -> Iterator[tuple[str, array[float]]]:
        for node_id, text in self.execute(
                "SELECT id, vec::text FROM vectors WHERE project = %s AND model = %s",
                (self.project, model)).fetchall():
            yield node_id, array("f", (float(x) for x in text.strip("[]").split(",")))

    def nearest_vectors(self, model: str, vec: Sequence[float], limit: int
                        ) -> list[tuple[str, float]]:
        """(id, cosine similarity) of the `limit` nearest vectors, through the HNSW index."""
        dim = len(vec)
        literal = model.replace("'", "''")
        rows = self.execute(
            f"SELECT id, 1 - (vec::vector({dim}) <=> %s::vector({dim})) FROM vectors "
            f"WHERE model = '{literal}' AND dim = {dim} AND project = %s "
            f"ORDER BY vec::vector({dim}) <=> %s::vector({dim}) LIMIT %s",
            (_vector(vec), self.project, _vector(vec), limit))
        return [(r[0], float(r[1])) for r in rows]


def _vector(vec: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vec) + "]"
