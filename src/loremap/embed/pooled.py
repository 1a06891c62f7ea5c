"""Embedding a whole project on every core: `Pooled` splits each batch of texts between worker
processes that each run the same model.

An encoder on the CPU is compute-bound at ~0.07 s per window on one core (one BLAS thread, the
default: `bert.py`), so `loremap embed enable` on 10,000 nodes takes ~12 minutes on one core;
with a worker per core the batch's halves run at once. Only the long jobs use it (`enable`,
`reembed`, `index` with many nodes waiting): a search embeds a few nodes and never starts a
pool. The workers die with this process (`codemap.pool`, SIGKILL included); with the fork
start method they inherit the model already loaded here, elsewhere each loads its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from loremap.embed import EmbedSettings
    from loremap.search.embed import Embedder, Vector, Vectors

_WORKER: Embedder | None = None  # this worker's model (inherited through fork, or loaded)


def _setup(spec: str, settings: EmbedSettings) -> None:
    global _WORKER
    if _WORKER is None:
        from loremap.embed import make_embedder
        from loremap.text import Analyzer

        _WORKER = make_embedder(spec, Analyzer(["en"]), settings)


def _embed(texts: list[str]) -> Any:
    assert _WORKER is not None
    return _WORKER.embed(texts)


class Pooled:
    """`inner`, with `embed` of more than `workers` texts spread over `workers` processes."""

    def __init__(self, inner: Embedder, spec: str, settings: EmbedSettings,
                 workers: int) -> None:
        self.inner = inner
        self.name = inner.name
        self.spec = spec
        self.settings = settings
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.workers < 2 or len(texts) < 2 * self.workers:
            return self.inner.embed(texts)
        import numpy as np

        pool = self._start()
        step = -(-len(texts) // self.workers)
        parts = [list(texts[i:i + step]) for i in range(0, len(texts), step)]
        return np.concatenate([np.asarray(v, dtype=np.float32) for v in pool.map(_embed, parts)])

    def embed_query(self, text: str) -> Vector:
        return self.inner.embed_query(text)

    def _start(self) -> ProcessPoolExecutor:
        if self._pool is None:
            global _WORKER
            from loremap.codemap.pool import parse_pool

            _WORKER = self.inner  # what a forked worker inherits
            self._pool = parse_pool(self.workers, _setup, (self.spec, self.settings))
        return self._pool

    def close(self) -> None:
        global _WORKER
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        _WORKER = None
