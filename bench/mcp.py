"""MCP server size and speed: what every session pays for the tool definitions, how long an
agent waits for the server to start, and what a tool call costs over stdio and HTTP.

    python bench/mcp.py [--quick] [--runs 10] [--calls 200] [--queries 50] [--clients 10]
                        [--client-calls 40] [--mode legacy|auto] [--fresh] [--json OUT]

`--quick`: 3 cold starts, 60 recalls over 20 queries, 5 calls per HTTP client (~30 s).

Corpus (built once under /tmp/mcpbench-corpus-v1, `--fresh` rebuilds; each run works on a copy
in its own scratch dir /tmp/mcpbench-run-*, with LOREMAP_HOME there): this repository's own
code (src, tests, bench) in the code map, plus 1,000 notes generated as bench/search.py makes
them (its `Lore`, with the words of our README and docs), written straight into
`.loremap/notes/` and indexed by one rebuild. Queries: 50 made as bench/search.py makes them
(note titles, doc phrases, identifiers, pasted tracebacks, off-topic), 200 calls over them in
a seeded order.

Measured, each next to a baseline from the same run:
1. tokens of the `tools/list` answer over stdio (compact JSON of its tools, counted with
   `loremap.text.estimate_tokens`), lean and full (`LOREMAP_TOOLS=full`); target lean
   <= 2,000. Anchor: cuba-memorys, which loremap replaces, lists 62 tools in ~17.3k tokens
   (its lean profile: 30 tools, ~8.9k).
2. cold start: spawn `loremap serve`, initialize, first `tools/list` answer (and the first
   recall answer, which opens the index); median and p95 of N runs; target p50 <= 1.0 s.
   The same through a warm daemon (`loremap serve` relays to a session there, the SDK already
   imported): target p50 <= 150 ms.
   Baselines: `python -c pass` and `python -c "import mcp.server"`, from spawn to the first
   line they print and to their exit (the exit adds the teardown of what they imported).
3. warm recall p50/p95 over stdio and over HTTP, one client each; target p95 <= 50 ms.
   Baselines in this process: `Engine.recall` with the tool's request (one engine, as
   bench/search.py), the tool function `tools.recall` (reconcile + a new engine + render)
   and the SDK's in-memory client on `build_server` (the MCP layers without a transport).
4. HTTP with 10 concurrent clients, each its own session with the bearer token: 70% recall,
   10% read, 10% related, 10% remember; calls/s, p50/p95, errors (must be 0) and notes written
   vs remembered (must match), and the CPU per call of the server and of this process.
   Baseline: the same mix from one client.
The client runs in this process and shares the 2 cores with the server; the machines are shared
and noisy: read the medians and the ratios. Anything the servers log beyond their start line
is shown and the scratch dir kept. Calls use the initialize handshake (`--mode
legacy`), as the agents of today do; `--mode auto` lets the SDK negotiate.

This file has the name of the SDK package it measures: `main` moves bench/ to the end of
`sys.path` before anything imports `mcp`, so `import mcp` finds the SDK, not this script.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import secrets
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import IO, Any, NamedTuple

import anyio

from loremap.app import App, init_project
from loremap.use.fresh import ALWAYS
from loremap.use.recall import prepare as prepare_recall
from search import WORD, Lore, queries_for, read_code, schema_digest, write_notes
from vault import percentile

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
VERSION = "v1"  # bump when what goes into the cached corpus changes
CACHE = Path(tempfile.gettempdir()) / f"mcpbench-corpus-{VERSION}"
NOTES = 1_000
CODE = ("src", "tests", "bench")
ANCHOR = "cuba-memorys: 62 tools, ~17.3k tokens (its lean profile: 30 tools, ~8.9k)"
READY = re.compile(r"MCP on (http://\S+/mcp)")
MIX = (("recall", 0.7), ("read", 0.1), ("related", 0.1), ("remember", 0.1))

Call = tuple[str, dict[str, Any]]


# --- corpus ---------------------------------------------------------------------------------


def repo_words() -> list[str]:
    """The words of our README and docs: real English about this product, for note bodies."""
    words: list[str] = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        words += WORD.findall(path.read_text(encoding="utf-8"))
    return words


def build_corpus(root: Path, words: list[str]) -> dict[str, float]:
    """Copy our code into `root`, index it, add the notes; returns the seconds of each step."""
    shutil.rmtree(root, ignore_errors=True)
    steps: dict[str, float] = {}
    start = time.perf_counter()
    for part in CODE:
        shutil.copytree(REPO / part, root / part,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "fixtures"))
    app, _ = init_project(root)
    app.index_code()
    steps["code"] = time.perf_counter() - start
    start = time.perf_counter()
    code = read_code(root, words)
    notes = Lore(random.Random("mcp"), code, root).notes(NOTES)
    assert app.memory.project is not None
    write_notes(app.memory.project.notes_dir, notes)
    # rebuild() drops the whole index, code map included: the code is indexed again after it.
    app.memory.rebuild()
    app.index_code()
    prepare_recall(app, ALWAYS)
    app.close()
    steps["notes"] = time.perf_counter() - start
    marker = {"schema": schema_digest(), "notes": NOTES, "steps": steps}
    (root / ".built").write_text(json.dumps(marker), encoding="utf-8")
    return steps


def corpus(fresh: bool, words: list[str]) -> tuple[Path, str]:
    """The cached corpus (built when missing, stale or `fresh`) and how it was obtained."""
    root = CACHE / "project"
    marker = root / ".built"
    built = json.loads(marker.read_text(encoding="utf-8")) if marker.exists() else {}
    if not fresh and built.get("schema") == schema_digest() and built.get("notes") == NOTES:
        return root, "cached"
    steps = build_corpus(root, words)
    return root, f"built in {sum(steps.values()):.1f} s"


def corpus_counts(root: Path) -> dict[str, int]:
    with closing(sqlite3.connect(f"file:{root / '.loremap' / 'index.sqlite'}?mode=ro",
                                 uri=True)) as db:
        kinds = dict(db.execute("SELECT kind, count(*) FROM nodes GROUP BY kind").fetchall())
    return {"notes": kinds.get("note", 0), "code": sum(v for k, v in kinds.items() if k != "note")}


class Targets(NamedTuple):
    """What the mixed load reads and follows: note ids and file paths that have links."""

    read: list[str]
    related: list[str]
    files: list[str]


def targets(root: Path, rng: random.Random) -> Targets:
    with closing(sqlite3.connect(f"file:{root / '.loremap' / 'index.sqlite'}?mode=ro",
                                 uri=True)) as db:
        notes = [i for (i,) in db.execute(
            "SELECT id FROM nodes WHERE kind = 'note' AND status = 'active' ORDER BY id")]
        files = [p for (p,) in db.execute(
            "SELECT path FROM files WHERE language IS NOT NULL AND skip IS NULL ORDER BY path")]
        linked = {s for (s,) in db.execute("SELECT src FROM edges UNION SELECT dst FROM edges")}
    picked = rng.sample(notes, 40) + rng.sample(files, 20)
    return Targets(picked, [t for t in picked if t in linked], files)


# --- servers --------------------------------------------------------------------------------


def loremap_command() -> str:
    return str(Path(sys.executable).parent / "loremap")


def server_env(home: Path, profile: str = "lean", token: str = "", daemon: str = "off"
               ) -> dict[str, str]:
    """What the spawned servers get on top of the SDK's safe default environment (in their
    own process, unless `daemon` is "auto")."""
    env = {"LOREMAP_HOME": str(home), "LOREMAP_TOOLS": profile, "LOREMAP_DAEMON": daemon}
    if token:
        env["LOREMAP_HTTP_TOKEN"] = token
    return env


@asynccontextmanager
async def stdio_session(root: Path, env: dict[str, str], errlog: IO[str], mode: str
                        ) -> AsyncIterator[Any]:
    """An SDK client on a fresh `loremap serve` over stdio; the SDK ends the process."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=loremap_command(), args=["serve"], env=env, cwd=root)
    async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
        yield client


@asynccontextmanager
async def http_session(url: str, token: str, mode: str) -> AsyncIterator[Any]:
    """An SDK client session over streamable HTTP, sending the bearer token."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


class HttpServer:
    """`loremap serve --http 127.0.0.1:0` in `root`: the URL once it listens; stopped (and
    killed if it lingers) on exit, whatever happened inside."""

    def __init__(self, root: Path, env: dict[str, str], log: Path) -> None:
        self.root, self.env, self.log = root, env, log
        self.url = ""
        self.ready = threading.Event()
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> HttpServer:
        self.proc = subprocess.Popen(
            [loremap_command(), "serve", "--http", "127.0.0.1:0"], cwd=self.root,
            env={**os.environ, **self.env}, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, encoding="utf-8")
        threading.Thread(target=self._drain, daemon=True).start()
        if not self.ready.wait(60) or not self.url:
            self.stop()
            raise RuntimeError(f"loremap serve --http did not start; see {self.log}")
        return self

    def _drain(self) -> None:
        """Copy the server's stderr to the log (a full pipe would block it); note the URL."""
        assert self.proc is not None and self.proc.stderr is not None
        with self.log.open("a", encoding="utf-8") as out:
            for line in self.proc.stderr:
                out.write(line)
                out.flush()
                found = READY.search(line)
                if found and not self.url:
                    self.url = found.group(1)
                    self.ready.set()
        self.ready.set()  # the process ended: whoever waits must not wait longer

    def cpu(self) -> float | None:
        """The server's CPU seconds so far (Linux /proc), None where unknown."""
        try:
            assert self.proc is not None
            stat = Path(f"/proc/{self.proc.pid}/stat").read_text(encoding="utf-8")
        except (OSError, AssertionError):
            return None
        fields = stat.rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=35)  # the server lets in-flight calls finish (30 s grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- 1. tool definitions --------------------------------------------------------------------


async def listed_tools(root: Path, home: Path, profile: str, errlog: IO[str], mode: str
                       ) -> list[dict[str, Any]]:
    async with stdio_session(root, server_env(home, profile), errlog, mode) as client:
        result = await client.list_tools()
    return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in result.tools]


def bench_tokens(root: Path, home: Path, errlog: IO[str], mode: str) -> dict[str, Any]:
    from loremap.mcp.catalogue import tool_definitions
    from loremap.text import estimate_tokens

    out: dict[str, Any] = {}
    for profile in ("lean", "full"):
        tools = anyio.run(listed_tools, root, home, profile, errlog, mode)
        wire = json.dumps(tools, separators=(",", ":"), ensure_ascii=False)
        local = json.dumps(tool_definitions(profile), separators=(",", ":"), ensure_ascii=False)
        out[profile] = {"tools": len(tools), "tokens": estimate_tokens(wire),
                        "bytes": len(wire.encode("utf-8")),
                        "catalogue_tokens": estimate_tokens(local)}
    return out


def show_tokens(t: dict[str, Any]) -> None:
    lean, full = t["lean"], t["full"]
    print("1. tool definitions (tools/list over stdio, compact JSON, estimate_tokens)")
    for name, row in (("lean", lean), ("full", full)):
        print(f"  {name:4} {row['tools']:2} tools: {row['tokens']:5,} tokens ({row['bytes']:,} "
              f"bytes; catalogue.tool_definitions: {row['catalogue_tokens']:,})")
    print(f"  anchor {ANCHOR}: lean is {8_900 / lean['tokens']:.1f}x smaller than its lean, "
          f"full {17_300 / full['tokens']:.1f}x smaller than its full")
    print(f"  target lean <= 2,000 tokens: {verdict(lean['tokens'], 2_000)}")


# --- 2. cold start --------------------------------------------------------------------------


async def cold_once(root: Path, env: dict[str, str], errlog: IO[str], mode: str, query: str
                    ) -> tuple[float, float]:
    """Seconds from spawn to the first tools/list answer, and to the first recall answer."""
    start = time.perf_counter()
    async with stdio_session(root, env, errlog, mode) as client:
        await client.list_tools()
        listed = time.perf_counter() - start
        await checked(client, "recall", {"query": query})
        recalled = time.perf_counter() - start
    return listed, recalled


def spawn(code: str, cwd: Path) -> tuple[float, float]:
    """Seconds from spawn to the first line `python -c code` prints, and to its exit (which
    adds the interpreter's teardown of what it imported)."""
    start = time.perf_counter()
    with subprocess.Popen([sys.executable, "-c", f"{code}; print('ready', flush=True)"],
                          cwd=cwd, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        proc.stdout.readline()
        line = time.perf_counter() - start
        proc.stdout.read()
    if proc.returncode:
        raise RuntimeError(f"python -c {code!r} exited with {proc.returncode}")
    return line, time.perf_counter() - start


def bench_cold(root: Path, home: Path, errlog: IO[str], runs: int, mode: str, query: str
               ) -> dict[str, list[float]]:
    """The runs interleaved (pass, import, serve, ...) so a noisy minute hits all three."""
    times: dict[str, list[float]] = {k: [] for k in (
        "pass", "pass_exit", "import", "import_exit", "listed", "recalled", "warm_listed",
        "warm_recalled")}
    env = server_env(home)
    auto = server_env(home, daemon="auto")
    daemon = subprocess.Popen([sys.executable, "-m", "loremap.daemon"],
                              env={**os.environ, **auto}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        from loremap import wire

        if not wire.wait_ready({**os.environ, **auto}, 60):
            raise RuntimeError("the daemon did not start")
        anyio.run(cold_once, root, auto, errlog, mode, query)  # the daemon imports the SDK
        for _ in range(runs):
            for key, code in (("pass", "pass"), ("import", "import mcp.server")):
                line, end = spawn(code, root)
                times[key].append(line)
                times[f"{key}_exit"].append(end)
            listed, recalled = anyio.run(cold_once, root, env, errlog, mode, query)
            times["listed"].append(listed)
            times["recalled"].append(recalled)
            listed, recalled = anyio.run(cold_once, root, auto, errlog, mode, query)
            times["warm_listed"].append(listed)
            times["warm_recalled"].append(recalled)
    finally:
        daemon.terminate()
        daemon.wait(60)
    return times


def show_cold(t: dict[str, list[float]]) -> None:
    p50 = {k: statistics.median(v) * 1000 for k, v in t.items()}
    print(f"2. cold start over stdio, {len(t['pass'])} runs each: p50 / p95 to the first "
          "answer (to exit)")
    rows = (("python -c pass", "pass"), ("python -c 'import mcp.server'", "import"),
            ("loremap serve: spawn -> first tools/list", "listed"),
            ("loremap serve: spawn -> first recall", "recalled"),
            ("through a warm daemon: -> first tools/list", "warm_listed"),
            ("through a warm daemon: -> first recall", "warm_recalled"))
    for label, key in rows:
        ended = t.get(f"{key}_exit")
        tail = (f"  ({p50[key + '_exit']:.0f} / {percentile(ended, 0.95) * 1000:.0f} ms)"
                if ended else "")
        print(f"  {label:42} {p50[key]:6.0f} / {percentile(t[key], 0.95) * 1000:6.0f} ms{tail}")
    print(f"  the SDK's import is {p50['import'] - p50['pass']:.0f} ms of it; ours adds "
          f"{p50['listed'] - p50['import']:.0f} ms (our imports, the server, the handshake); "
          f"the first recall (opens the index) {p50['recalled'] - p50['listed']:.0f} ms more")
    print(f"  target first tools/list p50 <= 1.0 s: {verdict(p50['listed'], 1000)}; "
          f"through a warm daemon <= 150 ms: {verdict(p50['warm_listed'], 150)}")


# --- 3. warm recall -------------------------------------------------------------------------


async def checked(client: Any, name: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(name, args)
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    if result.is_error:
        raise RuntimeError(f"{name} failed: {text[:300]}")
    return text


async def timed_calls(client: Any, calls: list[Call], answers: list[str] | None = None
                      ) -> list[float]:
    times = []
    for name, args in calls:
        start = time.perf_counter()
        text = await checked(client, name, args)
        times.append(time.perf_counter() - start)
        if answers is not None:
            answers.append(text)
    return times


def recall_calls(queries: list[str], calls: int, rng: random.Random) -> list[Call]:
    order = [queries[i % len(queries)] for i in range(calls)]
    rng.shuffle(order)
    return [("recall", {"query": q}) for q in order]


async def over_session(session: Callable[[], Any], warm: list[Call], calls: list[Call],
                       answers: list[str] | None = None) -> list[float]:
    """One session: a warm-up pass over every distinct query, then the timed calls."""
    async with session() as client:
        await timed_calls(client, warm)
        return await timed_calls(client, calls, answers)


def in_process(root: Path, warm: list[Call], calls: list[Call]) -> dict[str, list[float]]:
    """The baselines without a transport: the engine, the tool function, the in-memory
    SDK client on the same server the process would run."""
    from mcp import Client

    from loremap.mcp import tools
    from loremap.mcp.args import RecallArgs
    from loremap.mcp.projects import Projects
    from loremap.mcp.server import build_server
    from loremap.search import Request

    app = App.open(root)
    try:
        prepare_recall(app, ALWAYS)
        engine = app.engine()
        budget, limit = (app.settings.get_int(k) for k in ("search.budget", "search.limit"))
        queries = [args["query"] for _, args in calls]
        out = {"engine": timed(lambda q: engine.recall(Request(q, budget=budget, limit=limit)),
                               [a["query"] for _, a in warm], queries),
               "tool": timed(lambda q: tools.recall(app, RecallArgs(q)),
                             [a["query"] for _, a in warm], queries)}
    finally:
        app.close()
    projects = Projects(root)
    try:
        out["memory"] = anyio.run(over_session,
                                  lambda: Client(build_server(projects, "lean")), warm, calls)
    finally:
        projects.close()
    return out


def timed(run: Callable[[str], object], warm: list[str], queries: list[str]) -> list[float]:
    for query in warm:
        run(query)
    times = []
    for query in queries:
        start = time.perf_counter()
        run(query)
        times.append(time.perf_counter() - start)
    return times


def show_recall(r: dict[str, list[float]], n_queries: int, answers: list[str]) -> None:
    from loremap.text import estimate_tokens

    print(f"3. warm recall, {len(r['stdio'])} calls over {n_queries} queries: p50 / p95 / max "
          "(p50 over the engine)")
    rows = (("Engine.recall in process (baseline)", "engine"),
            ("tools.recall in process (+ reconcile, engine, render)", "tool"),
            ("in-memory SDK client (+ MCP layers)", "memory"),
            ("stdio, one client", "stdio"), ("streamable HTTP, one client", "http"))
    base = statistics.median(r["engine"])
    for label, key in rows:
        v = r[key]
        p50 = statistics.median(v)
        print(f"  {label:54} {p50 * 1000:6.1f} / {percentile(v, 0.95) * 1000:6.1f} / "
              f"{max(v) * 1000:6.1f} ms  (+{(p50 - base) * 1000:.1f} ms)")
    empty = sum(a.startswith("nothing relevant") for a in answers)
    sizes = [estimate_tokens(a) for a in answers if not a.startswith("nothing relevant")]
    print(f"  answers over stdio: {len(answers) - empty} with items (median "
          f"{statistics.median(sizes or [0]):.0f} tokens), {empty} 'nothing relevant'")
    for key in ("stdio", "http"):
        p95 = percentile(r[key], 0.95) * 1000
        print(f"  target {key} p95 <= 50 ms: {p95:.1f} ms {verdict(p95, 50)}")


def summary(times: list[float]) -> dict[str, float]:
    return {"p50_ms": statistics.median(times) * 1000,
            "p95_ms": percentile(times, 0.95) * 1000, "max_ms": max(times) * 1000}


# --- 4. HTTP under concurrent clients -------------------------------------------------------


def mixed_plan(rng: random.Random, queries: list[str], t: Targets, n: int, who: str
               ) -> list[Call]:
    names, weights = zip(*MIX, strict=True)
    plan: list[Call] = []
    for i in range(n):
        name = rng.choices(names, weights)[0]
        if name == "recall":
            plan.append((name, {"query": rng.choice(queries)}))
        elif name == "read":
            plan.append((name, {"target": rng.choice(t.read)}))
        elif name == "related":
            plan.append((name, {"target": rng.choice(t.related)}))
        else:
            plan.append((name, {"facts": [fact(rng, t, who, i)]}))
    return plan


def fact(rng: random.Random, t: Targets, who: str, i: int) -> dict[str, Any]:
    path = rng.choice(t.files)
    return {"type": rng.choice(("gotcha", "bug", "decision")),
            "title": f"Bench {who} call {i}: {Path(path).stem} needs the lock {rng.random():.6f}",
            "body": f"Seen under load from {who}: calls into {path} must hold the project "
                    "lock, or the index and the notes disagree for a moment.",
            "files": [path], "tags": ["bench"]}


class Load:
    """What the clients of one load run saw."""

    def __init__(self) -> None:
        self.latencies: list[tuple[str, float]] = []
        self.errors: list[str] = []
        self.created = 0
        self.remembered = 0
        self.ends: list[float] = []

    async def client(self, session: Callable[[], Any], plan: list[Call],
                     ready: Callable[[], Awaitable[None]]) -> None:
        started = False
        try:
            async with session() as client:
                started = True
                await ready()
                for name, args in plan:
                    await self.call(client, name, args)
                self.ends.append(time.perf_counter())
        except Exception as exc:  # noqa: BLE001 - counted and shown, the others go on
            self.errors.append(f"session: {type(exc).__name__}: {exc}")
            if not started:
                await ready()  # the others must not wait for this one

    async def call(self, client: Any, name: str, args: dict[str, Any]) -> None:
        self.remembered += name == "remember"
        start = time.perf_counter()
        try:
            text = await checked(client, name, args)
        except Exception as exc:  # noqa: BLE001 - counted and shown, the load goes on
            self.errors.append(f"{name}: {type(exc).__name__}: {exc}"[:300])
            return
        self.latencies.append((name, time.perf_counter() - start))
        if name == "remember":
            self.created += text.count("created ")


async def run_load(session: Callable[[], Any], plans: list[list[Call]]) -> tuple[Load, float]:
    """All clients open their sessions, then start together; seconds from start to the
    last call's answer."""
    load, go, opened = Load(), anyio.Event(), anyio.Event()
    count = [0]

    async def ready() -> None:
        count[0] += 1
        if count[0] == len(plans):
            opened.set()
        await go.wait()

    async with anyio.create_task_group() as group:
        for plan in plans:
            group.start_soon(load.client, session, plan, ready)
        with anyio.fail_after(120):
            await opened.wait()
        start = time.perf_counter()
        go.set()
    return load, max(load.ends, default=start) - start


def bench_load(server: HttpServer, token: str, mode: str, notes_dir: Path,
               plans: list[list[Call]]) -> dict[str, Any]:
    before = len(list(notes_dir.glob("*.md")))
    cpu, ours = server.cpu(), time.process_time()
    load, wall = anyio.run(run_load, lambda: http_session(server.url, token, mode), plans)
    ours = time.process_time() - ours
    theirs = server.cpu()
    written = len(list(notes_dir.glob("*.md"))) - before
    lat = [t for _, t in load.latencies] or [0.0]
    by_tool = {name: statistics.median([t for n, t in load.latencies if n == name]) * 1000
               for name, _ in MIX if any(n == name for n, _ in load.latencies)}
    return {"clients": len(plans), "calls": sum(len(p) for p in plans),
            "answered": len(load.latencies), "seconds": wall,
            "calls_per_s": len(load.latencies) / wall if wall else 0.0,
            "p50": statistics.median(lat) * 1000, "p95": percentile(lat, 0.95) * 1000,
            "p50_by_tool": by_tool, "client_cpu_s": ours,
            "server_cpu_s": theirs - cpu if theirs is not None and cpu is not None else None,
            "errors": load.errors, "remembered": load.remembered, "created": load.created,
            "written": written}


def show_load(one: dict[str, Any], many: dict[str, Any]) -> None:
    mix = ", ".join(f"{int(w * 100)}% {n}" for n, w in MIX)
    print(f"4. streamable HTTP, mixed calls ({mix}), bearer token")
    for label, r in (("1 client (baseline)", one), (f"{many['clients']} clients", many)):
        print(f"  {label:20} {r['calls']:4} calls in {r['seconds']:5.1f} s: "
              f"{r['calls_per_s']:5.1f} calls/s, p50 {r['p50']:6.1f} ms, p95 {r['p95']:6.1f} ms; "
              f"errors {len(r['errors'])}; notes written {r['written']} of {r['remembered']} "
              f"remembered ({r['created']} acknowledged)")
        tools = ", ".join(f"{n} {v:.0f}" for n, v in r["p50_by_tool"].items())
        server = (f"{r['server_cpu_s'] / r['calls'] * 1000:.0f} ms server" if
                  r["server_cpu_s"] is not None else "server unknown")
        print(f"  {'':20} p50 by tool, ms: {tools}; CPU per call: {server}, "
              f"{r['client_cpu_s'] / r['calls'] * 1000:.0f} ms client (this process)")
        for error in r["errors"][:5]:
            print(f"    error: {error}")
    ok = all(not r["errors"] and r["written"] == r["remembered"] == r["created"]
             for r in (one, many))
    print(f"  errors 0 and every remembered note written: {'PASS' if ok else 'FAIL'}; "
          f"{many['clients']} clients give {many['calls_per_s'] / one['calls_per_s']:.2f}x "
          "the calls/s of one")


# --- main -----------------------------------------------------------------------------------


def verdict(value: float, limit: float) -> str:
    return "PASS" if value <= limit else "MISS"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="a smaller run: 3 cold starts, 60 recalls, 5 calls per client")
    parser.add_argument("--runs", type=int, help="cold starts (default 10)")
    parser.add_argument("--calls", type=int, help="timed recalls per transport (default 200)")
    parser.add_argument("--queries", type=int, help="distinct queries (default 50)")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--client-calls", type=int, help="calls per HTTP client (default 40)")
    parser.add_argument("--mode", choices=("legacy", "auto"), default="legacy",
                        help="legacy: the initialize handshake; auto: the SDK negotiates")
    parser.add_argument("--fresh", action="store_true", help="rebuild the cached corpus")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    quick = {"runs": 3, "calls": 60, "queries": 20, "client_calls": 5}
    full = {"runs": 10, "calls": 200, "queries": 50, "client_calls": 40}
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def prepare() -> None:
    """bench/ after the SDK on sys.path (see the module doc); our bytecode compiled, so the
    cold starts measure what users get, not the compiler."""
    import compileall

    import loremap

    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH] + [str(BENCH)]
    compileall.compile_dir(str(Path(loremap.__file__).parent), quiet=1)


def header(args: argparse.Namespace, root: Path, how: str) -> None:
    python = os.path.relpath(sys.executable, REPO) if sys.executable.startswith(str(REPO)) \
        else sys.executable
    counts = corpus_counts(root)
    print(f"loremap bench/mcp.py — Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"protocol mode {args.mode}")
    print(f"command: cd {REPO} && {shlex.join([python, 'bench/mcp.py', *sys.argv[1:]])}")
    print(f"corpus ({how}, {CACHE}): {counts['notes']:,} notes + {counts['code']:,} code nodes "
          f"(this repository's {', '.join(CODE)})")


def run(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    home = scratch / "home"
    os.environ["LOREMAP_HOME"] = str(home)  # the in-process baselines and the builds
    words = repo_words()
    cached, how = corpus(args.fresh, words)
    root = scratch / "project"
    shutil.copytree(cached, root, symlinks=True)
    header(args, root, how)
    rng = random.Random("mcp-bench")
    queries = [q for _, q in queries_for(root, words, "mcp", args.queries)]
    warm = recall_calls(queries, len(queries), rng)
    calls = recall_calls(queries, args.calls, rng)
    report: dict[str, Any] = {"python": sys.version.split()[0], "cpus": os.cpu_count()}
    with (scratch / "servers.log").open("a", encoding="utf-8") as errlog:
        report["tokens"] = bench_tokens(root, home, errlog, args.mode)
        show_tokens(report["tokens"])
        cold = bench_cold(root, home, errlog, args.runs, args.mode, queries[0])
        show_cold(cold)
        recall = in_process(root, warm, calls)
        answers: list[str] = []
        recall["stdio"] = anyio.run(over_session, lambda: stdio_session(
            root, server_env(home), errlog, args.mode), warm, calls, answers)
    token = secrets.token_urlsafe(16)
    with HttpServer(root, server_env(home, token=token), scratch / "http.log") as server:
        recall["http"] = anyio.run(over_session,
                                   lambda: http_session(server.url, token, args.mode), warm, calls)
        show_recall(recall, len(queries), answers)
        report["load"] = load_pair(args, server, token, root, queries, rng)
    report["cold"] = {k: summary(v) for k, v in cold.items()}
    report["recall"] = {k: summary(v) for k, v in recall.items()}
    return report


def load_pair(args: argparse.Namespace, server: HttpServer, token: str, root: Path,
              queries: list[str], rng: random.Random) -> dict[str, Any]:
    t = targets(root, rng)
    notes_dir = root / ".loremap" / "notes"
    n = args.client_calls
    one = bench_load(server, token, args.mode, notes_dir,
                     [mixed_plan(rng, queries, t, n * 2, "solo")])
    many = bench_load(server, token, args.mode, notes_dir,
                      [mixed_plan(rng, queries, t, n, f"c{i}") for i in range(args.clients)])
    show_load(one, many)
    return {"one": one, "many": many}


def server_lines(scratch: Path) -> list[str]:
    """What the servers wrote to stderr besides the line saying where they listen."""
    lines: list[str] = []
    for log in ("servers.log", "http.log"):
        path = scratch / log
        if path.exists():
            lines += [line for line in path.read_text(encoding="utf-8").splitlines()
                      if line.strip() and not READY.search(line)]
    return lines


def main() -> None:
    args = parse_args()
    prepare()
    scratch = Path(tempfile.mkdtemp(prefix="mcpbench-run-"))
    try:
        report = run(args, scratch)
    except KeyboardInterrupt:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    except BaseException:
        print(f"(the scratch dir and the server logs are kept in {scratch})", file=sys.stderr)
        raise
    said = server_lines(scratch)
    if said:
        print(f"the servers logged {len(said)} lines (kept in {scratch}); the first: {said[0]}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
