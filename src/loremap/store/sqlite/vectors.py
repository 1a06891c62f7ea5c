"""Embedding vectors in the SQLite index, and the exact scan that finds a query's nearest.

A long node is embedded in chunks: `vectors` holds one float32 blob per (model, node, chunk)
and a node scores as its best chunk. `vector_models` records each model's dimension, so
vectors of another dimension are refused (see `store/vectors.py`) instead of mixed.

The search is an exhaustive numpy scan: the model's blobs, read in one statement and joined,
are one float32 matrix (`np.frombuffer`), kept per connection until the database changes
(`PRAGMA data_version` for other connections' commits, `total_changes` for this one's), and a
query is one matrix-vector product, the best chunk per node (`np.maximum.reduceat`) and a
partial sort. Measured by bench/vectors.py (384 dimensions, a node in four with two chunks,
two runs on a shared 2-core machine; `import numpy` itself 85-90 ms in a fresh interpreter,
paid by whatever embeds the query anyway). Load: a fresh connection's first query beyond a
warm one; MB: file size per 10k vectors; insert: seconds for all of them (the store's:
`put_vectors`, checks included, 256 rows per transaction as `embed_pending` writes):

    vectors  method          load ms   query p50 / p95 ms   insert s   MB/10k
      1k     loop (before)      -        18-20 / 19-20         0.01     20.9
      1k     store (numpy)      4        0.12 / 0.2            0.02     22.6
      1k     sqlite-vec         1.5      0.8 / 1.0             0.02     16.5
     10k     loop (before)      -        196-206 / 202-206     0.1      20.8
     10k     store (numpy)     28-35     0.5-0.6 / 0.7-12      0.24     21.2
     10k     sqlite-vec         4-5      6.2-6.7 / 7.3-7.6     0.13     16.2
    100k     loop (before)      -        1950-3020 / 2430-3140 0.8-1    20.8
    100k     store (numpy)    270        7-17 / 8-24           2.9      21.1
    100k     sqlite-vec        0-14      75-98 / 80-232        1.4      15.9

Every method found the exact top 10 (each is an exact scan). At 10k vectors (the size the
recall targets) numpy answers a warm process (the daemon, the MCP server) about 10x faster
than sqlite-vec and loses ~25 ms once in a fresh one; at 100k sqlite-vec wins a fresh process
(~90 ms against ~290) and loses every warm query by 4-10x. It is not clearly better, and it
needs a `sqlite3` that can load extensions, which this project's own interpreter (pyenv's
default build, like python.org's on macOS) cannot: so numpy. The blobs live in a rowid
table: WITHOUT ROWID, rows of 1.5 kB took 46.9 MB per 10k vectors instead of 20.8.
"""

from __future__ import annotations

import bisect
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from loremap.store.sqlite.search import version
from loremap.store.vectors import checked_rows, dimension_mismatch


class _Matrix(NamedTuple):
    """One model's vectors as a matrix, valid while the database is at `key`."""

    key: tuple[int, int]  # (PRAGMA data_version, connection's total_changes)
    model: str
    dim: int
    ids: list[str]  # one per node, in the matrix's order: sorted (`ORDER BY id`)
    starts: Any  # numpy intp: the first row of each node's chunks
    matrix: Any  # numpy float32 (rows, dim)
    chunks: list[int]  # each row's chunk number


class VectorTables:
    """Mixin of `SqliteStore`: the vectors, their models and the nearest-vector scan."""

    conn: sqlite3.Connection
    _vector_cache: _Matrix | None = None

    def vector_dim(self, model: str) -> int | None:
        """The dimension recorded for `model` (None: it has stored no vector)."""
        row = self.conn.execute("SELECT dim FROM vector_models WHERE model = ?",
                                (model,)).fetchone()
        return None if row is None else int(row[0])

    def missing_vectors(self, model: str, limit: int) -> list[tuple[str, str]]:
        """(id, text) of up to `limit` notes and code nodes without a vector of `model`."""
        return [(r[0], r[1]) for r in self.conn.execute(
            "SELECT n.id, n.title || '\n' || n.body FROM nodes n WHERE NOT EXISTS "
            "(SELECT 1 FROM vectors v WHERE v.model = ? AND v.id = n.id) ORDER BY n.id LIMIT ?",
            (model, limit))]

    def put_vectors(self, model: str, dim: int,
                    rows: Iterable[tuple[str, int, Sequence[float]]]) -> None:
        """Store (node id, chunk, vector) rows of `model`, replacing those nodes' earlier
        chunks of it; `InvalidInput` (nothing written) for a dimension other than the
        model's recorded one or a malformed row."""
        checked = checked_rows(model, dim, self.vector_dim(model), rows)
        if not checked:
            return
        c = self.conn
        c.execute("INSERT OR IGNORE INTO vector_models (model, dim) VALUES (?, ?)", (model, dim))
        c.executemany("DELETE FROM vectors WHERE model = ? AND id = ?",
                      [(model, node_id) for node_id in dict.fromkeys(r[0] for r in checked)])
        c.executemany(
            "INSERT OR REPLACE INTO vectors (id, model, chunk, vec) VALUES (?, ?, ?, ?)",
            [(node_id, model, chunk, vec.tobytes()) for node_id, chunk, vec in checked])

    def nearest_vectors(self, model: str, vec: Sequence[float], limit: int
                        ) -> list[tuple[str, float]]:
        """(id, cosine) of the `limit` nodes nearest `vec`, each scored by its best chunk,
        best first (ties by id). Vectors are unit length, so the dot product is the cosine.
        A model with no vectors finds nothing; a query of another dimension than the model's
        is `InvalidInput`; a blob of the wrong length is skipped (`broken_vectors`)."""
        dim = self.vector_dim(model)
        if dim is None or limit <= 0:
            return []
        if len(vec) != dim:
            raise dimension_mismatch(model, dim, len(vec))
        import numpy as np

        held = self._matrix(model, dim)
        if not held.ids:
            return []
        scores = np.maximum.reduceat(held.matrix @ np.asarray(vec, dtype=np.float32),
                                     held.starts)
        scores[~np.isfinite(scores)] = -np.inf
        k = min(limit, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        found = [(held.ids[i], float(scores[i])) for i in top.tolist()
                 if scores[i] != -np.inf]
        return sorted(found, key=lambda hit: (-hit[1], hit[0]))

    def best_chunks(self, model: str, vec: Sequence[float], ids: Sequence[str]
                    ) -> dict[str, tuple[int, int]]:
        """Each node of `ids` -> (its chunk of `model` nearest `vec`, its number of chunks);
        ties go to the lowest number; read from the matrix the scan keeps; nodes without one
        are left out."""
        dim = self.vector_dim(model)
        if dim is None:
            return {}
        if len(vec) != dim:
            raise dimension_mismatch(model, dim, len(vec))
        import numpy as np

        held = self._matrix(model, dim)
        query = np.asarray(vec, dtype=np.float32)
        out = {}
        for node_id in dict.fromkeys(ids):
            # `ids` is in SQLite's BINARY order of UTF-8 bytes, which is Python's order of
            # code points: a node is found by bisection, no map of them is built per reload.
            place = bisect.bisect_left(held.ids, node_id)
            if place == len(held.ids) or held.ids[place] != node_id:
                continue
            start = int(held.starts[place])
            end = int(held.starts[place + 1]) if place + 1 < len(held.ids) else len(held.chunks)
            scores = held.matrix[start:end] @ query
            scores[~np.isfinite(scores)] = -np.inf
            out[node_id] = (held.chunks[start + int(np.argmax(scores))], end - start)
        return out

    def _matrix(self, model: str, dim: int) -> _Matrix:
        """The model's matrix, read again only when the database changed since."""
        import numpy as np

        key = version(self.conn)
        held = self._vector_cache
        if held is not None and (held.key, held.model, held.dim) == (key, model, dim):
            return held
        self._vector_cache = None  # the old matrix is not kept while the new one is read
        rows = self.conn.execute(
            "SELECT id, vec, chunk FROM vectors WHERE model = ? AND typeof(vec) = 'blob' AND "
            "length(vec) = ? ORDER BY id, chunk", (model, dim * 4)).fetchall()
        ids = [r[0] for r in rows]
        first = [i for i, node in enumerate(ids) if i == 0 or ids[i - 1] != node]
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        held = _Matrix(key, model, dim, [ids[i] for i in first],
                       np.asarray(first, dtype=np.intp), matrix.reshape(len(rows), dim),
                       [int(r[2]) for r in rows])
        self._vector_cache = held
        return held

    def vector_models(self) -> list[tuple[str, int, int]]:
        """(model, dimension, nodes with a vector of it) of every recorded model."""
        return [(r[0], int(r[1]), int(r[2])) for r in self.conn.execute(
            "SELECT m.model, m.dim, (SELECT count(DISTINCT v.id) FROM vectors v WHERE "
            "v.model = m.model) FROM vector_models m ORDER BY m.model")]

    def broken_vectors(self) -> int:
        """How many stored vectors the scan skips: a blob whose length is not its model's
        dimension (a corrupt row), or a row of a model with no recorded dimension."""
        return int(self.conn.execute(
            "SELECT count(*) FROM vectors v LEFT JOIN vector_models m ON m.model = v.model "
            "WHERE m.model IS NULL OR typeof(v.vec) != 'blob' OR length(v.vec) != m.dim * 4"
        ).fetchone()[0])

    def drop_vectors(self, model: str | None) -> None:
        """Forget every vector of `model` and its recorded dimension (None: of every model)."""
        if model is None:
            self.conn.execute("DELETE FROM vectors")
            self.conn.execute("DELETE FROM vector_models")
        else:
            self.conn.execute("DELETE FROM vectors WHERE model = ?", (model,))
            self.conn.execute("DELETE FROM vector_models WHERE model = ?", (model,))
        self._vector_cache = None
