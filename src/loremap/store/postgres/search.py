"""What the search engine reads from a shared database: the same operations as
`store/sqlite/search.py`, with BM25 computed in SQL from the stored term statistics.

The score is FTS5's `bm25()`, term for term: for each query term (a term the question repeats
counts that many times) IDF = ln((N - n + 0.5) / (n + 0.5)) (1e-6 when not positive; with
`TextQuery.common`, ln(1 + (N - n + 0.5) / (n + 0.5)), as the SQLite store scores it then), the
term's frequency in a node is the column-weighted sum of its counts, and the length
normalisation uses the node's length in tokens over the average (k1 = 1.2, b = 0.75). N, n and
the average come from `counters` and `postings`, so the same index ranks the same on both
stores.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from loremap.model.search import Filters, Neighbor, NodeRow, SymbolRow, TextQuery
from loremap.store.rows import NODE_COLUMNS, node_row

K1 = 1.2
B = 0.75


def _weighted_terms(project: str, query: TextQuery, rows: str, tokens: str, postings: str,
                    inside: str) -> tuple[str, list[object]]:
    """`WITH k (rows, avgdl), q (term, rep, idf)`: the counters `rows` and `tokens`, and each
    query term's IDF from its exact count n in `postings` (aliased p, restricted by `inside`):
    FTS5's ln((N - n + 0.5) / (n + 0.5)), 1e-6 when not positive, or with `query.common`
    (unless `all_of`, as on SQLite) Lucene's ln(1 + (N - n + 0.5) / (n + 0.5)). One statement
    reads one snapshot, so the counters and the counts agree under concurrent writers (N is
    still taken as at least n, so a counter out of step can never take the log of a
    negative).
    Returns the SQL and its parameters."""
    repeats: dict[str, int] = {}
    for term, times in zip(query.terms, query.repeats, strict=True):
        repeats[term] = repeats.get(term, 0) + times
    plus = " + 1" if query.common and not query.all_of else ""
    # MATERIALIZED: inlined, the per-term counts would run again for every posting joined.
    return (
        "WITH k AS MATERIALIZED (SELECT c.rows, CASE WHEN c.rows > 0 THEN c.tokens / c.rows "
        "ELSE 1.0 END AS avgdl FROM (SELECT coalesce((SELECT value FROM counters WHERE "
        f"project = %s AND name = '{rows}'), 0)::float8 AS rows, coalesce((SELECT value FROM "
        f"counters WHERE project = %s AND name = '{tokens}'), 0)::float8 AS tokens) c), "
        "h AS MATERIALIZED (SELECT u.term, u.rep, (SELECT count(*) FROM "
        f"{postings} p WHERE p.project = %s AND p.term = u.term{inside})::float8 AS hits "
        "FROM unnest(%s::text[], %s::int[]) AS u(term, rep)), "
        "q AS MATERIALIZED (SELECT h.term, h.rep, CASE WHEN x.v > 0 THEN x.v ELSE 1e-6 END "
        "AS idf FROM h, k, LATERAL (SELECT CASE WHEN k.rows > 0 THEN ln((greatest(k.rows, "
        f"h.hits) - h.hits + 0.5) / (h.hits + 0.5){plus}) ELSE 0 END AS v) x)",
        [project, project, project, list(repeats), list(repeats.values())])


def _bm25(freq: str) -> str:
    """FTS5's BM25 summed over a node's postings `p` joined to `q` and `k` (`_weighted_terms`),
    `freq` being the SQL of a posting's (weighted) term frequency."""
    return (f"sum(q.idf * q.rep * ({freq} * {_f8(K1 + 1)}) / ({freq} + {_f8(K1)} * "
            f"({_f8(1 - B)} + {_f8(B)} * p.dl / k.avgdl)))")


def _f8(value: float) -> str:
    """A double precision literal: a bare `1.2` is numeric in PostgreSQL, and numeric
    arithmetic over thousands of postings costs three times what FTS5's doubles do."""
    return f"{float(value)!r}::float8"


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

    def language_files(self) -> dict[str, int]:
        """language -> how many of the project's source files are written in it."""
        return {language: int(n) for language, n in self.execute(
            "SELECT language, count(*) FROM files WHERE project = %s AND language IS NOT NULL "
            "GROUP BY language", (self.project,))}

    def doc_freqs(self, terms: Iterable[str], cap: int) -> dict[str, int]:
        """term -> number of nodes holding it, counted up to `cap` (an index-only scan of the
        postings' primary key that stops at the cap), every term in one statement."""
        wanted = list(dict.fromkeys(terms))
        if not wanted:
            return {}
        out = dict.fromkeys(wanted, 0)
        for term, n in self.execute(
                "SELECT u.term, (SELECT count(*) FROM (SELECT 1 FROM postings p WHERE "
                "p.project = %s AND p.term = u.term LIMIT %s) x) FROM unnest(%s::text[]) "
                "AS u(term)", (self.project, cap, wanted)):
            out[term] = int(n)
        return out

    def text_search(self, query: TextQuery, limit: int, filters: Filters,
                    weights: Sequence[float]) -> list[tuple[str, float]]:
        """(id, score) of the nodes matching `query`, best first (see `SqliteStore`): the best
        `pool` matches are filtered first; every match is ranked only when the filters left
        fewer than `limit` of a pool that did not hold every match."""
        if not query.terms:
            return []
        pool = max(limit * 4, 50)
        hits, matches = self._text(query, limit, pool, filters, weights)
        if len(hits) < limit and matches > pool:
            hits, _ = self._text(query, limit, None, filters, weights)
        return hits

    def _text(self, query: TextQuery, limit: int, pool: int | None, filters: Filters,
              weights: Sequence[float]) -> tuple[list[tuple[str, float]], int]:
        """One statement: the hits and the number of nodes matching `query`."""
        w = [float(x) for x in (*weights, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)[:6]]
        if query.columns:
            w = [x if i in query.columns else 0.0 for i, x in enumerate(w)]
            inside = " AND (" + " OR ".join(f"p.t{i} > 0" for i in query.columns) + ")"
        else:
            inside = ""
        freq = " + ".join(f"{_f8(w[i])} * p.t{i}" for i in range(6))
        having = " HAVING count(*) = %s" if query.all_of else ""
        with_terms, args = _weighted_terms(self.project, query, "nodes", "tokens",
                                           "postings", inside)
        cond, params = where(filters, "n.", self.project)
        sql = (
            with_terms +
            f", m AS (SELECT p.node, {_bm25(f'({freq})')} AS score "
            f"FROM postings p JOIN q ON p.term = q.term CROSS JOIN k WHERE p.project = %s"
            f"{inside} GROUP BY p.node{having}), "
            'top AS (SELECT node, score FROM m ORDER BY score DESC, node COLLATE "C"'
            f"{' LIMIT %s' if pool else ''}), "
            "hit AS (SELECT n.id, top.score FROM top JOIN nodes n ON n.project = %s AND "
            f'n.id = top.node WHERE true{cond} ORDER BY top.score DESC, n.id COLLATE "C" '
            "LIMIT %s) "
            "SELECT hit.id, hit.score, t.matches FROM (SELECT count(*) AS matches FROM m) t "
            'LEFT JOIN hit ON true ORDER BY hit.score DESC, hit.id COLLATE "C"')
        args.append(self.project)
        if query.all_of:
            args.append(len(set(query.terms)))
        if pool:
            args.append(pool)
        args += [self.project, *params, limit]
        rows = self.execute(sql, args).fetchall()
        return [(r[0], float(r[1])) for r in rows if r[0] is not None], int(rows[0][2])

    def section_search(self, query: TextQuery, limit: int) -> list[tuple[str, int, float]]:
        """(file, first line, score) of the best-matching sections of code, best first."""
        if not query.terms:
            return []
        with_terms, args = _weighted_terms(self.project, query, "sections",
                                           "section_tokens", "section_postings", "")
        having = " HAVING count(*) = %s" if query.all_of else ""
        sql = (
            with_terms +
            f", top AS (SELECT p.section, {_bm25('p.tf')} AS score "
            "FROM section_postings p JOIN q ON p.term = q.term CROSS JOIN k "
            f"WHERE p.project = %s GROUP BY p.section{having} ORDER BY score DESC, p.section "
            "LIMIT %s) "
            "SELECT s.file, s.line, top.score FROM top JOIN sections s ON s.project = %s AND "
            "s.id = top.section ORDER BY top.score DESC, s.id")
        args.append(self.project)
        if query.all_of:
            args.append(len(set(query.terms)))
        args += [limit, self.project]
        return [(r[0], int(r[1]), float(r[2])) for r in self.execute(sql, args)]

    def nodes(self, ids: Iterable[str], filters: Filters | None = None) -> dict[str, NodeRow]:
        """The nodes among `ids` that pass `filters` (all of them without)."""
        cond, params = where(filters, "n.", self.project) if filters is not None else ("", [])
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        return {row[0]: node_row(row) for row in self.execute(
            f"SELECT {NODE_COLUMNS} FROM nodes n WHERE n.project = %s AND n.id = ANY(%s)"
            f"{cond}", [self.project, wanted, *params])}

    def held_terms(self, node_ids: Iterable[str], terms: Iterable[str]) -> dict[str, set[str]]:
        """node id -> which of `terms` (analyzer tokens) its indexed text holds."""
        nodes, wanted = list(dict.fromkeys(node_ids)), list(dict.fromkeys(terms))
        out: dict[str, set[str]] = {node: set() for node in nodes}
        if nodes and wanted:
            for node, term in self.execute(
                    "SELECT node, term FROM postings WHERE project = %s AND term = ANY(%s) AND "
                    "node = ANY(%s)", (self.project, wanted, nodes)):
                out[node].add(term)
        return out

    def neighbors(self, node_id: str, limit: int = 256) -> list[Neighbor]:
        rows = self.execute(
            "SELECT * FROM (SELECT dst AS node, rel, origin, weight, 1 FROM edges WHERE "
            "project = %s AND src = %s UNION ALL SELECT src, rel, origin, weight, 0 FROM edges "
            "WHERE project = %s AND dst = %s) e ORDER BY weight DESC, node COLLATE \"C\" "
            "LIMIT %s",
            (self.project, node_id, self.project, node_id, limit))
        return [Neighbor(r[0], r[1], r[2], float(r[3]), bool(r[4])) for r in rows]

    def neighborhoods(self, nodes: Sequence[str], cap: int) -> dict[str, list[Neighbor] | None]:
        """Every node of `nodes` -> its edges (as `neighbors`), or None when it has more than
        `cap`: in one statement, each node's edges are counted up to cap + 1 and only the
        edges of the nodes within the cap are read."""
        wanted = list(dict.fromkeys(nodes))
        out: dict[str, list[Neighbor] | None] = dict.fromkeys(wanted)
        if not wanted:
            return out
        rows = self.execute(
            "WITH ids AS (SELECT u.id FROM unnest(%s::text[]) AS u(id) WHERE (SELECT count(*) "
            "FROM (SELECT 1 FROM edges WHERE project = %s AND src = u.id UNION ALL SELECT 1 "
            "FROM edges WHERE project = %s AND dst = u.id LIMIT %s) x) <= %s) "
            "SELECT ids.id, NULL, NULL, NULL, NULL, NULL FROM ids UNION ALL "
            "SELECT e.src, e.dst, e.rel, e.origin, e.weight, true FROM ids JOIN edges e ON "
            "e.project = %s AND e.src = ids.id UNION ALL "
            "SELECT e.dst, e.src, e.rel, e.origin, e.weight, false FROM ids JOIN edges e ON "
            "e.project = %s AND e.dst = ids.id",
            (wanted, self.project, self.project, cap + 1, cap, self.project, self.project))
        for node_id, other, rel, origin, weight, outgoing in rows:
            edges = out[node_id]
            if edges is None:
                edges = out[node_id] = []
            if other is not None:
                edges.append(Neighbor(other, rel, origin, float(weight), bool(outgoing)))
        for edges in out.values():
            if edges:  # `neighbors`' order: code points sort as COLLATE "C" sorts UTF-8 bytes
                edges.sort(key=lambda e: (-e.weight, e.node))
        return out

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
        wanted = list(dict.fromkeys(names))
        found: dict[str, list[str]] = {}
        if wanted:
            for name, path in self.execute(
                    "SELECT name, path FROM files WHERE project = %s AND name = ANY(%s) AND "
                    'language IS NOT NULL ORDER BY path COLLATE "C"', (self.project, wanted)):
                found.setdefault(name, []).append(path)
        return {name: found[name] for name in wanted if name in found}

    def symbols_named(self, names: Iterable[str], max_definers: int) -> list[SymbolRow]:
        wanted = list(dict.fromkeys(names))
        found: dict[str, list[SymbolRow]] = {}
        if wanted:
            for row in self.execute(
                    "SELECT name, file, kind, line FROM symbols WHERE project = %s AND "
                    'name = ANY(%s) ORDER BY file COLLATE "C", line', (self.project, wanted)):
                found.setdefault(row[0], []).append(SymbolRow(*row))
        out: list[SymbolRow] = []
        for name in wanted:
            rows = found.get(name, [])
            if rows and len({r.file for r in rows}) <= max_definers:
                out += rows
        return out

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return set()
        return {r[0] for r in self.execute(
            "SELECT id FROM nodes WHERE project = %s AND id = ANY(%s)", (self.project, wanted))}
