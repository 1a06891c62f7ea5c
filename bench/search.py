"""Search speed at 1k, 10k and 100k nodes: real code (Django 5.1.4) plus generated notes.

    python bench/search.py [--sizes 1k,10k,100k] [--queries 200] [--processes 30] [--fresh]
                           [--json OUT] [--profile]

Corpora (built once under /tmp/loremap-bench-corpora/search-<size>-v1, `--fresh` rebuilds):
  - 1k: a slice of Django (django/db, core, http, utils: ~320 file and module nodes) plus notes;
  - 10k and 100k: the whole Django sdist (~3,500 file and module nodes) plus notes.
Notes read like lore: the six working types, titles made from a symbol of the note's files and
words of its body, bodies of 30-150 words cut from Django's own documentation (real English with
a real long tail) with the symbols and paths of the note's files mixed in, 1-3 files each
(central files more often), a third linked to an earlier note, ~3% superseding one.
The files are written directly and indexed by one `rebuild()`, which drops the code map, so
the code is indexed again after it.

Queries (seeded, ~200 per size): questions made from note titles, phrases from the docs,
identifiers (class names, paths, dotted modules, `Class.method`), pasted tracebacks with an
issue text (~300 words) and off-topic questions that should abstain.

Measured warm: after a pass of as many other questions (another seed, the same kinds), each
question asked once, as a warm process (the daemon, the MCP server) meets a new prompt. Kept
reads (the store's edges and document counts, the analyzer's cache) hold what the other
questions left, never this question's own. Each path is timed on an App of its own, warmed
the same way:
  - `engine.recall` (what the CLI, hook and MCP run) and `engine.rank(render_items=False)`
    (the evaluation path), p50/p95/max;
  - the baseline in the same run: one FTS5 statement ranking the same terms by bm25() (an OR
    query, its best `pool` rows), so the figures read "hybrid costs X times a bare FTS query"
    (the store's own text search keeps each term's scores once read, so it is not a baseline);
  - at 10k, whole `loremap search` processes vs `python -c pass` (interpreter start);
  - growth: time ratios between sizes next to the node-count ratios.
Targets (informative, exit 0): p50 <= 10 ms and p95 <= 30 ms at 10k; p95 <= 50 ms at 100k;
cost growing sub-linearly with the index. Machines are shared and noisy: read medians and ratios.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any, NamedTuple

from codemap import fetch_django
from loremap.app import App, init_project
from loremap.git import blob_hash
from loremap.model import Link, Note, NoteType, Relation, Source, Status
from loremap.model.search import TextQuery
from loremap.search import Engine, Request
from loremap.store.sqlite.search import fts_match
from loremap.use.fresh import ALWAYS
from loremap.use.recall import prepare
from loremap.vault.frontmatter import render_note
from loremap.vault.ids import new_id
from vault import percentile, time_process

CACHE = Path(tempfile.gettempdir()) / "loremap-bench-corpora"
VERSION = "v1"  # bump when what goes into a cached corpus changes
SIZES = {"1k": 1_000, "10k": 10_000, "100k": 100_000}
SLICE = ("django/db", "django/core", "django/http", "django/utils")  # the code of the 1k corpus
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_']{0,29}")
STOP = frozenset(
    "about above after again their there these those which while where would could should "
    "other being since until using without within every first never always often".split())
TYPES = {"bug": 3, "gotcha": 3, "decision": 2, "concept": 2, "procedure": 1, "error": 1}
TITLES = {
    "bug": ("{sym} {a} {b} twice when {c}", "{sym} fails on {a} {b}",
            "{a} {b} lost after {sym} {c}"),
    "gotcha": ("{sym} ignores {a} {b}", "{a} in {sym} needs {b} first",
               "Do not call {sym} before {a} {b}"),
    "decision": ("Use {a} {b} instead of {sym}", "Keep {sym} for {a} {b}",
                 "{a} {b} goes through {sym}"),
    "concept": ("How {sym} handles {a} {b}", "{sym} and the {a} {b}",
                "What {a} {b} means for {sym}"),
    "procedure": ("Add a {a} {b} to {sym}", "Run {a} {b} before {sym}",
                  "Migrate {a} {b} off {sym}"),
    "error": ("{err} from {sym} on {a} {b}", "{err} when {a} {b} in {sym}"),
}
ASKS = ("why does {}", "how do we handle {}", "what was decided about {}", "{}",
        "is there a known problem with {}", "{} again?")
OFF_TOPIC = ("banana bread recipe", "best hiking trails near Lisbon", "how tall is Mount Everest",
             "lyrics of a famous sea shanty", "train timetable Paris to Lyon tomorrow",
             "how to knit a winter scarf", "who won the football world cup in 1966",
             "cheap flights to Tokyo in spring", "how long to boil an egg",
             "symptoms of a cold in cats")


# --- corpus ---------------------------------------------------------------------------------


class Code(NamedTuple):
    """What notes and queries are made of: the indexed files (with their PageRank), the
    symbols per file, exception names and the words of Django's documentation."""

    files: list[str]
    ranks: list[float]
    symbols: dict[str, list[tuple[str, str]]]  # file -> (name, kind)
    errors: list[str]
    words: list[str]


def docs_words(django: Path) -> list[str]:
    words: list[str] = []
    for path in sorted((django / "docs").rglob("*.txt")):
        words += WORD.findall(path.read_text(encoding="utf-8", errors="replace"))
    return words


def read_code(root: Path, words: list[str]) -> Code:
    with closing(sqlite3.connect(f"file:{root / '.loremap' / 'index.sqlite'}?mode=ro",
                                 uri=True)) as db:
        rows = db.execute("SELECT path, rank FROM files WHERE language IS NOT NULL AND skip IS "
                          "NULL AND path LIKE '%.py' ORDER BY path").fetchall()
        symbols: dict[str, list[tuple[str, str]]] = {}
        for file, name, kind in db.execute("SELECT file, name, kind FROM symbols WHERE kind IN "
                                           "('class', 'function', 'method') ORDER BY file, line"):
            symbols.setdefault(file, []).append((name, kind))
    errors = sorted({n for pairs in symbols.values() for n, k in pairs
                     if k == "class" and n.endswith(("Error", "Exception"))}) or ["ValueError"]
    return Code([p for p, _ in rows], [r for _, r in rows], symbols, errors, words)


class Lore:
    """Generates notes about the files of `code`, deterministically from `rng`."""

    def __init__(self, rng: random.Random, code: Code, root: Path) -> None:
        self.rng, self.code, self.root = rng, code, root
        mean = statistics.fmean(code.ranks) if code.ranks else 1.0
        # Central files attract more notes, but every file can get some.
        self.cum_weights = list(itertools.accumulate(r + mean for r in code.ranks))
        self.hashes: dict[str, str | None] = {}
        self.by_file: dict[str, list[int]] = {}
        self.taken: set[str] = set()

    def window(self, n: int) -> list[str]:
        start = self.rng.randrange(len(self.code.words) - n)
        return self.code.words[start:start + n]

    def symbol(self, path: str) -> str:
        pairs = self.code.symbols.get(path)
        return self.rng.choice(pairs)[0] if pairs else Path(path).stem

    def note(self, notes: list[Note], day: dt.date) -> Note:
        rng = self.rng
        kind = rng.choices(list(TYPES), list(TYPES.values()))[0]
        files = tuple(dict.fromkeys(rng.choices(self.code.files, cum_weights=self.cum_weights,
                                                k=rng.choice((1, 1, 1, 2, 2, 3)))))
        sym = self.symbol(files[0])
        words = self.window(rng.randint(30, 150))
        content = [w for w in words if len(w) >= 5 and w.islower() and w not in STOP] or ["data"]
        a, b, c = rng.choices(content, k=3)
        title = rng.choice(TITLES[kind]).format(sym=sym, a=a, b=b, c=c,
                                                err=rng.choice(self.code.errors))
        note_id = new_id(NoteType(kind), title, self.taken.__contains__)
        self.taken.add(note_id)
        for name in (sym, self.symbol(rng.choice(files)), f"`{files[0]}`"):
            words.insert(rng.randrange(len(words)), name)
        links: list[Link] = []
        earlier = self.by_file.get(files[0], [])
        if notes and rng.random() < 0.33:
            target = notes[rng.choice(earlier)] if earlier else rng.choice(notes)
            rel = rng.choice(("relates", "causes", "fixes", "depends_on", "part_of"))
            links.append(Link(Relation(rel), target.id))
        for path in files:
            if path not in self.hashes:
                self.hashes[path] = blob_hash(self.root / path)
        return Note(
            id=note_id, type=NoteType(kind), title=" ".join(title.split()),
            body=words[0][:1].upper() + " ".join(words)[1:] + ".", files=files,
            links=tuple(links),
            tags=(files[0].split("/")[1] if files[0].count("/") > 1 else "core",),
            recorded_at=f"{day.isoformat()}T10:00:00Z", valid_from=day.isoformat(),
            file_hashes={p: h for p in files if (h := self.hashes[p]) is not None},
            source=Source.HUMAN if rng.random() < 0.2 else Source.AGENT)

    def notes(self, count: int) -> list[Note]:
        notes: list[Note] = []
        first = dt.date(2023, 1, 1)
        for i in range(count):
            day = first + dt.timedelta(days=i * 1000 // max(count, 1))
            note = self.note(notes, day)
            earlier = self.by_file.setdefault(note.files[0], [])
            if earlier and self.rng.random() < 0.03:
                old = self.rng.choice(earlier)
                if notes[old].status is Status.ACTIVE:
                    note = note._replace(supersedes=notes[old].id)
                    notes[old] = notes[old]._replace(status=Status.SUPERSEDED,
                                                     superseded_by=note.id,
                                                     valid_to=day.isoformat())
            earlier.append(len(notes))
            notes.append(note)
        return notes


def write_notes(notes_dir: Path, notes: list[Note]) -> None:
    """One plain write per note: no lock, no fsync (the index is rebuilt from them next)."""
    # An mtime in the past: files written "just now" are racy and would be re-hashed later.
    past = time.time_ns() - 86_400 * 10**9
    for note in notes:
        path = notes_dir / f"{note.id}.md"
        path.write_bytes(render_note(note)[0].encode("utf-8"))
        os.utime(path, ns=(past, past))


def copy_code(django: Path, root: Path, size: str) -> None:
    if size != "1k":
        shutil.copytree(django, root, symlinks=True)
        return
    for part in SLICE:
        shutil.copytree(django / part, root / part, symlinks=True)
    shutil.copy2(django / "django" / "__init__.py", root / "django" / "__init__.py")


def build(size: str, django: Path, words: list[str], cache: Path) -> dict[str, Any]:
    """Build the corpus of `size` at its cache path; returns the seconds of each step."""
    root = cache / f"search-{size}-{VERSION}"
    shutil.rmtree(root, ignore_errors=True)
    steps: dict[str, Any] = {}

    def step(name: str, action: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        out = action()
        steps[name] = round(time.perf_counter() - start, 2)
        return out

    step("copy code", lambda: copy_code(django, root, size))
    app, _ = init_project(root)
    step("code map", app.index_code)
    code_nodes = app.store.node_count()
    code = read_code(root, words)
    count = max(0, SIZES[size] - code_nodes)
    notes = step("generate notes", lambda: Lore(random.Random(size), code, root).notes(count))
    assert app.memory.project is not None
    step("write notes", lambda: write_notes(app.memory.project.notes_dir, notes))
    # rebuild() drops the whole index, code map included: the code is indexed again after it.
    step("rebuild (notes)", app.memory.rebuild)
    step("code map again", app.index_code)
    prepare(app, ALWAYS)  # records the vault's stat signature, as a first search would
    app.close()
    steps["notes"] = count
    marker = {"schema": schema_digest(), "steps": steps}
    (root / ".built").write_text(json.dumps(marker), encoding="utf-8")
    return steps


def schema_digest() -> str:
    """A digest of the index schema's source: a cached corpus built under another schema (a
    migration edited in place, say) is rebuilt, not opened half-migrated."""
    import hashlib

    from loremap.store.sqlite import schema

    return hashlib.sha1(Path(schema.__file__).read_bytes(), usedforsecurity=False).hexdigest()


def corpus(size: str, django: Path, words: list[str], cache: Path, fresh: bool
           ) -> tuple[Path, dict[str, Any], bool]:
    root = cache / f"search-{size}-{VERSION}"
    marker = root / ".built"
    built = json.loads(marker.read_text(encoding="utf-8")) if marker.exists() else {}
    if not fresh and built.get("schema") == schema_digest():
        return root, built["steps"], True
    return root, build(size, django, words, cache), False


# --- queries --------------------------------------------------------------------------------


def traceback(rng: random.Random, code: Code) -> str:
    """An issue as pasted: a few sentences, then a traceback through real files, ~300 words."""
    frames = []
    for path in rng.sample(code.files, 8):
        name = next((n for n, k in code.symbols.get(path, []) if k != "class"), "handle")
        frames.append(f'  File "/srv/app/.venv/lib/python3.11/site-packages/{path}", line '
                      f"{rng.randint(20, 900)}, in {name}\n    {' '.join(words(rng, code, 6))}")
    intro = " ".join(words(rng, code, 180))
    error = rng.choice(code.errors)
    return (f"After upgrading to Django 5.1 this started failing. {intro}\n\nTraceback (most "
            "recent call last):\n" + "\n".join(frames) +
            f"\n{error}: {' '.join(words(rng, code, 10))}")


def words(rng: random.Random, code: Code, n: int) -> list[str]:
    start = rng.randrange(len(code.words) - n)
    return code.words[start:start + n]


def identifier(rng: random.Random, code: Code) -> str:
    path = rng.choice(code.files)
    pairs = code.symbols.get(path) or [(Path(path).stem, "function")]
    name, kind = rng.choice(pairs)
    classes = [n for n, k in pairs if k == "class"]
    choices = [
        lambda: f"where is {rng.choice(classes or [name])} defined",
        lambda: f"`{name}()` returns the wrong value",
        lambda: path,
        lambda: f"what does {path.removesuffix('.py').replace('/', '.')} do",
        lambda: f"{rng.choice(classes or [name])}.{name} {rng.choice(code.words)}",
        lambda: rng.choice(classes or [name]),
    ]
    return rng.choice(choices)()


def make_queries(rng: random.Random, code: Code, titles: list[str], n: int
                 ) -> list[tuple[str, str]]:
    """(kind, query) pairs: 40% titles, 15% doc phrases, 30% identifiers, 7% pasted issues,
    8% off-topic, shuffled."""
    out: list[tuple[str, str]] = []
    for i in range(n):
        pick = rng.random()
        if pick < 0.40 and titles:
            title = rng.choice(titles).split()
            part = " ".join(rng.sample(title, min(len(title), rng.randint(2, 4))))
            out.append(("title", rng.choice(ASKS).format(part)))
        elif pick < 0.55:
            out.append(("phrase", " ".join(words(rng, code, rng.randint(1, 8)))))
        elif pick < 0.85:
            out.append(("identifier", identifier(rng, code)))
        elif pick < 0.92:
            out.append(("pasted", traceback(rng, code)))
        else:
            out.append(("off-topic", OFF_TOPIC[i % len(OFF_TOPIC)]))
    return out


def queries_for(root: Path, words_: list[str], size: str, n: int, seed: str = "queries"
                ) -> list[tuple[str, str]]:
    code = read_code(root, words_)
    with closing(sqlite3.connect(f"file:{root / '.loremap' / 'index.sqlite'}?mode=ro",
                                 uri=True)) as db:
        titles = [t for (t,) in db.execute(
            "SELECT title FROM nodes WHERE kind = 'note' AND status = 'active' ORDER BY id")]
    return make_queries(random.Random(f"{seed}-{size}"), code, titles, n)


# --- measuring ------------------------------------------------------------------------------


class Timed(NamedTuple):
    recall: list[float]
    rank: list[float]
    bm25: list[float]
    kinds: list[str]
    abstained: list[bool]


def bm25_match(engine: Engine, query: str) -> TextQuery | None:
    """The text query `Engine._bm25` would run for `query` (None: it runs none)."""
    terms = engine.analyse(Request(query)).terms
    return TextQuery(terms, (1,) * len(terms)) if terms else None


def bare_bm25(engine: Engine, match: TextQuery) -> list[tuple[int, float]]:
    """One FTS5 statement: the best `pool` rows of `match` (an OR query) by bm25()."""
    weights = ", ".join(repr(float(w)) for w in engine.config.weights)
    return engine.store.conn.execute(  # type: ignore[attr-defined,no-any-return]
        f"SELECT rowid, bm25(fts, {weights}) AS score FROM fts WHERE fts MATCH ? "
        "ORDER BY score LIMIT ?", (fts_match(match), engine.config.pool)).fetchall()


def one_pass(engine: Engine, queries: list[tuple[str, str]],
             matches: list[TextQuery | None] | None = None) -> Timed:
    """Each question through `engine.recall`; with `matches`, through `engine.rank` and the
    bare FTS5 query instead (on another App: `rank` after `recall` of the same question would
    find its reads kept)."""
    out = Timed([], [], [], [], [])
    clock = time.perf_counter
    for i, (kind, query) in enumerate(queries):
        out.kinds.append(kind)
        if matches is None:
            start = clock()
            found = engine.recall(Request(query, budget=1500, limit=10))
            out.recall.append(clock() - start)
            out.abstained.append(found.abstained)
            continue
        start = clock()
        engine.rank(Request(query, budget=None, limit=50), render_items=False)
        out.rank.append(clock() - start)
        if matches[i] is not None:
            start = clock()
            bare_bm25(engine, matches[i])
            out.bm25.append(clock() - start)
    return out


def warmed(root: Path, warm: list[tuple[str, str]]) -> App:
    """An App that has answered the `warm` questions (page cache, analyzer cache, the store's
    kept reads), none of the timed ones."""
    app = App.open(cwd=root)
    prepare(app, ALWAYS)
    one_pass(app.engine(), warm)
    return app


def stats(values: list[float]) -> dict[str, float]:
    return {"p50": statistics.median(values) * 1000, "p95": percentile(values, 0.95) * 1000,
            "max": max(values) * 1000}


def counts(root: Path) -> dict[str, int]:
    index = root / ".loremap" / "index.sqlite"
    with closing(sqlite3.connect(f"file:{index}?mode=ro", uri=True)) as db:
        kinds = dict(db.execute("SELECT kind, count(*) FROM nodes GROUP BY kind").fetchall())
        edges = db.execute("SELECT count(*) FROM edges").fetchone()[0]
    wal = Path(f"{index}-wal")
    size = index.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    return {"nodes": sum(kinds.values()), "notes": kinds.get("note", 0),
            "code": sum(v for k, v in kinds.items() if k != "note"), "edges": edges,
            "index_bytes": size}


def profile(engine: Engine, queries: list[tuple[str, str]]) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _, query in queries:
        engine.recall(Request(query, budget=1500, limit=10))
    profiler.disable()
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(15)


def bench_size(size: str, root: Path, queries: list[tuple[str, str]],
               warm: list[tuple[str, str]], want_profile: bool) -> dict[str, Any]:
    app = warmed(root, warm)
    try:
        engine = app.engine()
        timed = one_pass(engine, queries)
        matches = [bm25_match(engine, q) for _, q in queries]
        if want_profile:
            print(f"  cProfile of engine.recall over the {len(queries)} queries at {size} "
                  "(asked a second time):")
            profile(engine, queries)
    finally:
        app.close()
    app = warmed(root, warm)
    try:
        paths = one_pass(app.engine(), queries, matches)
    finally:
        app.close()
    kinds = sorted(set(timed.kinds), key=timed.kinds.index)
    return {"recall": stats(timed.recall), "rank": stats(paths.rank), "bm25": stats(paths.bm25),
            "bm25_queries": len(paths.bm25),
            "recall_by_kind": {k: statistics.median(
                [t for t, kk in zip(timed.recall, timed.kinds, strict=True) if kk == k]) * 1000
                for k in kinds},
            "kind_counts": {k: timed.kinds.count(k) for k in kinds},
            "abstained": sum(timed.abstained),
            "off_topic_abstained": sum(a for a, k in zip(timed.abstained, timed.kinds,
                                                         strict=True) if k == "off-topic")}


def bench_processes(root: Path, queries: list[tuple[str, str]], runs: int, home: Path
                    ) -> dict[str, float]:
    script = Path(sys.executable).parent / "loremap"
    loremap = [str(script)] if script.exists() else [sys.executable, "-m", "loremap"]
    os.environ["LOREMAP_HOME"] = str(home)  # time_process passes the environment on
    base = time_process([sys.executable, "-c", "pass"], root, runs)
    searches: list[float] = []
    for _, query in queries[:runs]:
        searches += time_process([*loremap, "search", query], root, 1)
    return {"base_p50": statistics.median(base) * 1000,
            "search_p50": statistics.median(searches) * 1000,
            "search_p95": percentile(searches, 0.95) * 1000}


# --- report ---------------------------------------------------------------------------------


def verdict(value: float, limit: float) -> str:
    return f"{'PASS' if value <= limit else 'MISS'} (<= {limit:g} ms)"


def show(size: str, info: dict[str, int], steps: dict[str, Any], cached: bool,
         r: dict[str, Any]) -> None:
    build_s = sum(v for k, v in steps.items() if k != "notes")
    parts = ", ".join(f"{k} {v:.1f} s" for k, v in steps.items() if k != "notes")
    print(f"{size}: {info['nodes']:,} nodes ({info['code']:,} code + {info['notes']:,} notes), "
          f"{info['edges']:,} edges, index {info['index_bytes'] / 2**20:.0f} MB")
    print(f"  build {'(cached) ' if cached else ''}{build_s:.1f} s: {parts}")
    b50 = r["bm25"]["p50"]
    for name, label in (("recall", "engine.recall"), ("rank", "engine.rank (no render)"),
                        ("bm25", "bare FTS5 bm25 (baseline)")):
        s = r[name]
        ratio = "" if name == "bm25" else f"   {s['p50'] / b50:4.1f}x bm25 p50"
        print(f"  {label:27} p50 {s['p50']:6.2f}  p95 {s['p95']:6.2f}  max {s['max']:7.2f} ms"
              f"{ratio}")
    by_kind = ", ".join(f"{k} {v:.1f} ({r['kind_counts'][k]})"
                        for k, v in r["recall_by_kind"].items())
    print(f"  recall p50 by query kind, ms (count): {by_kind}")
    print(f"  abstained {r['abstained']} of {sum(r['kind_counts'].values())} "
          f"(off-topic: {r['off_topic_abstained']} of {r['kind_counts'].get('off-topic', 0)}); "
          f"bm25 ran for {r['bm25_queries']}")


def summary(results: dict[str, dict[str, Any]], infos: dict[str, dict[str, int]]) -> None:
    if "10k" in results:
        s = results["10k"]["recall"]
        print(f"target 10k recall p50 {s['p50']:.2f} ms: {verdict(s['p50'], 10)}; "
              f"p95 {s['p95']:.2f} ms: {verdict(s['p95'], 30)}")
    if "100k" in results:
        s = results["100k"]["recall"]
        print(f"target 100k recall p95 {s['p95']:.2f} ms: {verdict(s['p95'], 50)}")
    sizes = [s for s in SIZES if s in results]
    for small, big in zip(sizes, sizes[1:], strict=False):
        node_ratio = infos[big]["nodes"] / infos[small]["nodes"]
        line = ", ".join(
            f"{name} {results[big][name]['p50'] / results[small][name]['p50']:.2f}x"
            for name in ("recall", "rank", "bm25"))
        print(f"growth {small} -> {big}: nodes {node_ratio:.1f}x; p50 {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1k,10k,100k")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--processes", type=int, default=30)
    parser.add_argument("--fresh", action="store_true", help="rebuild the cached corpora")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--profile", action="store_true",
                        help="print a cProfile of engine.recall per size (top 15 cumulative)")
    args = parser.parse_args()
    sizes = [s.strip() for s in args.sizes.split(",")]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        parser.error(f"unknown size {unknown[0]!r}: use {', '.join(SIZES)}")
    import compileall

    import loremap

    # Installed packages run from bytecode; with PYTHONDONTWRITEBYTECODE set, compile ours so
    # the whole-process figures measure what users get, not the compiler.
    compileall.compile_dir(str(Path(loremap.__file__).parent), quiet=1)
    CACHE.mkdir(parents=True, exist_ok=True)
    django = fetch_django(CACHE)
    words_ = docs_words(django)
    results: dict[str, dict[str, Any]] = {}
    infos: dict[str, dict[str, int]] = {}
    report: dict[str, Any] = {"python": sys.version.split()[0], "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="loremap-search-bench-") as tmp:
        os.environ["LOREMAP_HOME"] = str(Path(tmp) / "home")  # an empty personal vault
        print(f"loremap bench/search.py — Python {report['python']}, {report['cpus']} CPUs, "
              f"{args.queries} queries per size, times warm")
        for size in sizes:
            root, steps, cached = corpus(size, django, words_, CACHE, args.fresh)
            queries = queries_for(root, words_, size, args.queries)
            warm = queries_for(root, words_, size, args.queries, seed="warm")
            results[size] = bench_size(size, root, queries, warm, args.profile)
            infos[size] = counts(root)
            show(size, infos[size], steps, cached, results[size])
            report[size] = {**results[size], **infos[size], "build": steps, "cached": cached}
            if size == "10k":
                p = bench_processes(root, queries, args.processes, Path(tmp) / "home")
                report["process"] = p
                print(f"  whole `loremap search` process p50 {p['search_p50']:.0f} ms, p95 "
                      f"{p['search_p95']:.0f} ms ({args.processes} runs); `python -c pass` "
                      f"p50 {p['base_p50']:.0f} ms -> "
                      f"{p['search_p50'] - p['base_p50']:.0f} ms over interpreter start "
                      f"({p['search_p50'] / p['base_p50']:.1f}x)")
        summary(results, infos)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
