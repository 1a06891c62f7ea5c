"""Embedding vectors in a shared database: pgvector columns searched through HNSW indexes.

The same operations as `store/sqlite/vectors.py`: one row per (project, model, node, chunk),
each project's model dimensions in `vector_models` (a vector of another dimension is refused,
see `store/vectors.py`), a node scored by its best chunk. pgvector's HNSW index needs one
fixed dimension, so each (model, dimension) has a partial expression index (made by the
owner's `loremap_vector_index`, schema 3); a query names the model and dimension as literals
so the planner can match the index's predicate. The index ranks chunks, not nodes: the
nearest `4 x limit` chunks are read (iterative scans on, `hnsw.iterative_scan`), grouped by
node, and read again four times as deep while chunks of the same nodes leave fewer than
`limit` nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from loremap.store.vectors import checked_rows, dimension_mismatch

HNSW_MAX_DIM = 2000  # the most dimensions pgvector's HNSW index takes
DEEPEN = 4  # chunks read per node wanted, and how much deeper each further read goes


class PgVectorTables:
    """Mixin of `PostgresStore`: the vectors, their models and the nearest-vector search."""

    project: str

    def execute(self, sql: str, params: Sequence[object] | None = None) -> Any:
        raise NotImplementedError  # PostgresStore's

    def copy_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[object]]
                  ) -> None:
        raise NotImplementedError  # PostgresStore's

    def vector_dim(self, model: str) -> int | None:
        """The dimension recorded for `model` in this project (None: no vector stored)."""
        row = self.execute("SELECT dim FROM vector_models WHERE project = %s AND model = %s",
                           (self.project, model)).fetchone()
        return None if row is None else int(row[0])

    def missing_vectors(self, model: str, limit: int) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self.execute(
            "SELECT n.id, n.title || E'\\n' || n.body FROM nodes n WHERE n.project = %s AND "
            "NOT EXISTS (SELECT 1 FROM vectors v WHERE v.project = n.project AND v.model = %s "
            "AND v.id = n.id) ORDER BY n.id COLLATE \"C\" LIMIT %s", (self.project, model, limit))]

    def put_vectors(self, model: str, dim: int,
                    rows: Iterable[tuple[str, int, Sequence[float]]]) -> None:
        """Store (node id, chunk, vector) rows, replacing those nodes' earlier chunks of
        `model` (inside `write()`, whose project lock keeps two writers from recording two
        dimensions); `InvalidInput`, nothing written, as `checked_rows` says."""
        recorded = self.vector_dim(model)
        checked = checked_rows(model, dim, recorded, rows)
        if not checked:
            return
        if recorded is None:
            self.execute("INSERT INTO vector_models (project, model, dim) VALUES (%s, %s, %s)",
                         (self.project, model, dim))
        unique = {(node_id, chunk): vec for node_id, chunk, vec in checked}  # the last wins
        self.execute("DELETE FROM vectors WHERE project = %s AND model = %s AND id = ANY(%s)",
                     (self.project, model, list(dict.fromkeys(k[0] for k in unique))))
        self.copy_rows("vectors", ("id", "model", "chunk", "dim", "vec"),
                       ((node_id, model, chunk, dim, _vector(vec))
                        for (node_id, chunk), vec in unique.items()))
        self._hnsw(model, dim)

    def _hnsw(self, model: str, dim: int) -> None:
        """The HNSW index (cosine) of one model's vectors: pgvector indexes a column of one
        dimension, so each (model, dimension) gets a partial expression index, made by the
        tables' owner's `loremap_vector_index` (schema 3) whoever the session's role is.
        pgvector's HNSW takes at most 2,000 dimensions: longer vectors are scanned exactly."""
        import hashlib

        if dim > HNSW_MAX_DIM:
            return
        name = "vectors_hnsw_" + hashlib.sha1(f"{model}/{dim}".encode(),
                                              usedforsecurity=False).hexdigest()[:12]
        self.execute("SELECT loremap_vector_index(%s, %s, %s)", (name, model, int(dim)))

    def nearest_vectors(self, model: str, vec: Sequence[float], limit: int
                        ) -> list[tuple[str, float]]:
        """(id, cosine) of the `limit` nodes nearest `vec` by their best chunk, best first
        (ties by id); nothing for a model without vectors, `InvalidInput` for a query of
        another dimension. Rows whose dimension is not the model's are never read."""
        dim = self.vector_dim(model)
        if dim is None or limit <= 0:
            return []
        if len(vec) != dim:
            raise dimension_mismatch(model, dim, len(vec))
        depth = limit * DEEPEN
        while True:
            hits, read = self._nearest_chunks(model, dim, _vector(vec), depth, limit)
            if len(hits) >= limit or read < depth:
                return hits
            depth *= DEEPEN

    def _nearest_chunks(self, model: str, dim: int, query: str, depth: int, limit: int
                        ) -> tuple[list[tuple[str, float]], int]:
        """The best `limit` nodes among the `depth` nearest chunks, and how many chunks
        were read (fewer than `depth`: there are no more)."""
        literal = model.replace("'", "''")
        cast = f"vec::vector({dim})"
        # Over HNSW's limit, no index: an exact scan, which must not cast a vector of another
        # length (a row the index would have refused).
        exact = "" if dim <= HNSW_MAX_DIM else f" AND vector_dims(vec) = {dim}"
        rows = self.execute(
            f"WITH hits AS MATERIALIZED (SELECT id, {cast} <=> %s::vector({dim}) AS distance "
            f"FROM vectors WHERE model = '{literal}' AND dim = {dim} AND project = %s{exact} "
            f"ORDER BY {cast} <=> %s::vector({dim}) LIMIT %s) "
            "SELECT id, 1 - min(distance), (SELECT count(*) FROM hits) FROM hits GROUP BY id "
            'ORDER BY 2 DESC, id COLLATE "C" LIMIT %s',
            (query, self.project, query, depth, limit)).fetchall()
        return [(r[0], float(r[1])) for r in rows], int(rows[0][2]) if rows else 0

    def best_chunks(self, model: str, vec: Sequence[float], ids: Sequence[str]
                    ) -> dict[str, tuple[int, int]]:
        """Each node of `ids` -> (its chunk of `model` nearest `vec`, its number of chunks);
        ties go to the lowest number; nodes without one are left out. Rows of another
        dimension are never read."""
        dim = self.vector_dim(model)
        if dim is None or not ids:
            return {}
        if len(vec) != dim:
            raise dimension_mismatch(model, dim, len(vec))
        cast = f"vec::vector({dim})"
        exact = "" if dim <= HNSW_MAX_DIM else f" AND vector_dims(vec) = {dim}"
        rows = self.execute(
            f"SELECT DISTINCT ON (id) id, chunk, count(*) OVER (PARTITION BY id) FROM vectors "
            f"WHERE project = %s AND model = %s AND dim = {dim} AND id = ANY(%s){exact} "
            f"ORDER BY id, {cast} <=> %s::vector({dim}), chunk",
            (self.project, model, list(dict.fromkeys(ids)), _vector(vec))).fetchall()
        return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    def vector_models(self) -> list[tuple[str, int, int]]:
        return [(r[0], int(r[1]), int(r[2])) for r in self.execute(
            "SELECT m.model, m.dim, (SELECT count(DISTINCT v.id) FROM vectors v WHERE "
            "v.project = m.project AND v.model = m.model) FROM vector_models m WHERE "
            'm.project = %s ORDER BY m.model COLLATE "C"', (self.project,))]

    def broken_vectors(self) -> int:
        """Rows `nearest_vectors` never reads: of a dimension other than their model's
        (in the `dim` column or the vector itself), or of a model with none recorded."""
        row = self.execute(
            "SELECT count(*) FROM vectors v LEFT JOIN vector_models m ON m.project = "
            "v.project AND m.model = v.model WHERE v.project = %s AND (m.model IS NULL OR "
            "v.dim != m.dim OR vector_dims(v.vec) != m.dim)", (self.project,)).fetchone()
        return int(row[0])

    def drop_vectors(self, model: str | None) -> None:
        for table in ("vectors", "vector_models"):
            if model is None:
                self.execute(f"DELETE FROM {table} WHERE project = %s", (self.project,))
            else:
                self.execute(f"DELETE FROM {table} WHERE project = %s AND model = %s",
                             (self.project, model))


def _vector(vec: Sequence[float]) -> str:
    """pgvector's text form; 9 significant digits give back a float32 exactly."""
    return "[" + ",".join(f"{x:.9g}" for x in vec) + "]"
