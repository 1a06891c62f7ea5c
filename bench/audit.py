"""What the audit chain costs: on `remember`, on a bulk `sync push`, and `audit verify` at scale.

    python bench/audit.py [--writes 200] [--push 1000] [--rounds 4] [--records 100000]
                          [--url URL] [--only remember,push,verify]

Each figure is printed next to a baseline measured in the same run (the machines are shared and
noisy: read the medians and the ratios). Nothing here is a test: no time is asserted.

- remember (SQLite): the p50 of `Memory.remember` with the chain (one record appended to
  `.loremap/audit.sqlite` in its own fsync'ed transaction, committed right after the index's)
  against the same writes with the chain off (`memory.audit = None`, what this bench alone
  does), interleaved write by write so both see the same noise; and the append alone (one
  record into a chain file, p50).
- sync push (PostgreSQL: the embedded server, or `--url`): `--push` new note files pushed in
  one `loremap sync push`, with one record per note appended in the push's transaction,
  against the same files pushed to another project with the chain off; `--rounds` of each,
  in alternating order, the median of each.
- verify: `loremap audit verify`'s walk (read every record with its payload, hash it, check
  the links) over `--records` records in a SQLite chain file and in PostgreSQL, the median of
  three walks, next to reading the same records without hashing them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loremap.app import init_project  # noqa: E402
from loremap.audit import Entry, verify  # noqa: E402
from loremap.audit.chain import stamp  # noqa: E402
from loremap.memory.drafts import Draft  # noqa: E402
from loremap.store.sqlite.audit import SqliteAudit  # noqa: E402
from vault import ms, percentile, sentence  # noqa: E402

SECTIONS = ("remember", "push", "verify")
BATCH = 10_000  # records appended per transaction when a chain is built for `verify`


def environ(work: Path, **more: str) -> dict[str, str]:
    return {**os.environ, "LOREMAP_HOME": str(work / "home"), "LOREMAP_DAEMON": "off", **more}


def repository(root: Path) -> Path:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def bench_remember(work: Path, writes: int) -> None:
    import random

    rng = random.Random(11)
    app, _ = init_project(repository(work / "remember"), environ(work))
    chain = app.memory.audit
    times: dict[bool, list[float]] = {True: [], False: []}
    try:
        for i in range(writes):
            for audited in ((True, False) if i % 2 else (False, True)):
                app.memory.audit = chain if audited else None
                draft = Draft(type="decision", title=f"{sentence(rng, 5)} {i} {audited}",
                              body=sentence(rng, 120))
                start = time.perf_counter()
                app.memory.remember(draft)
                times[audited].append(time.perf_counter() - start)
    finally:
        app.memory.audit = chain
        app.close()
    log = SqliteAudit(work / "alone.sqlite", "bench", "bench@host")
    alone = []
    for i in range(writes):
        start = time.perf_counter()
        with log.appending() as append:
            append([Entry("remember", f"decision-choice-{i}", "", "a" * 64, f"Choice {i}")],
                   stamp(dt.datetime.now(dt.UTC)))
        alone.append(time.perf_counter() - start)
    on, off = percentile(times[True], 0.5), percentile(times[False], 0.5)
    print(f"remember  {writes} notes each way, SQLite: p50 {ms(on)} with the chain, {ms(off)} "
          f"without -> {on / off:.2f}x (+{ms(on - off)}); the append alone p50 "
          f"{ms(percentile(alone, 0.5))}")


def note_files(notes: Path, count: int) -> None:
    notes.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        note_id = f"decision-pushed-choice-{n}"
        (notes / f"{note_id}.md").write_text(
            f"---\nid: {note_id}\ntype: decision\ntitle: Pushed choice {n}\n---\n"
            f"Choice {n} was made for reason {n % 17} of the ledger.\n", encoding="utf-8")


def bench_push(server: Any, work: Path, count: int, rounds: int) -> None:
    from loremap.sync import Sync

    seconds: dict[bool, list[float]] = {True: [], False: []}
    for round_ in range(rounds):
        for audited in ((True, False) if round_ % 2 else (False, True)):
            key = server.key(f"push-{round_}-{audited}")
            root = repository(work / f"push-{round_}-{audited}")
            env = environ(work, LOREMAP_DATABASE_URL=server.url, LOREMAP_PROJECT_KEY=key)
            app, _ = init_project(root, env)
            try:
                note_files(root / ".loremap" / "notes", count)
                if not audited:
                    app.memory.audit = None
                sync = Sync.of(app.memory, app.user.state)
                start = time.perf_counter()
                report = sync.run("push")
                seconds[audited].append(time.perf_counter() - start)
                assert report.counts()["new"] == count, report.counts()
            finally:
                app.close()
    on, off = statistics.median(seconds[True]), statistics.median(seconds[False])
    each = ", ".join(f"{a:.2f}/{b:.2f}" for a, b in zip(seconds[True], seconds[False],
                                                          strict=True))
    alone = appends_alone(server, count, rounds)
    print(f"push      {count} new notes to PostgreSQL, median of {rounds}: {on:.2f} s with "
          f"{count} records, {off:.2f} s without -> {on / off:.2f}x (each round with/without: "
          f"{each}); the {count} appends alone: {alone:.3f} s ({alone / off:.1%} of a push)")


def appends_alone(server: Any, count: int, rounds: int) -> float:
    """The median seconds of appending `count` records in one transaction, as a push does."""
    from loremap.store.postgres.audit import PgAudit
    from loremap.text import Analyzer

    store = server.store("appends", Analyzer(["en"]))
    log = PgAudit(store)
    times = []
    try:
        for _ in range(rounds):
            entries = [Entry("push", f"decision-pushed-choice-{n}", "", f"{n:064x}",
                             f"Pushed choice {n}", "new") for n in range(count)]
            start = time.perf_counter()
            with log.appending() as append, store.write():
                append(entries, stamp(dt.datetime.now(dt.UTC)))
            times.append(time.perf_counter() - start)
    finally:
        store.close()
    return statistics.median(times)


def build(append_in: Callable[[list[Entry]], object], records: int) -> float:
    """Append `records` entries in batches; the seconds it took."""
    started = time.perf_counter()
    for first in range(0, records, BATCH):
        append_in([Entry("remember", f"decision-choice-{i}", "", f"{i:064x}", f"Choice {i}",
                         "kept for the bench") for i in range(first, min(records, first + BATCH))])
    return time.perf_counter() - started


def walks(log: Any, records: int) -> str:
    hashed, bare = [], []
    for _ in range(3):
        start = time.perf_counter()
        verdict = verify(log.records())
        hashed.append(time.perf_counter() - start)
        assert verdict.ok and verdict.records == records, verdict
        start = time.perf_counter()
        assert sum(1 for _ in log.records()) == records
        bare.append(time.perf_counter() - start)
    walk, read = statistics.median(hashed), statistics.median(bare)
    return f"{walk:.2f} s ({records / walk:,.0f} records/s); reading them alone {read:.2f} s"


def bench_verify(server: Any | None, work: Path, records: int) -> None:
    from loremap.text import Analyzer

    log = SqliteAudit(work / "verify.sqlite", "bench", "bench@host")

    def into_file(entries: list[Entry]) -> None:
        with log.appending() as append:
            append(entries, stamp(dt.datetime.now(dt.UTC)))

    built = build(into_file, records)
    size = (work / "verify.sqlite").stat().st_size
    print(f"verify    {records:,} records, SQLite: {walks(log, records)} (built in {built:.1f} "
          f"s, {size / records:.0f} bytes a record)")
    if server is None:
        return
    from loremap.store.postgres.audit import PgAudit

    store = server.store("verify", Analyzer(["en"]))
    shared = PgAudit(store)

    def into_database(entries: list[Entry]) -> None:
        with shared.appending() as append, store.write():
            append(entries, stamp(dt.datetime.now(dt.UTC)))

    try:
        built = build(into_database, records)
        print(f"verify    {records:,} records, PostgreSQL: {walks(shared, records)} (built in "
              f"{built:.1f} s)")
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--push", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=4, help="pushes each way")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--url", default=os.environ.get("LOREMAP_TEST_DATABASE_URL", ""),
                        help="a PostgreSQL server (default: the embedded one)")
    parser.add_argument("--only", default=",".join(SECTIONS))
    args = parser.parse_args()
    only = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="loremap-bench-audit-") as tmp:
        work = Path(tmp)
        if "remember" in only:
            bench_remember(work, args.writes)
        server = None
        if only & {"push", "verify"}:
            from store import Server

            server = Server(args.url, work)
            print(f"(PostgreSQL {server.version}, {'embedded' if not args.url else 'given'})")
        try:
            if "push" in only:
                bench_push(server, work, args.push, args.rounds)
            if "verify" in only:
                bench_verify(server, work, args.records)
        finally:
            if server is not None:
                server.close()


if __name__ == "__main__":
    main()
