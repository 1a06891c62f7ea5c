"""The daemon's memory: resident size idle, after 1,000 recalls over three projects, and over a
loop of requests (a leak would grow it minute after minute).

    python bench/daemon.py [--recalls 1000] [--minutes 10] [--json OUT]

The projects are three copies of bench/search.py's 10k corpus (Django 5.1.4's code plus
generated notes, ~10k nodes each; built once under /tmp/loremap-bench-corpora). Requests are
prompt-hook events sent over the daemon's socket from this process (`loremap.wire.ask`), the
questions of bench/search.py's query set in turn, the projects in turn; every 50th is a
session start, every 10th a pre-tool event. Printed: the daemon's RSS (from its `status`)
before any project is open, after the first request to each project, after `--recalls`
recalls, then once a minute of the loop with the requests per second; and the p50/p95 of a
recall as the daemon answers it (socket round trip included, no process start).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from codemap import fetch_django  # noqa: E402
from loremap import wire  # noqa: E402
from search import CACHE, corpus, docs_words, queries_for  # noqa: E402
from vault import percentile  # noqa: E402


def status(env: dict[str, str]) -> dict[str, Any]:
    answer = wire.ask({"op": "status"}, env, connect_s=1.0, answer_s=30.0)
    if answer is None:
        raise RuntimeError("the daemon does not answer")
    return answer


def mb(env: dict[str, str]) -> float:
    return float(status(env)["rss_kb"]) / 1024


def event(env: dict[str, str], root: Path, number: int, question: str) -> float:
    base = {"session_id": f"bench-{number % 7}", "cwd": str(root)}
    if number % 50 == 0:
        name, payload = "session-start", {**base, "source": "startup"}
    elif number % 10 == 0:
        name, payload = "pre-tool", {**base, "tool_name": "Read",
                                     "tool_input": {"file_path": str(root / "setup.py")}}
    else:
        name, payload = "prompt", {**base, "prompt": question}
    start = time.perf_counter()
    answer = wire.ask({"op": "hook", "event": name, "payload": json.dumps(payload),
                       "env": env}, env)
    if answer is None or not answer.get("ok"):
        raise RuntimeError(f"the daemon did not answer {name}: {answer}")
    return (time.perf_counter() - start) * 1000 if name == "prompt" else -1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recalls", type=int, default=1000)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    django = fetch_django(CACHE)
    words = docs_words(django)
    cached_root, _, _ = corpus("10k", django, words, CACHE, False)
    questions = [q for _, q in queries_for(cached_root, words, "10k", 200)]
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="loremap-daemon-bench-") as tmp:
        scratch = Path(tmp)
        roots = []
        for n in range(3):
            root = scratch / f"project-{n}"
            shutil.copytree(cached_root, root, symlinks=True)
            roots.append(root)
        env = {k: v for k, v in os.environ.items() if k != "LOREMAP_DAEMON"}
        env.update(LOREMAP_HOME=str(scratch / "home"), LOREMAP_DAEMON_IDLE_S="3600")
        daemon = subprocess.Popen([sys.executable, "-m", "loremap.daemon"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if not wire.wait_ready(env, 60):
                raise RuntimeError("the daemon did not start")
            time.sleep(3)  # the SDK's background import settles
            figures["idle_mb"] = mb(env)
            for n, root in enumerate(roots):
                event(env, root, 1, questions[n])
            figures["open_mb"] = mb(env)
            times = [t for n in range(args.recalls)
                     if (t := event(env, roots[n % 3], n + 1, questions[n % len(questions)]))
                     >= 0]
            figures["after_recalls_mb"] = mb(env)
            figures["recall_ms"] = {"p50": statistics.median(times),
                                    "p95": percentile(times, 0.95), "n": len(times)}
            print(f"loremap bench/daemon.py — Python {sys.version.split()[0]}, "
                  f"{os.cpu_count()} CPUs, 3 projects of ~10k nodes")
            print(f"  RSS idle (no project open)          {figures['idle_mb']:7.1f} MB")
            print(f"  RSS with the 3 projects open        {figures['open_mb']:7.1f} MB")
            print(f"  RSS after {args.recalls:,} events              "
                  f"{figures['after_recalls_mb']:7.1f} MB")
            print(f"  prompt through the socket: p50 {figures['recall_ms']['p50']:.1f} ms, "
                  f"p95 {figures['recall_ms']['p95']:.1f} ms over {len(times)} prompts")
            loop: list[dict[str, float]] = []
            end = time.monotonic() + args.minutes * 60
            number = args.recalls
            while time.monotonic() < end:
                minute = time.monotonic() + 60
                done = 0
                while time.monotonic() < min(minute, end):
                    number += 1
                    event(env, roots[number % 3], number, questions[number % len(questions)])
                    done += 1
                loop.append({"mb": mb(env), "per_s": done / 60})
                print(f"  loop minute {len(loop):2}: RSS {loop[-1]['mb']:7.1f} MB, "
                      f"{loop[-1]['per_s']:.0f} events/s")
            figures["loop"] = loop
            if len(loop) >= 2:
                growth = loop[-1]["mb"] - loop[0]["mb"]
                print(f"  growth from the loop's first minute to its last: {growth:+.1f} MB")
        finally:
            daemon.terminate()
            daemon.wait(60)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
