"""What the search engine reads from the SQLite index: ranked text matches, document counts,
nodes by id under the search filters, graph neighbours, names (paths, symbols, ids). The
vectors are in `vectors.py`.

Every method is a read; filters are applied in SQL so a filtered search never ranks rows it
will throw away.

A connection keeps what the walk and a question's analysis read most often, the edges of the
nodes the walk pushes, the document counts of the question's words and the files a file name
(a traceback's `__init__.py`) names, until the database changes (`version`: `PRAGMA
data_version` for other connections' commits, `total_changes` for this one's, as the vectors'
matrix is kept). A warm process (the daemon, the MCP server) asks
again for the same hubs' edges, the same common words and the same file names: measured
with `python bench/search.py --sizes 10k` (10k nodes, each question asked once, after 200
others), the code before and after, two runs each, alternating on the same machine: recall p50
33.1, 32.9 -> 26.6, 27.3 ms, p95 71.2, 70.5 -> 57.4, 58.7 ms; a pasted issue 73.4, 74.0 ->
58.2, 60.8 ms at p50 (its hundred-odd words are counted one by one, and most were counted for
an earlier question; entities.py also matches its paths faster). A one-shot process (the CLI,
a hook in its own process) reads everything once either way.

BM25 is FTS5's own `bm25()`, read one term at a time and summed here (`ranked`). FTS5 scores a
matched row at ~2.5 us here, mostly its per-row read of the row's length (`%_docsize`), against
~0.15 us to count it, and a question's terms match up to `max_postings` (4,000) rows. An OR
query's score is the sum of its terms' single-term scores, and those are kept with the
connection's other reads: a warm process asked again for a word it scored before sums its
scores in Python instead of having FTS5 score its rows again. Measured on `bench/search.py`'s
10k corpus, 44 of its questions, the bm25 list's statement alone: the union of per-term
statements used before (the question's common words counted) 8.9 ms a question, one FTS5 OR
query 6.9 ms; the terms read one by one and summed here 8.9 ms the first time, 1.6 ms once
read. The top 200 rows were the same, in the same order, for all 44.
"""

from __future__ import annotations

import json
import math
import sqlite3
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from loremap.model.search import Filters, Neighbor, NodeRow, SymbolRow, TextQuery
from loremap.store.rows import NODE_COLUMNS, node_row
from loremap.store.sqlite.schema import FTS_COLUMNS

_CHUNK = 500  # ids per `IN (...)`, well under SQLite's variable limit
_HELD_EDGES = 200_000  # edges a connection keeps at most (~30 MB); past it, it starts again
_HELD_TERMS = 100_000  # document counts a connection keeps at most
_HELD_SCORES = 1_000_000  # single-term scores a connection keeps at most (16 bytes each)


def version(conn: sqlite3.Connection) -> tuple[int, int]:
    """What changes whenever the database does: `PRAGMA data_version` (another connection
    committed) and this connection's `total_changes`."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes


class _Held:
    """The reads a connection keeps while the database is at `key`: each node's edges as the
    walk reads them (None for a hub over the cap), each word's document count with the cap
    it was counted to, and the files of each file name."""

    def __init__(self, key: tuple[int, int]) -> None:
        self.key = key
        self.edges: dict[tuple[str, int], list[Neighbor] | None] = {}
        self.edge_count = 0
        self.dfs: dict[str, tuple[int, int]] = {}
        self.named: dict[str, list[str]] = {}  # a file name -> the paths of the files so named
        # (table and its bm25() weights, a term's FTS5 match) -> the rows holding it and
        # their single-term bm25()
        self.scores: dict[tuple[str, str], tuple[array[int], array[float]]] = {}
        self.score_count = 0
        self.rows: dict[str, int] = {}  # table -> its row count


def _rows_in(conn: sqlite3.Connection, select: str, column: str, keys: Sequence[object],
             cond: str = "", params: Sequence[object] = ()) -> Iterator[tuple[Any, ...]]:
    """The rows of `select` (a `SELECT ... FROM ...`) whose `column` is one of `keys` and that
    meet `cond` (` AND ...`, with `params`), `_CHUNK` keys a statement."""
    for start in range(0, len(keys), _CHUNK):
        part = list(keys[start:start + _CHUNK])
        yield from conn.execute(
            f"{select} WHERE {column} IN ({', '.join('?' for _ in part)}){cond}",
            [*part, *params])


def _json(text: object) -> object:
    """A JSON column's value (the empty list and map, most notes' and every file's, spared
    the parser)."""
    if text == "[]":
        return ()
    if text == "{}":
        return {}
    return json.loads(str(text))


def quote_fts(token: str) -> str:
    """A token as an FTS5 string literal (quotes doubled), never as query syntax."""
    return '"' + token.replace('"', '""') + '"'


def fts_match(query: TextQuery) -> str:
    """The FTS5 expression of `query`, each term quoted; a repeated term is repeated, which
    FTS5's BM25 counts as that many terms."""
    if query.all_of:
        match = " AND ".join(quote_fts(t) for t in query.terms)
    else:
        match = " OR ".join(" OR ".join([quote_fts(t)] * max(1, n))
                            for t, n in zip(query.terms, query.repeats, strict=True))
    if query.columns:
        names = " ".join(FTS_COLUMNS[c] for c in query.columns)
        match = f"{{{names}}} : ({match})"
    return match


def where(filters: Filters, prefix: str = "n.") -> tuple[str, list[object]]:
    """` AND ...` restricting nodes (aliased `prefix`) to `filters`, with its parameters."""
    sql = ""
    params: list[object] = []
    for column, values in (("kind", filters.kinds), ("type", filters.types),
                           ("status", filters.statuses)):
        if values:
            sql += f" AND {prefix}{column} IN ({', '.join('?' for _ in values)})"
            params += list(values)
    if filters.paths:
        under = []
        for path in filters.paths:
            under.append(
                f"({prefix}kind != 'note' AND substr({prefix}id, 1, ?) = ?)"
                f" OR ({prefix}kind = 'note' AND (EXISTS (SELECT 1 FROM json_each({prefix}files)"
                " j WHERE substr(j.value, 1, ?) = ?) OR EXISTS (SELECT 1 FROM edges e WHERE "
                f"e.src = {prefix}id AND e.origin = 'declared' AND substr(e.dst, 1, ?) = ?)))")
            params += [len(path), path] * 3
        sql += " AND (" + " OR ".join(under) + ")"
    if filters.as_of:
        day = filters.as_of
        sql += (f" AND ({prefix}valid_from IS NULL OR {prefix}valid_from <= ?)"
                f" AND ({prefix}valid_to IS NULL OR {prefix}valid_to > ?)"
                f" AND ({prefix}recorded_at IS NULL OR substr({prefix}recorded_at, 1, 10) <= ?)")
        params += [day, day, day]
    return sql, params


def idf_gain(rows: int, hits: int) -> float:
    """How many times more a term held by `hits` of `rows` rows counts with Lucene's IDF,
    ln(1 + (N - n + 0.5) / (n + 0.5)), than in FTS5's `bm25()`, whose ln((N - n + 0.5) /
    (n + 0.5)) is floored at 1e-6 (FTS5's own floor: a term in half the rows or more)."""
    rows = max(rows, hits)
    ratio = (rows - hits + 0.5) / (hits + 0.5)
    fts = math.log(ratio)
    return math.log1p(ratio) / (fts if fts > 0 else 1e-6)


Postings = Callable[[str], tuple[Sequence[int], Sequence[float]]]


def ranked(query: TextQuery, rows: int, postings: Postings) -> list[tuple[int, float]]:
    """(rowid, score) of the rows matching any term of `query` (not `all_of`), best (lowest)
    first, ties by rowid: FTS5's bm25() of the OR query (negative, best lowest), or with
    `query.common` the same with Lucene's IDF (see `TextQuery.common`).

    `postings(match)` gives the rows matching one term's FTS5 expression and their bm25() for
    that term alone; `rows` is the table's row count, as FTS5 counts it. FTS5 sums its score
    over the query's phrases, each term's part being its IDF times a factor of its frequency
    and the row's length, so the OR query's score is the sum of its terms' single-term scores,
    a repeated term counting as many times as it is repeated; with `common`, each term's score
    is scaled by `idf_gain`.
    """
    repeats: dict[str, int] = {}
    for term, times in zip(query.terms, query.repeats, strict=True):
        repeats[term] = repeats.get(term, 0) + max(1, times)
    out: dict[int, float] = {}
    for term, times in repeats.items():
        ids, scores = postings(fts_match(TextQuery((term,), (1,), columns=query.columns)))
        if not ids:
            continue
        factor = times * idf_gain(rows, len(ids)) if query.common else float(times)
        get = out.get
        for rowid, score in zip(ids, scores, strict=True):
            out[rowid] = get(rowid, 0.0) + score * factor
    order = sorted(out)
    order.sort(key=out.__getitem__)  # stable: equal scores stay in rowid order
    return [(rowid, out[rowid]) for rowid in order]


class SearchTables:
    """Mixin of `SqliteStore`: the reads of the search engine."""

    conn: sqlite3.Connection
    _held: _Held | None = None

    def _reads(self) -> _Held:
        """The reads kept for the database as it is now (a new, empty set once it changed)."""
        key = version(self.conn)
        held = self._held
        if held is None or held.key != key:
            held = self._held = _Held(key)
        return held

    def node_count(self) -> int:
        row = self.conn.execute("SELECT value FROM counters WHERE name = 'nodes'").fetchone()
        return int(row[0]) if row else 0

    def language_files(self) -> dict[str, int]:
        """language -> how many of the index's source files are written in it."""
        return {language: int(n) for language, n in self.conn.execute(
            "SELECT language, count(*) FROM files WHERE language IS NOT NULL "
            "GROUP BY language")}

    def doc_freqs(self, terms: Iterable[str], cap: int) -> dict[str, int]:
        """term -> number of nodes whose text holds it, counted up to `cap` (0 for a term the
        index never saw). Counting stops at the cap, so a common word costs what a rare one
        does; `fts5vocab` would walk the word's whole posting list. A count kept from an
        earlier question answers when it is exact or was counted at least as far."""
        held = self._reads()
        if len(held.dfs) > _HELD_TERMS:
            held.dfs.clear()
        out = {}
        for term in terms:
            known = held.dfs.get(term)
            if known is not None and (known[0] < known[1] or cap <= known[1]):
                out[term] = min(known[0], cap)
                continue
            row = self.conn.execute(
                "SELECT count(*) FROM (SELECT rowid FROM fts WHERE fts MATCH ? LIMIT ?)",
                (quote_fts(term), cap)).fetchone()
            out[term] = int(row[0])
            held.dfs[term] = (out[term], cap)
        return out

    def text_search(self, query: TextQuery, limit: int, filters: Filters,
                    weights: Sequence[float]) -> list[tuple[str, float]]:
        """(id, score) of the nodes matching `query`, best first.

        Only the best `pool` matches are joined with `nodes` and filtered: the join and the
        filters cost as much as the ranking when a common word matches most nodes. Trigger:
        filters left fewer than `limit` rows of a full pool. Why: better rows may lie beyond
        the pool. Outcome: filter every match instead.
        """
        if not query.terms:
            return []
        ws = ", " + ", ".join(repr(float(w)) for w in weights)
        scored = self._scored("fts", ws, query)
        pool = max(limit * 4, 50)
        hits = self._passing(scored[:pool], limit, filters)
        if len(hits) < limit and len(scored) > pool:
            hits = self._passing(scored, limit, filters)
        return hits

    def _scored(self, table: str, weights: str, query: TextQuery) -> list[tuple[int, float]]:
        """(rowid, bm25()) of the rows of `table` matching `query`, best (lowest) first, ties
        by rowid; `weights` are bm25()'s column weights (", 5.0, ...")."""
        if query.all_of:  # FTS5 walks an AND by skipping through its terms' lists
            return self.conn.execute(
                f"SELECT rowid, bm25({table}{weights}) AS score FROM {table} "
                f"WHERE {table} MATCH ? ORDER BY score, rowid", (fts_match(query),)).fetchall()
        held = self._reads()
        if held.score_count > _HELD_SCORES:
            held.scores.clear()
            held.score_count = 0

        def postings(match: str) -> tuple[array[int], array[float]]:
            key = (table + weights, match)
            found = held.scores.get(key)
            if found is None:
                rows = self.conn.execute(
                    f"SELECT rowid, bm25({table}{weights}) FROM {table} WHERE {table} MATCH ?",
                    (match,)).fetchall()
                found = held.scores[key] = (array("q", [r[0] for r in rows]),
                                            array("d", [r[1] for r in rows]))
                held.score_count += len(rows)
            return found

        return ranked(query, self._rows(table) if query.common else 0, postings)

    def _rows(self, table: str) -> int:
        """How many rows FTS5 counts in `table` (`fts`: one a node; `chunks`: one a
        section), kept."""
        held = self._reads()
        if table not in held.rows:
            held.rows[table] = (self.node_count() if table == "fts" else int(
                self.conn.execute("SELECT count(*) FROM sections").fetchone()[0]))
        return held.rows[table]

    def _passing(self, scored: Sequence[tuple[int, float]], limit: int, filters: Filters
                 ) -> list[tuple[str, float]]:
        """The best `limit` nodes of `scored` ((rowid, bm25()) best first) that pass
        `filters`, as (id, score), best first, ties by id."""
        cond, params = where(filters)
        score = dict(scored)
        found = list(_rows_in(self.conn, "SELECT n.rowid, n.id FROM nodes n", "n.rowid",
                              [rowid for rowid, _ in scored], cond, params))
        found.sort(key=lambda r: (score[r[0]], r[1]))
        return [(node_id, -score[rowid]) for rowid, node_id in found[:limit]]

    def section_search(self, query: TextQuery, limit: int) -> list[tuple[str, int, float]]:
        """(file, first line, score) of the best-matching sections of code, best first."""
        if not query.terms:
            return []
        scored = self._scored("chunks", "", query)[:limit]
        if not scored:
            return []
        placed = {r[0]: (r[1], int(r[2])) for r in _rows_in(
            self.conn, "SELECT rowid, file, line FROM sections", "rowid",
            [rowid for rowid, _ in scored])}
        return [(*placed[rowid], -score) for rowid, score in scored if rowid in placed]

    def nodes(self, ids: Iterable[str], filters: Filters | None = None) -> dict[str, NodeRow]:
        """The nodes among `ids` that pass `filters` (all of them without)."""
        cond, params = where(filters) if filters is not None else ("", [])
        return {row[0]: node_row(row, _json) for row in _rows_in(
            self.conn, f"SELECT {NODE_COLUMNS} FROM nodes n", "n.id", list(dict.fromkeys(ids)),
            cond, params)}

    def held_terms(self, node_ids: Iterable[str], terms: Iterable[str]) -> dict[str, set[str]]:
        """node id -> which of `terms` (analyzer tokens) its indexed text holds."""
        wanted = list(dict.fromkeys(terms))
        out: dict[str, set[str]] = {}
        for node_id in dict.fromkeys(node_ids):
            row = self.conn.execute(
                "SELECT ' ' || f.title || ' ' || f.body || ' ' || f.tags || ' ' || f.symbols || "
                "' ' || f.path || ' ' || f.content || ' ' FROM fts f JOIN nodes n ON "
                "n.rowid = f.rowid WHERE n.id = ?", (node_id,)).fetchone()
            out[node_id] = {t for t in wanted if f" {t} " in row[0]} if row else set()
        return out

    def neighbors(self, node_id: str, limit: int = 256) -> list[Neighbor]:
        """The edges touching `node_id`, seen from it: the `limit` heaviest when there are more
        (a hub's thousands would cost more than the rest of a search)."""
        rows = self.conn.execute(
            "SELECT * FROM (SELECT dst, rel, origin, weight, 1 FROM edges WHERE src = ? "
            "UNION ALL SELECT src, rel, origin, weight, 0 FROM edges WHERE dst = ?) "
            "ORDER BY 4 DESC, 1 LIMIT ?", (node_id, node_id, limit))
        return [Neighbor(r[0], r[1], r[2], float(r[3]), bool(r[4])) for r in rows]

    def neighborhoods(self, nodes: Sequence[str], cap: int) -> dict[str, list[Neighbor] | None]:
        """Every node of `nodes` -> its edges (as `neighbors`), or None when it has more than
        `cap`: a hub's edges are counted up to cap + 1, never read. Kept for the next walk."""
        held = self._reads()
        if held.edge_count > _HELD_EDGES:
            held.edges.clear()
            held.edge_count = 0
        out: dict[str, list[Neighbor] | None] = {}
        for node_id in nodes:
            key = (node_id, cap)
            if key not in held.edges:
                edges = (None if self.degree_over(node_id, cap)
                         else self.neighbors(node_id, cap))
                held.edges[key] = edges
                held.edge_count += len(edges) if edges else 1
            out[node_id] = held.edges[key]
        return out

    def degree(self, node_id: str) -> int:
        return int(self.conn.execute(
            "SELECT (SELECT count(*) FROM edges WHERE src = ?) + "
            "(SELECT count(*) FROM edges WHERE dst = ?)", (node_id, node_id)).fetchone()[0])

    def degree_over(self, node_id: str, limit: int) -> bool:
        """Whether `node_id` has more than `limit` edges, reading at most limit + 1 of them."""
        return bool(self.conn.execute(
            "SELECT count(*) > ? FROM (SELECT 1 FROM edges WHERE src = ? UNION ALL "
            "SELECT 1 FROM edges WHERE dst = ? LIMIT ?)",
            (limit, node_id, node_id, limit + 1)).fetchone()[0])

    def files_named(self, names: Iterable[str]) -> dict[str, list[str]]:
        """file name (basename) -> paths of the indexed source files with that name (kept for
        the next question: a traceback names `__init__.py` and `base.py` again and again)."""
        held = self._reads()
        if len(held.named) > _HELD_TERMS:
            held.named.clear()
        out: dict[str, list[str]] = {}
        for name in dict.fromkeys(names):
            if name not in held.named:
                held.named[name] = [r[0] for r in self.conn.execute(
                    "SELECT path FROM files WHERE name = ? AND language IS NOT NULL "
                    "ORDER BY path", (name,))]
            if held.named[name]:
                out[name] = held.named[name]
        return out

    def symbols_named(self, names: Iterable[str], max_definers: int) -> list[SymbolRow]:
        """Definitions of each of `names`, for names defined in at most `max_definers` files."""
        out: list[SymbolRow] = []
        for name in dict.fromkeys(names):
            rows = self.conn.execute(
                "SELECT name, file, kind, line FROM symbols WHERE name = ? ORDER BY file, line",
                (name,)).fetchall()
            if rows and len({r[1] for r in rows}) <= max_definers:
                out += [SymbolRow(*r) for r in rows]
        return out

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        found = set()
        for node_id in dict.fromkeys(ids):
            if self.conn.execute("SELECT 1 FROM nodes WHERE id = ?", (node_id,)).fetchone():
                found.add(node_id)
        return found
