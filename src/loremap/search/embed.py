"""The vector slot: an `Embedder` turns texts into unit vectors; the index keeps one vector per
node and model; the `vectors` candidate list ranks nodes by cosine similarity to the query.

No model ships with the core (nothing downloads at run time): `search.embedder = "hash"` is a
small deterministic embedder (signed feature hashing of the analyzer's tokens) that exercises
the whole path in tests; the embeddings extra registers real models under other names.
Vectors are derived data: `embed_pending` fills in the nodes that have none, and a node's
vector is dropped whenever the node is rewritten.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Protocol

from loremap.errors import InvalidInput
from loremap.store import VectorStore  # the index's vectors (declared with the store)
from loremap.text import Analyzer


class Embedder(Protocol):
    name: str  # recorded with each vector: vectors of another model are never compared

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class HashEmbedder:
    """Signed feature hashing of analyzer tokens into `dim` buckets, log-scaled, unit length.

    Deterministic (CRC-32, no seed), so tests can rely on its neighbours: texts sharing tokens
    are close, others near orthogonal. It knows no synonyms; it is a test device, not a model.
    """

    def __init__(self, analyzer: Analyzer, dim: int = 256) -> None:
        self.analyzer = analyzer
        self.dim = dim
        self.name = f"hash-{dim}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            counts: dict[str, int] = {}
            for token in self.analyzer.tokens(text):
                counts[token] = counts.get(token, 0) + 1
            vec = [0.0] * self.dim
            for token, count in counts.items():
                code = zlib.crc32(token.encode("utf-8", "surrogatepass"))
                sign = 1.0 if code & 0x80000000 else -1.0
                vec[code % self.dim] += sign * (1.0 + math.log(count))
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out


def make_embedder(name: str, analyzer: Analyzer) -> Embedder | None:
    """The embedder a `search.embedder` setting names ("" for none)."""
    name = name.strip().lower()
    if not name:
        return None
    if name == "hash" or name.startswith("hash-"):
        dim = name.partition("-")[2]
        if dim and not dim.isdigit():
            raise InvalidInput(f"search.embedder {name!r}: use hash or hash-<dimensions>")
        return HashEmbedder(analyzer, int(dim) if dim else 256)
    raise InvalidInput(f"unknown search.embedder {name!r}: the core knows 'hash' (a test "
                       "embedder); leave it empty to search without vectors")


def embed_pending(store: VectorStore, embedder: Embedder, batch: int = 256) -> int:
    """Embed every node that has no vector of this model yet (call inside `write()`)."""
    done = 0
    while True:
        todo = store.missing_vectors(embedder.name, batch)
        if not todo:
            return done
        vectors = embedder.embed([text for _, text in todo])
        store.put_vectors(embedder.name, zip([i for i, _ in todo], vectors, strict=True))
        done += len(todo)


def nearest(store: VectorStore, embedder: Embedder, query: str, limit: int
            ) -> list[tuple[str, float]]:
    """(id, cosine) of the `limit` nodes closest to `query`, best first."""
    q = embedder.embed([query])[0]
    return [(node_id, score) for node_id, score in store.nearest_vectors(embedder.name, q, limit)
            if score > 0]
