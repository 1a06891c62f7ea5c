"""The dashboard: cold start to first paint, the graph's render at 1k, 10k and 50k nodes, and
the API's p95 at 10k nodes.

    python bench/dashboard.py [--runs 5] [--requests 100] [--fresh] [--json OUT]

The project is bench/search.py's 10k corpus (Django 5.1.4's code plus generated notes, ~10k
nodes; built once under /tmp/loremap-bench-corpora, `--fresh` rebuilds), copied to a scratch
folder. The browser is Debian's headless chromium driven by Playwright (`executable_path`;
nothing is downloaded), 1280x860, one tab.

Measured:
  - cold start to first paint: `loremap dashboard --port 0` started as a new process
    (`LOREMAP_DAEMON=off`) until it listens, and until the graph's first frame in the browser
    (the page loaded, /api/graph answered, Cytoscape drawn); then the same through a warm
    daemon (the second start, its App already open). Baseline: the interpreter's start.
  - the graph at 1k, 10k and 50k nodes: graphs generated like a project's (modules, files with
    a skewed PageRank, notes, three edges a node; tests/test_dashboard_browser.py's
    `generated`) fed to the page's `renderGraph`, in full and as the page draws them by default
    (the top of the ranking past its LIMIT): the time to the first frame, and the frame times
    while zooming in from the whole graph and back (80 frames; fluid is a median under 50 ms
    with a p90 under 100 ms). The zoom frames measure the renderer alone (no layout).
  - the API at 10k nodes, over HTTP from one client, sequential: `/api/search` with
    bench/search.py's questions, `/api/node` of as many notes and files, p50 and p95; the same
    use cases called in process are the baseline (the cost of HTTP and JSON is the ratio).
Machines are shared and noisy: read medians and ratios, never one run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from contextlib import closing
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from codemap import fetch_django  # noqa: E402
from search import CACHE, corpus, docs_words, queries_for  # noqa: E402
from vault import percentile  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SIZES = (1_000, 10_000, 50_000)
ZOOM = """() => new Promise((done) => {
  const cy = window.loremapDashboard.cy; cy.fit();
  const times = []; let last = performance.now(); let i = 0;
  function step() {
    const now = performance.now(); times.push(now - last); last = now;
    cy.zoom({level: cy.zoom() * (i < 40 ? 1.06 : 1 / 1.06), renderedPosition: {x: 640, y: 400}});
    if (++i < 80) requestAnimationFrame(step);
    else { times.shift(); times.sort((a, b) => a - b);
           done([times[Math.floor(times.length / 2)], times[Math.floor(times.length * 0.9)]]); }
  }
  requestAnimationFrame(step); })"""


def start(root: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str, float]:
    """`loremap dashboard --port 0` in `root`: the process, its URL and the seconds until it
    listened."""
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "loremap", "dashboard", "--port", "0"],
                            cwd=root, env=env, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
    if not match:
        raise SystemExit(f"the dashboard did not start: {line}{proc.stderr.read()}")
    return proc, match.group(1), time.perf_counter() - began


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    if proc.stderr is not None:
        proc.stderr.close()


def cold_start(browser: Any, root: Path, env: dict[str, str], runs: int
               ) -> dict[str, list[float]]:
    """Seconds to listen and to the graph's first frame, `runs` times."""
    out: dict[str, list[float]] = {"listen": [], "paint": [], "nodes": [], "api": [],
                                   "draw": []}
    for _ in range(runs):
        began = time.perf_counter()
        proc, url, listened = start(root, env)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            page.goto(url)
            page.wait_for_selector("body[data-graph='ready']", timeout=300_000)
            out["paint"].append(time.perf_counter() - began)
            out["listen"].append(listened)
            out["nodes"].append(float(page.evaluate("document.body.dataset.nodes")))
            out["draw"].append(float(page.evaluate("document.body.dataset.drawMs")) / 1000)
            out["api"].append(page.evaluate(
                "performance.getEntriesByType('resource').filter(e => e.name.includes("
                "'api/graph')).map(e => e.responseEnd - e.requestStart)[0]") / 1000)
            page.close()
        finally:
            stop(proc)
    return out


def renders(browser: Any, url: str, runs: int) -> list[dict[str, Any]]:
    from test_dashboard_browser import generated

    page = browser.new_page(viewport={"width": 1280, "height": 860})
    page.set_default_timeout(600_000)
    page.goto(url + "#graph")
    page.wait_for_selector("body[data-graph='ready']")
    limit = int(page.evaluate("window.loremapDashboard.LIMIT"))
    rows = []
    for size in SIZES:
        data = generated(size)
        for mode, options in (("full", {"limit": 10**9}), ("default", {})):
            if mode == "default" and size <= limit:
                continue
            times, frames, p90s, drawn = [], [], [], 0
            for _ in range(runs if size < 50_000 or mode == "default" else 1):
                r = page.evaluate("([d, o]) => window.loremapDashboard.renderGraph(d, o)",
                                  [data, options])
                frame, p90 = page.evaluate(ZOOM)
                times.append(r["ms"])
                frames.append(frame)
                p90s.append(p90)
                drawn = r["nodes"]
            rows.append({"nodes": size, "mode": mode, "drawn": drawn,
                         "render_ms": statistics.median(times),
                         "frame_ms": statistics.median(frames), "frame_p90_ms":
                         statistics.median(p90s)})
            print(f"  {size:>6,} nodes {mode:<7} drew {drawn:>6,}: first frame "
                  f"{statistics.median(times):8.0f} ms; zoom frames median "
                  f"{statistics.median(frames):6.1f} ms, p90 {statistics.median(p90s):6.1f} ms",
                  flush=True)
    page.close()
    return rows


def get(url: str) -> tuple[float, Any]:
    began = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as answer:
        body = json.load(answer)
    return time.perf_counter() - began, body


def api(url: str, questions: list[str], ids: list[str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"search": [], "node": []}
    get(f"{url}api/search?q=warm+up")
    for q in questions:
        out["search"].append(get(f"{url}api/search?{urllib.parse.urlencode({'q': q})}")[0])
    for node_id in ids:
        out["node"].append(get(f"{url}api/node?{urllib.parse.urlencode({'id': node_id})}")[0])
    for name in ("graph", "health", "timeline"):
        out[name] = [get(f"{url}api/{name}")[0]]
    return out


def in_process(root: Path, questions: list[str], ids: list[str]) -> dict[str, list[float]]:
    """The same use cases called in this process on one open App (the baseline)."""
    from loremap.app import App
    from loremap.use.fresh import SERVER
    from loremap.use.notes import read
    from loremap.use.recall import Question, recall

    out: dict[str, list[float]] = {"search": [], "node": []}
    with App.open(root) as app:
        recall(app, Question("warm up"), SERVER)
        for q in questions:
            began = time.perf_counter()
            recall(app, Question(q), SERVER)
            out["search"].append(time.perf_counter() - began)
        for node_id in ids:
            began = time.perf_counter()
            read(app, node_id, SERVER)
            out["node"].append(time.perf_counter() - began)
    return out


def line(name: str, values: list[float], base: list[float] | None = None) -> str:
    p50, p95 = percentile(values, 0.5) * 1000, percentile(values, 0.95) * 1000
    ratio = (f"  ({p50 / (percentile(base, 0.5) * 1000):.2f}x in process)"
             if base else "")
    return f"  {name:<9} p50 {p50:8.1f} ms  p95 {p95:8.1f} ms  n={len(values)}{ratio}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--fresh", action="store_true", help="rebuild the cached corpus")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    CACHE.mkdir(parents=True, exist_ok=True)
    django = fetch_django(CACHE)
    words = docs_words(django)
    cached, _, _ = corpus("10k", django, words, CACHE, args.fresh)
    questions = [q for _, q in queries_for(cached, words, "10k", args.requests)]
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="loremap-dashboard-bench-") as tmp:
        scratch = Path(tmp)
        root = scratch / "project"
        shutil.copytree(cached, root, symlinks=True)
        with closing(sqlite3.connect(root / ".loremap" / "index.sqlite")) as db:
            nodes = db.execute("SELECT count(*) FROM nodes").fetchone()[0]
            rows = db.execute("SELECT id FROM nodes WHERE kind IN ('note', 'file') ORDER BY id"
                              ).fetchall()
        ids = random.Random(7).sample([r[0] for r in rows], min(args.requests, len(rows)))
        env = {**os.environ, "LOREMAP_HOME": str(scratch / "home"), "LOREMAP_DAEMON": "off"}
        os.environ["LOREMAP_HOME"] = env["LOREMAP_HOME"]
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        python = time.perf_counter() - started
        print(f"loremap bench/dashboard.py — Python {sys.version.split()[0]}, {os.cpu_count()} "
              f"CPUs, {nodes:,} nodes; chromium {CHROMIUM}", flush=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            cold = cold_start(browser, root, env, args.runs)
            daemon = {**env, "LOREMAP_DAEMON": "auto", "LOREMAP_DAEMON_IDLE_S": "600"}
            warm = cold_start(browser, root, daemon, args.runs + 1)
            warm = {k: v[1:] for k, v in warm.items()}  # the first start opened the App
            subprocess.run([sys.executable, "-m", "loremap", "daemon", "stop"], cwd=root,
                           env=daemon, capture_output=True)
            print(f"cold start to first paint ({args.runs} runs; python -c pass "
                  f"{python * 1000:.0f} ms; the graph drew {cold['nodes'][0]:.0f} nodes):")
            for name, found in (("own process", cold), ("warm daemon", warm)):
                median = {k: statistics.median(v) * 1000 for k, v in found.items()}
                print(f"  {name:<12} listening {median['listen']:6.0f} ms, first paint "
                      f"{median['paint']:6.0f} ms (of which /api/graph {median['api']:5.0f} ms, "
                      f"drawing {median['draw']:5.0f} ms)")
            proc, url, _ = start(root, env)
            try:
                print("graph render (generated graphs, medians):", flush=True)
                figures["render"] = renders(browser, url, max(1, args.runs // 2))
                print(f"API at {nodes:,} nodes, {args.requests} requests each:", flush=True)
                served = api(url, questions, ids)
            finally:
                stop(proc)
            browser.close()
        base = in_process(root, questions, ids)
    for name in ("search", "node"):
        print(line(name, served[name], base[name]))
    for name in ("graph", "health", "timeline"):
        print(f"  {name:<9} {served[name][0] * 1000:8.1f} ms (one request)")
    figures.update({"cold": cold, "warm": warm, "api": served, "in_process": base,
                    "python_s": python})
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
