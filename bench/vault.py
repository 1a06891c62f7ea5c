"""Vault and index speed: write 10,000 notes, rebuild the index, search.

    python bench/vault.py [--notes 10000] [--queries 200] [--processes 30]

Prints each figure next to a baseline measured in the same run on the same machine (these
machines are shared and noisy: read the ratios and the medians):
  - writes: loremap.remember (lock, id, secret scan, fsync'ed atomic file, index transaction)
    vs a bare write of the same bytes with fsync (the durability floor);
  - rebuild: `loremap reindex` of every note vs reading and YAML-parsing the same files
    (the parse floor); target <= 5 s for 10k notes;
  - search in process: the engine's recall p50/p95;
  - whole `loremap search` process p50/p95 vs `python -c pass` (interpreter start);
    target p50 <= 150 ms; `loremap --version` target <= 100 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from loremap.app import init_project
from loremap.memory.drafts import Draft

WORDS = (
    "cart checkout coupon discount invoice tax rounding total subtotal payment refund order "
    "session cookie token jwt login logout auth password reset email queue worker retry "
    "timeout cache redis postgres migration index schema column constraint transaction lock "
    "deadlock latency request response handler middleware router controller service "
    "repository model view template render component state hook effect reducer store "
    "webhook stripe currency locale timezone date parser serializer validation error "
    "exception stacktrace log metric trace span deploy build release rollback feature flag "
    "config env secret vault kubernetes docker image container pod node cluster cron job "
    "scheduler backoff idempotent duplicate race condition flaky test fixture mock snapshot"
).split()
TYPES = ("decision", "bug", "gotcha", "concept", "procedure", "error")
SYLLABLES = "ka lo mi ne ru sa ti vo ze bra cle dri fla gro plu sta tre".split()


def vocabulary(rng: random.Random, size: int = 6000) -> tuple[list[str], list[float]]:
    """The domain words first, then made-up identifiers, with Zipf weights (s = 1.1).

    Real notes share a few common words and a long tail of rare ones; a corpus drawn uniformly
    from a hundred words would make every query match most notes, which no project does.
    """
    words = list(WORDS)
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if rng.random() < 0.3:
            word += rng.choice(("Service", "Handler", "_id", "Error", "Config"))
        if word not in seen:
            seen.add(word)
            words.append(word)
    weights = [1 / (rank ** 1.1) for rank in range(1, len(words) + 1)]
    return words, weights


def sentence(rng: random.Random, n: int, vocab: tuple[list[str], list[float]] | None = None
             ) -> str:
    words, weights = vocab or VOCAB
    return " ".join(rng.choices(words, weights, k=n))


VOCAB = vocabulary(random.Random(7))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def time_process(cmd: list[str], cwd: Path, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def bench_writes(app, rng: random.Random, count: int, scratch: Path) -> None:
    drafts = [Draft(type=rng.choice(TYPES), title=sentence(rng, 6).capitalize(),
                    body=sentence(rng, 120), tags=(rng.choice(WORDS),)) for _ in range(count)]
    start = time.perf_counter()
    for draft in drafts:
        app.memory.remember(draft)
    ours = time.perf_counter() - start
    sample = next(iter(app.memory.project.notes_dir.glob("*.md"))).read_bytes()
    start = time.perf_counter()
    for i in range(count):
        with open(scratch / f"{i}.md", "wb") as fh:
            fh.write(sample)
            fh.flush()
            os.fsync(fh.fileno())
    floor = time.perf_counter() - start
    print(f"write   {count} notes: {count / ours:,.0f} notes/s ({ms(ours / count)} each); "
          f"bare fsync'ed write of the same bytes: {count / floor:,.0f} files/s "
          f"-> {ours / floor:.1f}x the durability floor")


def bench_rebuild(app) -> None:
    import yaml

    files = sorted(app.memory.project.notes_dir.glob("*.md"))
    start = time.perf_counter()
    for path in files:
        text = path.read_text(encoding="utf-8")
        yaml.load(text.split("---\n", 2)[1], Loader=yaml.CSafeLoader)
    floor = time.perf_counter() - start
    start = time.perf_counter()
    out = app.memory.rebuild()
    ours = time.perf_counter() - start
    verdict = "meets" if ours <= 5.0 else "MISSES"
    print(f"rebuild {out.counts['indexed']} notes: {ours:.2f} s ({verdict} the 5 s target); "
          f"read + YAML-parse floor: {floor:.2f} s -> {ours / floor:.1f}x")


def bench_search(app, rng: random.Random, queries: int) -> list[str]:
    from loremap.search import Request

    texts = [sentence(rng, rng.randint(2, 8)) for _ in range(queries)]
    engine = app.engine()
    times = []
    for text in texts:
        start = time.perf_counter()
        engine.recall(Request(text))
        times.append(time.perf_counter() - start)
    print(f"search  in process (recall), {queries} queries: p50 {ms(percentile(times, 0.5))}, "
          f"p95 {ms(percentile(times, 0.95))}")
    return texts


def bench_processes(root: Path, texts: list[str], runs: int) -> None:
    # Installed packages run from compiled bytecode; compile ours so that a session with
    # PYTHONDONTWRITEBYTECODE set measures what users get, not the compiler.
    import compileall

    import loremap as package

    compileall.compile_dir(str(Path(package.__file__).parent), quiet=1)
    loremap = [sys.executable, "-m", "loremap"]
    base = time_process([sys.executable, "-c", "pass"], root, runs)
    version = time_process([*loremap, "--version"], root, runs)
    searches = []
    for text in texts[:runs]:
        searches += time_process([*loremap, "search", text], root, 1)
    b50 = statistics.median(base)
    s50, v50 = statistics.median(searches), statistics.median(version)
    print(f"process `python -c pass` (baseline): p50 {ms(b50)}, p95 {ms(percentile(base, .95))}")
    print(f"process `loremap --version`: p50 {ms(v50)}, p95 {ms(percentile(version, .95))} "
          f"({'meets' if v50 <= 0.100 else 'MISSES'} the 100 ms target; {v50 / b50:.1f}x "
          "baseline)")
    print(f"process `loremap search`: p50 {ms(s50)}, p95 {ms(percentile(searches, .95))} "
          f"({'meets' if s50 <= 0.150 else 'MISSES'} the 150 ms target; {s50 / b50:.1f}x "
          "baseline)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--processes", type=int, default=30)
    args = parser.parse_args()
    rng = random.Random(42)
    with tempfile.TemporaryDirectory(prefix="loremap-bench-") as tmp:
        root, scratch = Path(tmp) / "repo", Path(tmp) / "scratch"
        root.mkdir()
        scratch.mkdir()
        os.environ["LOREMAP_HOME"] = str(Path(tmp) / "home")
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        app, _ = init_project(root)
        print(f"loremap bench/vault.py — {args.notes} notes, Python {sys.version.split()[0]}, "
              f"{os.cpu_count()} CPUs")
        bench_writes(app, rng, args.notes, scratch)
        bench_rebuild(app)
        texts = bench_search(app, rng, args.queries)
        app.close()
        bench_processes(root, texts, args.processes)


if __name__ == "__main__":
    main()
