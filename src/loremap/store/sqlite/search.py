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
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Sequence

from loremap.model.search import Filters, Neighbor, NodeRow, SymbolRow, TextQuery
from loremap.store.rows import NODE_COLUMNS, node_row
from loremap.store.sqlite.schema import FTS_COLUMNS

_CHUNK = 500  # ids per `IN (...)`, well under SQLite's variable limit
_HELD_EDGES = 200_000  # edges a connection keeps at most (~30 MB); past it, it starts again
_HELD_TERMS = 100_000  # document counts a connection keeps at most


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


def common_terms(conn: sqlite3.Connection, table: str, query: TextQuery, rows: int,
                 weights: str = "") -> tuple[str, list[object]]:
    """A `(rowid, score)` select of `table`'s rows matching `query`, scored as FTS5's bm25()
    (negative, best lowest) with Lucene's IDF (see `TextQuery.common`), and its parameters.

    FTS5 sums its score over the query's phrases, each term's part being its IDF times a
    factor of its frequency and the row's length; so each term is matched alone, its score
    scaled by `idf_gain` (and by its repeats), and the parts summed per row. `rows` must be
    the table's row count, as FTS5 counts it; `weights` the bm25() column weights (", 5.0,
    ..."). Each term's postings are read twice (counted, then ranked) where the OR query reads
    them once; `all_of` queries keep FTS5's score.
    """
    repeats: dict[str, int] = {}
    for term, times in zip(query.terms, query.repeats, strict=True):
        repeats[term] = repeats.get(term, 0) + max(1, times)
    parts, args = [], []
    for term, times in repeats.items():
        match = fts_match(TextQuery((term,), (1,), columns=query.columns))
        hits = int(conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?",
                                (match,)).fetchone()[0])
        if not hits:
            continue
        parts.append(f"SELECT rowid, bm25({table}{weights}) * ? AS score FROM {table} "
                     f"WHERE {table} MATCH ?")
        args += [times * idf_gain(rows, hits), match]
    if len(parts) <= 1:  # one part alone: in an aggregate, SQLite would flatten it away
        return (parts[0] if parts else f"SELECT rowid, 0.0 AS score FROM {table} WHERE 0"), args
    # A compound select is never flattened into the aggregate around it: each bm25() runs
    # where its MATCH is.
    return ("SELECT rowid, sum(score) AS score FROM (" + " UNION ALL ".join(parts)
            + ") GROUP BY rowid"), args


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

        FTS5 ranks its own matches and only the best `pool` rows are joined with `nodes` and
        filtered: the join and the filters cost as much as the ranking when a common word
        matches most nodes. Trigger: filters left fewer than `limit` rows of a full pool.
        Why: better rows may lie beyond the pool. Outcome: rank every match instead.
        """
        if not query.terms:
            return []
        match = fts_match(query)
        ws = ", ".join(repr(float(w)) for w in weights)
        # The scored matches, built once: `common_terms` counts each term to build them.
        if query.common and not query.all_of:
            scored = common_terms(self.conn, "fts", query, self.node_count(), f", {ws}")
        else:
            scored = (f"SELECT rowid, bm25(fts, {ws}) AS score FROM fts WHERE fts MATCH ?",
                      [match])
        pool = max(limit * 4, 50)
        hits = self._text(scored, limit, pool, filters)
        if len(hits) < limit:
            count = int(self.conn.execute("SELECT count(*) FROM fts WHERE fts MATCH ?",
                                          (match,)).fetchone()[0])
            if count > pool:
                hits = self._text(scored, limit, None, filters)
        return hits

    def _text(self, matched: tuple[str, list[object]], limit: int, pool: int | None,
              filters: Filters) -> list[tuple[str, float]]:
        """The best `limit` of the scored matches `matched` (SQL and its parameters) that pass
        `filters`, from the best `pool` of them (all of them without a pool)."""
        cond, params = where(filters)
        scored, args = matched
        sql = (
            f"WITH top AS (SELECT rowid, score FROM ({scored}) "
            f"ORDER BY score, rowid{' LIMIT ?' if pool else ''}) "
            f"SELECT n.id, top.score FROM top JOIN nodes n ON n.rowid = top.rowid WHERE 1{cond} "
            "ORDER BY top.score, n.id LIMIT ?"
        )
        args = [*args, *([pool] if pool else []), *params, limit]
        return [(r[0], -float(r[1])) for r in self.conn.execute(sql, args)]

    def section_search(self, query: TextQuery, limit: int) -> list[tuple[str, int, float]]:
        """(file, first line, score) of the best-matching sections of code, best first."""
        if not query.terms:
            return []
        if query.common and not query.all_of:
            # One section is one row of `chunks`; FTS5 counts its rows the same way.
            rows = int(self.conn.execute("SELECT count(*) FROM sections").fetchone()[0])
            scored, args = common_terms(self.conn, "chunks", query, rows)
        else:
            scored = "SELECT rowid, bm25(chunks) AS score FROM chunks WHERE chunks MATCH ?"
            args = [fts_match(query)]
        return [(r[0], int(r[1]), -float(r[2])) for r in self.conn.execute(
            f"WITH top AS (SELECT rowid, score FROM ({scored}) ORDER BY score LIMIT ?) "
            "SELECT s.file, s.line, top.score FROM top JOIN sections s "
            "ON s.rowid = top.rowid ORDER BY top.score, s.rowid", (*args, limit))]

    def nodes(self, ids: Iterable[str], filters: Filters | None = None) -> dict[str, NodeRow]:
        """The nodes among `ids` that pass `filters` (all of them without)."""
        cond, params = where(filters) if filters is not None else ("", [])
        wanted = list(dict.fromkeys(ids))
        out: dict[str, NodeRow] = {}
        for start in range(0, len(wanted), _CHUNK):
            part = wanted[start:start + _CHUNK]
            marks = ", ".join("?" for _ in part)
            for row in self.conn.execute(
                    f"SELECT {NODE_COLUMNS} FROM nodes n WHERE n.id IN ({marks}){cond}",
                    [*part, *params]):
                out[row[0]] = node_row(row, _json)
        return out

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
