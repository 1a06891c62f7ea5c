"""What vectors cost: loading a model, embedding a query, embedding a project, storing the
vectors, and a recall with them, each next to a baseline measured in the same run.

    python bench/embed.py [--embedder local] [--size 10k] [--queries 100] [--sample 400]
                          [--json OUT]

The corpus is bench/search.py's (real Django code plus generated notes, built once under
/tmp/loremap-bench-corpora); it is copied to a scratch folder and every node is embedded.
Measured:
  - model load in process (numpy already imported) and as a whole process that loads it and
    embeds one query, next to `python -c pass`;
  - query embedding p50/p95, warm, on the bench's questions (one BLAS thread: the default);
  - embedding a sample of the corpus's nodes for real (`loremap reembed`'s work, files read
    from the working tree): nodes/s and windows/s on one core, the time all nodes would take,
    and the index file's growth per 10k vectors; the other nodes then get random unit vectors
    (a scan's cost does not depend on the values);
  - `engine.recall` p50/p95 with vectors (query embedding included) next to the same engine
    without them, on the same questions, each engine on a connection of its own warmed on as
    many other questions (a store keeps the edges and word counts it read); with vectors three
    ways: the question embedded on a thread beside the text lists (a process answering one
    question), before them, and by a process of its own (the daemon, `embed/apart.py`).
Targets (informative, exit 0): recall p95 <= 30 ms at 10k nodes with vectors.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from codemap import fetch_django  # noqa: E402
from loremap.app import App  # noqa: E402
from loremap.embed import Watched  # noqa: E402
from loremap.search import Engine, Request  # noqa: E402
from loremap.search.engine import question_text  # noqa: E402
from loremap.store.sqlite import SqliteStore  # noqa: E402
from search import CACHE, corpus, docs_words, queries_for  # noqa: E402 (bench/search.py)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(values: list[float]) -> str:
    return (f"p50 {1000 * statistics.median(values):.1f} ms, "
            f"p95 {1000 * pct(values, 0.95):.1f} ms")


def disk(index: Path) -> int:
    """Bytes of the index file and its write-ahead log."""
    wal = index.with_name(index.name + "-wal")
    return index.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def whole_process(spec: str, runs: int) -> tuple[list[float], list[float]]:
    code = ("from loremap.embed import EmbedSettings, make_embedder; "
            "from loremap.text import Analyzer; from loremap.config import UserPaths; "
            f"make_embedder({spec!r}, Analyzer(['en']), "
            "EmbedSettings(UserPaths.from_env().models)).embed_query('how are notes written')")
    model, bare = [], []
    for _ in range(runs):
        for cmd, out in (([sys.executable, "-c", code], model),
                         ([sys.executable, "-c", "pass"], bare)):
            started = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            out.append(time.perf_counter() - started)
    return model, bare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--size", default="10k", choices=("1k", "10k", "100k"))
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--sample", type=int, default=400,
                        help="nodes embedded for real (the rest get random vectors)")
    parser.add_argument("--runs", type=int, default=5, help="whole processes timed")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures: dict[str, Any] = {"embedder": args.embedder, "size": args.size}
    print(f"loremap bench/embed.py — embedder {args.embedder}, corpus {args.size}; "
          f"Python {sys.version.split()[0]}")

    model_runs, bare_runs = whole_process(args.embedder, args.runs)
    figures["process"] = {"model_p50": statistics.median(model_runs),
                          "python_p50": statistics.median(bare_runs)}
    print(f"whole process loading the model and embedding one query: p50 "
          f"{1000 * statistics.median(model_runs):.0f} ms; `python -c pass` p50 "
          f"{1000 * statistics.median(bare_runs):.0f} ms "
          f"({statistics.median(model_runs) / statistics.median(bare_runs):.1f}x)")

    django = fetch_django(CACHE)
    words = docs_words(django)
    source = corpus(args.size, django, words, CACHE, fresh=False)[0]
    queries = [q for _, q in queries_for(source, words, args.size, args.queries)]
    warm = [q for _, q in queries_for(source, words, args.size, args.queries, seed="warm")]
    scratch = Path(tempfile.mkdtemp(prefix="loremap-embed-bench-"))
    try:
        root = scratch / "project"
        shutil.copytree(source, root, symlinks=True)
        figures.update(measure(root, queries, warm, args.embedder, args.sample))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")


def fill(store: Any, model: str, dim: int, read: Any) -> None:
    """Random unit vectors (seeded), one per window, for the nodes the sample left without
    them: a recall's cost does not depend on the values it scans, and embedding 10k nodes for
    real takes tens of minutes on one core (the figure above)."""
    import math
    import random

    from loremap.search.embed import windows

    rng = random.Random(7)
    while True:
        todo = store.missing_vectors(model, 1000)
        if not todo:
            return
        rows = []
        for node_id, pieces in windows(store, todo, read):
            for number in range(len(pieces)):
                vec = [rng.gauss(0.0, 1.0) for _ in range(dim)]
                norm = math.sqrt(sum(v * v for v in vec))
                rows.append((node_id, number, [v / norm for v in vec]))
        with store.write():
            store.put_vectors(model, dim, rows)


def measure(root: Path, queries: list[str], warm: list[str], spec: str, sample: int
            ) -> dict[str, Any]:
    import os

    from loremap.search.embed import embed_pending, windows
    from loremap.search.issue import looks_like_issue

    os.environ["LOREMAP_EMBEDDER"] = spec
    figures: dict[str, Any] = {}
    with App.open(root) as app:
        started = time.perf_counter()
        embedder = app.embedder()
        assert embedder is not None, app.take_notices()
        embedder.embed_query("warm up")
        load = time.perf_counter() - started
        print(f"model load in process: {1000 * load:.0f} ms")
        timed = []
        for query in queries:
            started = time.perf_counter()
            embedder.embed_query(query)
            timed.append(time.perf_counter() - started)
        print(f"query embedding ({len(queries)} questions, warm): {ms(timed)}")
        figures["query_embedding"] = {"p50": statistics.median(timed), "p95": pct(timed, 0.95)}

        store = app.store
        index = app.index_path
        size_before = disk(index)
        todo = store.missing_vectors(embedder.name, sample)
        read = app.source()
        pieces = sum(len(w) for _, w in windows(store, todo, read))
        started = time.perf_counter()
        done = embed_pending(store, embedder, most=sample, source=read)
        seconds = time.perf_counter() - started
        grown = disk(index) - size_before
        total = store.node_count()
        print(f"embedding {done} nodes ({pieces} windows, code read from the files) in "
              f"{seconds:.1f} s: {done / seconds:.1f} nodes/s, {pieces / seconds:.1f} windows/s "
              f"on one core; all {total} nodes would take ~{total / (done / seconds) / 60:.0f} "
              f"min; the index grew {grown / 2**20 * 10_000 / max(pieces, 1):.1f} MB per 10k "
              "vectors")
        figures["embedding"] = {"nodes": done, "windows": pieces, "seconds": seconds,
                                "mb_per_10k_vectors": grown / 2**20 * 10_000 / max(pieces, 1)}
        fill(store, embedder.name, len(embedder.embed_query("x")), read)
        # Three connections, each warmed on other questions: a store keeps the edges and word
        # counts it read (store/sqlite/search.py), so a recall must not find what another
        # engine read for the same question.
        lexical = Engine(SqliteStore(index, app.memory.analyzer), app.memory.analyzer)
        vectors = app.engine()
        in_turn = Engine(SqliteStore(index, app.memory.analyzer), app.memory.analyzer,
                         vectors.config, embedder)
        # The daemon's way: the question embedded by a process of its own (embed/apart.py),
        # through an embedder of its own (an embedder keeps its last question's vector).
        assert isinstance(embedder, Watched)
        by_process = Watched(embedder.inner, [])
        by_process.query_apart(30.0)
        assert by_process.apart is not None and by_process.apart.wait_ready(120), \
            by_process.apart and by_process.apart.failure
        apart = Engine(SqliteStore(index, app.memory.analyzer), app.memory.analyzer,
                       vectors.config, by_process, None, app.source())
        assert isinstance(vectors, Engine)
        for engine in (lexical, vectors, in_turn, apart):
            for query in warm:
                engine.recall(Request(query))
        timing: dict[str, list[float]] = {"lexical": [], "vectors": [], "in turn": [],
                                          "apart": []}
        for query in queries:
            for name, engine in (("lexical", lexical), ("vectors", vectors), ("apart", apart)):
                started = time.perf_counter()
                engine.recall(Request(query))
                timing[name].append(time.perf_counter() - started)
            # The question embedded before the text lists instead of beside them (the
            # embedder keeps the last question's vector, so the recall's own thread finds it;
            # a pasted issue's text without its noise comes from analysing it, here twice).
            started = time.perf_counter()
            request = Request(query + " ")
            named = in_turn.analyse(request).named if looks_like_issue(query) else ""
            embedder.embed_query(question_text(request, named))
            in_turn.recall(request)
            timing["in turn"].append(time.perf_counter() - started)
        for engine in (lexical, in_turn, apart):
            engine.store.close()
        by_process.apart.close()
        ratio = statistics.median(timing["vectors"]) / statistics.median(timing["lexical"])
        print(f"recall at {store.node_count()} nodes, warm: with vectors {ms(timing['vectors'])}"
              f"; lexical {ms(timing['lexical'])} ({ratio:.2f}x); with vectors, the question "
              f"embedded before the text lists rather than beside them {ms(timing['in turn'])}; "
              f"with vectors, the question embedded by a process of its own (the daemon's way) "
              f"{ms(timing['apart'])}; target p95 <= 30 ms: "
              + ("met" if min(pct(timing[k], 0.95) for k in ("vectors", "apart")) <= 0.030
                 else "missed"))
        figures["recall"] = {k: {"p50": statistics.median(v), "p95": pct(v, 0.95)}
                             for k, v in timing.items()}
        # A pasted issue is embedded whole (the encoder's 256 word pieces), ten times a
        # question's cost: its figures apart from the questions'.
        pasted = [looks_like_issue(q) for q in queries]
        for label, keep in (("questions", False), ("pasted issues", True)):
            some = {k: [t for t, p in zip(v, pasted, strict=True) if p == keep]
                    for k, v in timing.items()}
            if some["lexical"]:
                print(f"  {label} ({len(some['lexical'])}): with vectors {ms(some['vectors'])}; "
                      f"by a process of its own {ms(some['apart'])}; "
                      f"lexical {ms(some['lexical'])}")
                figures["recall"][label] = {k: {"p50": statistics.median(v),
                                                "p95": pct(v, 0.95)} for k, v in some.items()}
    return figures


if __name__ == "__main__":
    main()
