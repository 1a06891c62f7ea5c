"""Hook latency: `loremap-hook <event>` as a whole process, the way Claude Code runs it.

    python bench/hooks.py [--runs 30] [--fresh] [--json OUT] [--no-daemon]

The project is bench/search.py's 10k corpus (Django 5.1.4's code plus generated notes, ~10k
nodes; built once under /tmp/loremap-bench-corpora, `--fresh` rebuilds), copied to a scratch
folder so the hooks' writes do not touch the cache. The transcript the meter, stop and
pre-compact hooks read is one generated session of ~400 calls (tests/transcripts.py), ~5 MB.

Measured per event, p50 and p95 of `--runs` runs (after one warm-up run), each a new process
fed the event JSON on stdin:
  - prompt: the questions of bench/search.py's query set (note titles, doc phrases, names,
    pasted tracebacks, off-topic), one a run;
  - session-start (startup, nothing changed: an incremental index that parses nothing),
    session-start after compaction, pre-tool (a file with notes, a new session each run),
    pre-tool before a shell command (the error notes recording it), post-tool (the meter),
    tool-failure (a failed shell command: its signature logged and looked up), stop,
    pre-compact.
`loremap search` with the prompts' questions is measured the same way (a CLI read). Each event
is measured three ways in the same run: in its own process (`LOREMAP_DAEMON=off`,
what every hook did before the daemon), through a warm daemon (`loremap daemon`, started once
and warmed by one call of each event), and falling back (the daemon is on but none runs and
none may start: the cost of finding that out). Baselines in the same run: `python -c pass`
(interpreter start) and `python -c "import loremap.hook"`. Targets: in process, prompt p50 <= 80
ms and p95 <= 150 ms, session start with nothing changed <= 300 ms (p50); through the daemon,
prompt p50 <= 40 ms and p95 <= 80 ms, session start <= 100 ms, pre-tool <= 30 ms (p50).
Machines are shared and noisy: read medians and ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from codemap import fetch_django  # noqa: E402
from search import CACHE, corpus, docs_words, queries_for  # noqa: E402
from transcripts import generate  # noqa: E402
from vault import percentile  # noqa: E402

TARGETS = {"prompt": (80.0, 150.0), "session-start": (300.0, None)}
WARM_TARGETS = {"prompt": (40.0, 80.0), "session-start": (100.0, None), "pre-tool": (30.0, None)}


def hook_command() -> list[str]:
    script = Path(sys.executable).parent / "loremap-hook"
    return [str(script)] if script.exists() else [sys.executable, "-m", "loremap.hook"]


def run_once(cmd: list[str], payload: dict[str, Any] | None, cwd: Path,
             env: dict[str, str] | None = None) -> float:
    data = json.dumps(payload).encode() if payload is not None else b""
    start = time.perf_counter()
    done = subprocess.run(cmd, input=data, cwd=cwd, capture_output=True, check=True, env=env)
    elapsed = time.perf_counter() - start
    if payload is not None and done.stdout and not done.stdout.startswith(b"{"):
        raise RuntimeError(f"unexpected hook output: {done.stdout[:200]!r}")
    return elapsed * 1000


def stats(values: list[float]) -> dict[str, float]:
    return {"p50": statistics.median(values), "p95": percentile(values, 0.95),
            "n": float(len(values))}


def a_transcript(scratch: Path) -> Path:
    generate(scratch / "projects", sessions=1, calls_per_session=400, seed=7)
    files = sorted((scratch / "projects").rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    return files[-1]


def noted_file(root: Path) -> str:
    with closing(sqlite3.connect(f"file:{root / '.loremap' / 'index.sqlite'}?mode=ro",
                                 uri=True)) as db:
        row = db.execute("SELECT j.value FROM nodes n, json_each(n.files) j WHERE n.kind = "
                         "'note' AND n.status = 'active' AND n.type IN ('gotcha', 'bug') "
                         "LIMIT 1").fetchone()
    return str(row[0])


def measure(root: Path, transcript: Path, prompts: list[str], runs: int,
            env: dict[str, str], baselines: bool = True) -> dict[str, dict[str, float]]:
    hook = hook_command()
    base = {"session_id": "bench", "transcript_path": str(transcript), "cwd": str(root)}
    target = str(root / noted_file(root))
    events: dict[str, tuple[list[str], Any]] = {
        "session-start": (["session-start"], lambda i: {**base, "source": "startup"}),
        "session-start (compact)": (["session-start"], lambda i: {**base, "source": "compact"}),
        "prompt": (["prompt"], lambda i: {**base, "prompt": prompts[i % len(prompts)]}),
        "pre-tool": (["pre-tool"], lambda i: {**base, "session_id": f"bench-{i}",
                                              "tool_name": "Read",
                                              "tool_input": {"file_path": target}}),
        "pre-tool (Bash)": (["pre-tool"], lambda i: {
            **base, "session_id": f"bench-{i}", "tool_name": "Bash",
            "tool_input": {"command": f"python manage.py test app{i % 7}"}}),
        "post-tool": (["post-tool"], lambda i: {**base, "tool_name": "Read"}),
        "tool-failure": (["tool-failure"], lambda i: {
            **base, "session_id": f"bench-{i}", "tool_name": "Bash", "is_interrupt": False,
            "tool_input": {"command": f"python manage.py test app{i % 7}"},
            "error": f"Exit code 1\nModuleNotFoundError: No module named 'app{i % 7}'"}),
        "stop": (["stop"], lambda i: {**base, "session_id": f"bench-{i}",
                                      "stop_hook_active": False}),
        "pre-compact": (["pre-compact"], lambda i: {**base, "trigger": "auto"}),
    }
    out = {}
    if baselines:
        out = {"python -c pass": stats([run_once([sys.executable, "-c", "pass"], None, root)
                                        for _ in range(runs)]),
               "import loremap.hook": stats([run_once([sys.executable, "-c",
                                                       "import loremap.hook"], None, root)
                                             for _ in range(runs)])}
    for name, (args, payload) in events.items():
        # warm-up (a first incremental index; through the daemon, the project's App)
        run_once([*hook, *args], payload(runs), root, env)
        out[name] = stats([run_once([*hook, *args], payload(i), root, env)
                           for i in range(runs)])
    search = [str(Path(sys.executable).parent / "loremap"), "search"]
    run_once([*search, prompts[0]], None, root, env)
    out["loremap search (CLI)"] = stats([run_once([*search, prompts[i % len(prompts)]], None,
                                                  root, env) for i in range(runs)])
    return out


def paused(env: dict[str, str]) -> None:
    """Keep a daemon from being started for the next few seconds (`wire.SPAWN_PAUSE_S`)."""
    from loremap import wire

    Path(wire.spawn_marker(env)).touch()


def measure_fallback(root: Path, transcript: Path, prompts: list[str], runs: int,
                     env: dict[str, str]) -> dict[str, dict[str, float]]:
    """A prompt and a CLI search with the daemon on but none running, and none allowed to
    start (the pause renewed before each run)."""
    hook = hook_command()
    search = [str(Path(sys.executable).parent / "loremap"), "search"]
    base = {"session_id": "bench", "transcript_path": str(transcript), "cwd": str(root)}
    prompt_ms, search_ms = [], []
    for i in range(runs):
        paused(env)
        prompt_ms.append(run_once([*hook, "prompt"], {**base, "prompt": prompts[i % len(prompts)]},
                                  root, env))
        paused(env)
        search_ms.append(run_once([*search, prompts[i % len(prompts)]], None, root, env))
    return {"prompt": stats(prompt_ms), "loremap search (CLI)": stats(search_ms)}


def through_daemon(root: Path, transcript: Path, prompts: list[str], runs: int,
                   env: dict[str, str]) -> dict[str, dict[str, float]]:
    from loremap import wire

    daemon = subprocess.Popen([sys.executable, "-m", "loremap.daemon"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not wire.wait_ready(env, 60):
            raise RuntimeError("the daemon did not start")
        figures = measure(root, transcript, prompts, runs, env, baselines=False)
        answer = wire.ask({"op": "status"}, env)
        if answer is not None:
            figures["daemon RSS (MB)"] = {"p50": answer["rss_kb"] / 1024, "p95": 0.0,
                                          "n": float(answer["requests"])}
        return figures
    finally:
        daemon.terminate()
        daemon.wait(60)


def report(title: str, figures: dict[str, dict[str, float]], start: float,
           targets: dict[str, tuple[float, float | None]]) -> None:
    print(title)
    for name, s in figures.items():
        if name.endswith("(MB)"):
            print(f"  {name:26} {s['p50']:7.1f} after {s['n']:.0f} requests")
            continue
        line = (f"  {name:26} p50 {s['p50']:7.1f}  p95 {s['p95']:7.1f}   "
                f"{s['p50'] / start:4.1f}x interpreter start")
        target = targets.get(name)
        if target is not None:
            p50_ok = s["p50"] <= target[0]
            p95_ok = target[1] is None or s["p95"] <= target[1]
            want = f"p50 <= {target[0]:g}" + (f", p95 <= {target[1]:g}" if target[1] else "")
            line += f"   {'PASS' if p50_ok and p95_ok else 'MISS'} ({want})"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--fresh", action="store_true", help="rebuild the cached corpus")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--no-daemon", action="store_true",
                        help="measure the hooks in their own process only")
    args = parser.parse_args()
    import compileall

    import loremap

    compileall.compile_dir(str(Path(loremap.__file__).parent), quiet=1)
    CACHE.mkdir(parents=True, exist_ok=True)
    django = fetch_django(CACHE)
    words = docs_words(django)
    cached_root, _, _ = corpus("10k", django, words, CACHE, args.fresh)
    prompts = [q for _, q in queries_for(cached_root, words, "10k", args.runs)]
    with tempfile.TemporaryDirectory(prefix="loremap-hooks-bench-") as tmp:
        scratch = Path(tmp)
        os.environ["LOREMAP_HOME"] = str(scratch / "home")
        root = scratch / "project"
        shutil.copytree(cached_root, root, symlinks=True)
        transcript = a_transcript(scratch)
        with closing(sqlite3.connect(root / ".loremap" / "index.sqlite")) as db:
            nodes = db.execute("SELECT count(*) FROM nodes").fetchone()[0]
        print(f"loremap bench/hooks.py — Python {sys.version.split()[0]}, {os.cpu_count()} CPUs,"
              f" {nodes:,} nodes, transcript {transcript.stat().st_size / 2**20:.1f} MB, "
              f"{args.runs} runs per event (whole processes, ms)")
        env = {**os.environ, "LOREMAP_DAEMON": "off"}
        figures = measure(root, transcript, prompts, args.runs, env)
        warm: dict[str, dict[str, float]] = {}
        fallback: dict[str, dict[str, float]] = {}
        if not args.no_daemon:
            auto = {**os.environ, "LOREMAP_DAEMON": "auto", "LOREMAP_DAEMON_IDLE_S": "600"}
            warm = through_daemon(root, transcript, prompts, args.runs, auto)
            fallback = measure_fallback(root, transcript, prompts, args.runs, auto)
    start = figures["python -c pass"]["p50"]
    report("in its own process (LOREMAP_DAEMON=off)", figures, start, TARGETS)
    if warm:
        report("through a warm daemon", warm, start, WARM_TARGETS)
        report("daemon on, none running (the fallback)", fallback, start, {})
    if args.json:
        args.json.write_text(json.dumps({"process": figures, "daemon": warm,
                                         "fallback": fallback}, indent=2) + "\n",
                             encoding="utf-8")


if __name__ == "__main__":
    main()
