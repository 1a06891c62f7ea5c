"""HTTP sessions and the daemon's memory: what N MCP sessions opened and left idle cost
`loremap serve --http`, with the session cap and idle expiry and with the settings before them.

    python bench/http_sessions.py [--sessions 10000] [--cap 1000] [--idle 2] [--threads 4]
                                  [--json OUT]

Each run starts `loremap serve --http 127.0.0.1:0` on a scratch project (LOREMAP_HOME in the
scratch dir) and opens `--sessions` sessions the way an MCP client does (`initialize`, then
`notifications/initialized`), from `--threads` keep-alive connections at once, and leaves them
idle: never a DELETE, as a client that crashed or forgot. Three runs, in this order:
1. expiring: `serve.max_sessions` = --cap, `serve.session_idle_s` = --idle (short, so that the
   expiry is seen within the run);
2. defaults: the shipped settings (1,000 sessions, 30 minutes): no session expires during the
   run, the cap alone bounds the memory and refuses the rest;
3. before: the limits before issue 17, the SDK's defaults (10,000 sessions, 30 minutes), under
   which no session ends during the run (the warm-up's 100 make the last 100 refused).
Printed for each: the server's resident memory (VmRSS, /proc: Linux only) after 100 warm-up
sessions, after each tenth of the sessions, at the end and once the idle expiry has passed
(--idle + 2 s later), and how many sessions were opened and refused (503 at the cap). The
client shares the 2 cores with the server; the machines are shared and noisy: read the shape.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
READY = re.compile(r"http://127\.0\.0\.1:(\d+)/mcp")
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"}}})
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
WARM_UP = 100
BEFORE = {"LOREMAP_HTTP_MAX_SESSIONS": "10000", "LOREMAP_HTTP_SESSION_IDLE_S": "1800"}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def make_project(scratch: Path) -> Path:
    root = scratch / "project"
    root.mkdir()
    (root / "README.md").write_text("# bench\n", encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"}
    for args in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "i"],
                 [sys.executable, "-m", "loremap", "init"]):
        subprocess.run(args, cwd=root, env=env, check=True, capture_output=True)
    return root


class Server:
    """`loremap serve --http` with `env`; its port once it listens, its stderr counted."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "loremap", "serve", "--http",
                                      "127.0.0.1:0"], cwd=root, env={**os.environ, **env},
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, encoding="utf-8")
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        found = READY.search(line)
        if not found:
            self.stop()
            raise RuntimeError(f"loremap serve --http did not start: {line}")
        self.port = int(found.group(1))
        self.other: list[str] = []  # what it logs beyond the SDK's refusals
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if "Refusing to open a new session" not in line:
                self.other.append(line.rstrip())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def open_session(conn: http.client.HTTPConnection) -> bool:
    """One session opened and left idle: True, or False when the server refused it (503)."""
    conn.request("POST", "/mcp", INITIALIZE, HEADERS)
    response = conn.getresponse()
    response.read()
    if response.status == 503:
        return False
    session = response.getheader("mcp-session-id")
    if response.status != 200 or not session:
        raise RuntimeError(f"initialize answered {response.status}")
    conn.request("POST", "/mcp", INITIALIZED, {**HEADERS, "mcp-session-id": session})
    conn.getresponse().read()
    return True


def open_many(port: int, count: int, threads: int) -> tuple[int, int]:
    """`count` sessions from `threads` connections at once -> (opened, refused)."""
    tally = [0, 0]
    lock = threading.Lock()
    failures: list[BaseException] = []

    def worker(share: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            for _ in range(share):
                opened = open_session(conn)
                with lock:
                    tally[0 if opened else 1] += 1
        except BaseException as exc:  # reported below, in the main thread
            failures.append(exc)
        finally:
            conn.close()

    shares = [count // threads + (i < count % threads) for i in range(threads)]
    pool = [threading.Thread(target=worker, args=(s,)) for s in shares]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if failures:
        raise failures[0]
    return tally[0], tally[1]


def one_run(root: Path, env: dict[str, str], sessions: int, threads: int, idle: float
            ) -> dict[str, Any]:
    server = Server(root, env)
    try:
        pid = server.proc.pid
        open_many(server.port, WARM_UP, threads)
        rss = {"start": rss_mb(pid)}
        opened = refused = 0
        started = time.perf_counter()
        for tenth in range(1, 11):
            step = sessions * tenth // 10 - sessions * (tenth - 1) // 10
            done, no = open_many(server.port, step, threads)
            opened, refused = opened + done, refused + no
            rss[f"{tenth * 10}%"] = rss_mb(pid)
        seconds = time.perf_counter() - started
        time.sleep(idle + 2)  # let the idle expiry pass: what is left is what stays
        rss["after idle"] = rss_mb(pid)
        return {"rss_mb": rss, "opened": opened, "refused": refused,
                "seconds": round(seconds, 1), "logged": server.other}
    finally:
        server.stop()


def show(name: str, run: dict[str, Any]) -> None:
    rss = run["rss_mb"]
    grown = rss["100%"] - rss["start"]
    print(f"\n{name}: {run['opened']:,} sessions opened, {run['refused']:,} refused (503), "
          f"{run['seconds']} s; resident memory (MB):")
    print("  " + "  ".join(f"{k} {v:.0f}" for k, v in rss.items()))
    print(f"  grew {grown:+.0f} MB over the sessions ({grown * 1024 / max(run['opened'], 1):.1f}"
          f" kB per session opened); {rss['after idle'] - rss['start']:+.0f} MB once idle")
    for line in run["logged"][:3]:
        print(f"  server said: {line}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--cap", type=int, default=1000, help="serve.max_sessions (expiring run)")
    parser.add_argument("--idle", type=float, default=2.0,
                        help="serve.session_idle_s of the expiring run, seconds")
    parser.add_argument("--threads", type=int, default=4, help="connections at once")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if not Path("/proc/self/status").exists():
        sys.exit("bench/http_sessions.py reads the server's memory from /proc: Linux only")
    print(f"loremap bench/http_sessions.py — Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs")
    command = shlex.join(["python", "bench/http_sessions.py", *sys.argv[1:]])
    print(f"command: cd {REPO} && {command}")
    scratch = Path(tempfile.mkdtemp(prefix="httpsessions-"))
    try:
        os.environ["LOREMAP_HOME"] = str(scratch / "home")
        root = make_project(scratch)
        expiring = {"LOREMAP_HTTP_MAX_SESSIONS": str(args.cap),
                    "LOREMAP_HTTP_SESSION_IDLE_S": str(args.idle)}
        report = {name: one_run(root, env, args.sessions, args.threads, args.idle)
                  for name, env in (("expiring", expiring), ("defaults", {}), ("before", BEFORE))}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    show(f"expiring (cap {args.cap:,}, idle expiry {args.idle:g} s)", report["expiring"])
    show("defaults (cap 1,000, idle expiry 30 min)", report["defaults"])
    show("before (cap 10,000, idle expiry 30 min: the SDK's defaults)", report["before"])
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
