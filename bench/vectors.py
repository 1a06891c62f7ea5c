"""How the SQLite index should find a query's nearest vectors: three ways, same data, same run.

    python bench/vectors.py [--sizes 1000,10000,100000] [--dim 384] [--queries 50]
                            [--loop-queries 3] [--json OUT]

For each size, random unit vectors of `--dim` float32 (a node in four has a second chunk, as
long notes do) are written into a fresh SQLite file by each method, then queried:

- `loop` — the baseline, the store before chunks: one float32 blob per row, a pure-Python
  dot product per row (`--loop-queries` queries only: it is slow at 100k);
- `numpy` — the same blobs read in one statement, joined and viewed as one float32 matrix
  (`np.frombuffer`), one matrix-vector product, the best chunk per node by
  `np.maximum.reduceat`, the top k by `argpartition`;
- `store` — `SqliteStore.nearest_vectors` as shipped (numpy, the matrix cached per connection
  and per model until the vectors change): the store's own insert (`put_vectors`, checks
  included, 256 rows per transaction as `embed_pending` writes), load and query;
- `sqlite-vec` — a `vec0` virtual table (cosine metric, the node id as an auxiliary column),
  its exact KNN scan in C, k = 4 x limit rows, then the best chunk per node. Loaded through
  `apsw`: this Python's `sqlite3` may lack `enable_load_extension` (pyenv's and python.org's
  macOS builds do), which is itself a finding; skipped when apsw or sqlite-vec is missing.

Figures per method and size: insert (all rows, one transaction, seconds), load (a fresh
connection's first query minus a warm query: what a fresh process such as the prompt hook pays
once; for numpy the matrix build), query p50/p95 (warm, ms), cold (open + first query, ms), the
file size per 10k vectors (MB), and the overlap of its top 10 with the exact answer (numpy's in
float64). `import numpy` is timed apart in a fresh interpreter (the hook pays it once too).
The machine is shared and noisy: read medians and ratios. Exit status 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

# bench/ holds a `secrets.py`, which would shadow the standard library's for numpy.random.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import numpy as np  # noqa: E402

from loremap.store.sqlite import SqliteStore  # noqa: E402
from loremap.text import Analyzer  # noqa: E402

LIMIT = 10
MODEL = "bench"
BATCH = 256  # rows per transaction of the store's insert, as `embed_pending` writes them


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def corpus(size: int, dim: int, seed: int = 7) -> tuple[list[tuple[str, int]], Any]:
    """(node id, chunk) of `size` rows and their unit vectors (float32, one row each)."""
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((size, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    keys: list[tuple[str, int]] = []
    node = 0
    while len(keys) < size:
        keys.append((f"node-{node:06d}", 0))
        if node % 4 == 3 and len(keys) < size:
            keys.append((f"node-{node:06d}", 1))
        node += 1
    return keys, vecs


def queries(count: int, dim: int) -> Any:
    rng = np.random.default_rng(11)
    q = rng.standard_normal((count, dim)).astype(np.float32)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def exact(keys: list[tuple[str, int]], vecs: Any, q: Any) -> set[str]:
    scores = vecs.astype(np.float64) @ q.astype(np.float64)
    best: dict[str, float] = {}
    for (node, _), s in zip(keys, scores.tolist(), strict=True):
        best[node] = max(best.get(node, -2.0), s)
    return {n for _, n in heapq.nlargest(LIMIT, ((s, n) for n, s in best.items()))}


def best_per_node(pairs: Sequence[tuple[str, float]], limit: int) -> list[tuple[str, float]]:
    best: dict[str, float] = {}
    for node, score in pairs:
        if score > best.get(node, -2.0):
            best[node] = score
    return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]


# --- the blob table, scanned in Python or in numpy ----------------------------------------------

def blob_insert(path: Path, keys: list[tuple[str, int]], vecs: Any) -> float:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("CREATE TABLE vectors (id TEXT NOT NULL, model TEXT NOT NULL, chunk INTEGER "
                     "NOT NULL, vec BLOB NOT NULL)")
        conn.execute("CREATE UNIQUE INDEX vectors_key ON vectors (model, id, chunk)")
        started = time.perf_counter()
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO vectors VALUES (?, ?, ?, ?)",
                         [(n, MODEL, c, v.tobytes()) for (n, c), v in zip(keys, vecs,
                                                                           strict=True)])
        conn.execute("COMMIT")
        return time.perf_counter() - started


def loop_query(conn: Any, q: Sequence[float]) -> list[tuple[str, float]]:
    pairs = []
    for node, blob in conn.execute("SELECT id, vec FROM vectors WHERE model = ?", (MODEL,)):
        vec = array("f")
        vec.frombytes(blob)
        pairs.append((node, sum(a * b for a, b in zip(q, vec, strict=False))))
    return best_per_node(pairs, LIMIT)


class NumpyScan:
    """The matrix of one model's blobs, built once per connection (`load`), scanned per query."""

    def __init__(self, conn: Any, dim: int) -> None:
        self.conn, self.dim = conn, dim
        self.ids: list[str] = []
        self.matrix: Any = None
        self.starts: Any = None

    def load(self) -> None:
        rows = self.conn.execute("SELECT id, vec FROM vectors WHERE model = ? ORDER BY id, "
                                 "chunk", (MODEL,)).fetchall()
        ids = [r[0] for r in rows]
        self.matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
            len(rows), self.dim)
        first = [i for i, node in enumerate(ids) if i == 0 or ids[i - 1] != node]
        self.starts = np.asarray(first, dtype=np.intp)
        self.ids = [ids[i] for i in first]

    def query(self, q: Any) -> list[tuple[str, float]]:
        if self.matrix is None:
            self.load()
        scores = np.maximum.reduceat(self.matrix @ q, self.starts)
        k = min(LIMIT, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        return sorted(((self.ids[i], float(scores[i])) for i in top.tolist()),
                      key=lambda kv: (-kv[1], kv[0]))


# --- sqlite-vec ----------------------------------------------------------------------------------

def vec_connect(path: Path) -> Any:
    import apsw
    import sqlite_vec

    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    return conn


def vec_insert(path: Path, keys: list[tuple[str, int]], vecs: Any) -> float:
    conn = vec_connect(path)
    dim = vecs.shape[1]
    conn.execute(f"CREATE VIRTUAL TABLE vec USING vec0(embedding float[{dim}] "
                 "distance_metric=cosine, +node text, +chunk integer)")
    started = time.perf_counter()
    with conn:
        conn.executemany("INSERT INTO vec (embedding, node, chunk) VALUES (?, ?, ?)",
                         [(v.tobytes(), n, c) for (n, c), v in zip(keys, vecs, strict=True)])
    seconds = time.perf_counter() - started
    conn.close()
    return seconds


def vec_query(conn: Any, q: Any) -> list[tuple[str, float]]:
    rows = conn.execute("SELECT node, distance FROM vec WHERE embedding MATCH ? AND k = ?",
                        (q.tobytes(), LIMIT * 4)).fetchall()
    return best_per_node([(node, 1.0 - float(d)) for node, d in rows], LIMIT)


def vec_available() -> str:
    try:
        import apsw  # noqa: F401
        import sqlite_vec  # noqa: F401
    except ImportError as exc:
        return f"skipped ({exc.name} is not installed)"
    return ""


# --- the shipped store ---------------------------------------------------------------------------

def store_insert(path: Path, keys: list[tuple[str, int]], vecs: Any) -> float:
    store = SqliteStore(path, Analyzer(["en"]))
    try:
        rows = [(n, c, v) for (n, c), v in zip(keys, vecs.tolist(), strict=True)]
        started = time.perf_counter()
        for start in range(0, len(rows), BATCH):
            with store.write():
                store.put_vectors(MODEL, vecs.shape[1], rows[start:start + BATCH])
        return time.perf_counter() - started
    finally:
        store.close()


# --- measuring -----------------------------------------------------------------------------------

def measure(open_: Callable[[], Any], query: Callable[[Any, Any], list[tuple[str, float]]],
            close: Callable[[Any], None], qs: Any, truth: list[set[str]]) -> dict[str, float]:
    """Cold (open + first query), warm p50/p95 and the top-10 overlap with `truth`."""
    started = time.perf_counter()
    handle = open_()
    query(handle, qs[0])
    cold = time.perf_counter() - started
    times, overlap = [], []
    for q, want in zip(qs, truth, strict=True):
        started = time.perf_counter()
        got = query(handle, q)
        times.append(time.perf_counter() - started)
        overlap.append(len({n for n, _ in got} & want) / max(1, len(want)))
    close(handle)
    p50 = statistics.median(times)
    return {"cold_ms": cold * 1000, "load_ms": max(0.0, cold - p50) * 1000,
            "p50_ms": p50 * 1000, "p95_ms": percentile(times, 0.95) * 1000,
            "recall10": statistics.mean(overlap)}


def numpy_import_ms() -> float:
    code = "import time; t = time.perf_counter(); import numpy; print(time.perf_counter() - t)"
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout) for _ in range(3)]
    return statistics.median(runs) * 1000


def run_size(size: int, args: argparse.Namespace, work: Path) -> dict[str, dict[str, float]]:

    keys, vecs = corpus(size, args.dim)
    qs = queries(args.queries, args.dim)
    truth = [exact(keys, vecs, q) for q in qs]
    out: dict[str, dict[str, float]] = {}

    def record(name: str, path: Path, insert: float, figures: dict[str, float]) -> None:
        figures["insert_s"] = insert
        figures["mb_per_10k"] = os.path.getsize(path) / 1e6 * 10_000 / size
        out[name] = figures

    blobs = work / f"blobs-{size}.sqlite"
    insert = blob_insert(blobs, keys, vecs)
    few = args.loop_queries
    record("loop", blobs, insert, measure(
        lambda: sqlite3.connect(blobs), lambda c, q: loop_query(c, q.tolist()),
        lambda c: c.close(), qs[:few], truth[:few]))
    record("numpy", blobs, insert, measure(
        lambda: NumpyScan(sqlite3.connect(blobs), args.dim), lambda s, q: s.query(q),
        lambda s: s.conn.close(), qs, truth))
    shipped = work / f"store-{size}.sqlite"
    insert = store_insert(shipped, keys, vecs)
    record("store", shipped, insert, measure(
        lambda: SqliteStore(shipped, Analyzer(["en"])),
        lambda s, q: s.nearest_vectors(MODEL, q.tolist(), LIMIT), lambda s: s.close(), qs,
        truth))
    if not vec_available():
        path = work / f"vec-{size}.sqlite"
        insert = vec_insert(path, keys, vecs)
        record("sqlite-vec", path, insert, measure(
            lambda: vec_connect(path), vec_query, lambda c: c.close(), qs, truth))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--loop-queries", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results: dict[str, Any] = {"numpy_import_ms": numpy_import_ms(), "sizes": {}}
    print(f"import numpy in a fresh interpreter: {results['numpy_import_ms']:.0f} ms")
    if (why := vec_available()):
        print(f"sqlite-vec: {why}")
    print(f"{'size':>7} {'method':<10} {'insert s':>8} {'load ms':>8} {'p50 ms':>7} "
          f"{'p95 ms':>7} {'cold ms':>8} {'MB/10k':>7} {'top10':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            figures = run_size(size, args, Path(tmp))
            results["sizes"][size] = figures
            for name, f in figures.items():
                print(f"{size:>7} {name:<10} {f['insert_s']:>8.2f} {f['load_ms']:>8.1f} "
                      f"{f['p50_ms']:>7.2f} {f['p95_ms']:>7.2f} {f['cold_ms']:>8.1f} "
                      f"{f['mb_per_10k']:>7.1f} {f['recall10']:>6.2f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
