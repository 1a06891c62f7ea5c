"""Parse workers die with the process that started them: `loremap index` SIGKILLed while its
workers parse leaves no process behind (issue 17: two survivors in 8 of 13 kills, alive 40 min
later and holding the index open).

Linux only: the processes are found through /proc (the children of the killed process whose
command line is its own, as forked workers' is)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

PROC = Path("/proc")
FILES = 400  # enough that parsing outlasts the polling below by far (~10 s with 2 workers)


def stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after the command name: state, ppid, ... (None: no such process)."""
    try:
        text = (PROC / str(pid) / "stat").read_text(encoding="utf-8")
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def cmdline(pid: int) -> bytes:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def workers_of(parent: int) -> dict[int, str]:
    """The worker processes of `parent`: children running its own command line, by pid, with
    their start time (field 22 of stat), which tells a reused pid from the same process."""
    own = cmdline(parent)
    found: dict[int, str] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = stat_fields(int(entry.name))
        if fields and fields[1] == str(parent) and cmdline(int(entry.name)) == own:
            found[int(entry.name)] = fields[19]
    return found


def alive(pid: int, started: str) -> bool:
    """Still running: the same process (same start time) and not a zombie (a zombie has exited
    and holds nothing open; reaping it is init's job, which a container's may not do)."""
    fields = stat_fields(pid)
    return fields is not None and fields[19] == started and fields[0] not in ("Z", "X")


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {timeout:.0f} s waiting for {what}")
        time.sleep(0.01)


def source(i: int) -> str:
    body = "\n".join(f"    def method_{j}(self, value: int) -> int:\n"
                     f"        return value * {j} + helper_{i}(value)\n" for j in range(60))
    return f'"""Module {i}."""\n\nimport os\n\n\ndef helper_{i}(x):\n    return x\n\n\n' \
           f"class Thing{i}:\n{body}\n"


@pytest.mark.slow
def test_sigkill_of_index_while_workers_parse_leaves_no_worker_alive(
        project: Path, cli: Callable[..., Result]) -> None:
    for i in range(FILES):
        path = project / "pkg" / f"m{i // 50}" / f"mod_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source(i), encoding="utf-8")
    env = {**os.environ, "LOREMAP_WORKERS": "2"}
    proc = subprocess.Popen([sys.executable, "-m", "loremap", "index", "--json"], cwd=project,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: dict[int, str] = {}
    try:
        def two_workers() -> bool:
            assert proc.poll() is None, "the index finished before its workers were seen"
            seen.update(workers_of(proc.pid))
            return len(seen) >= 2

        wait_for(two_workers, 60, "the parse workers to start")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        wait_for(lambda: not any(alive(pid, t) for pid, t in seen.items()), 30,
                 f"the workers {sorted(seen)} to exit after their parent was killed")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid, started in seen.items():  # survivors of a failed run: this test started them
            if alive(pid, started):
                os.kill(pid, signal.SIGKILL)


WATCHED_CHILD = """
import os, sys, time
from loremap.codemap import pool
pool._parent_death_signal = lambda: False  # as on macOS: only the watchdog thread is left
owner = os.getpid()
pid = os.fork()
if pid == 0:
    pool.die_with(owner)
    print(os.getpid(), flush=True)  # armed: the parent may be killed from now on
    while True:
        time.sleep(60)
time.sleep(600)
"""


def test_without_prctl_the_watchdog_ends_a_worker_whose_parent_was_killed(tmp_path: Path
                                                                          ) -> None:
    parent = subprocess.Popen([sys.executable, "-c", WATCHED_CHILD], cwd=tmp_path,
                              stdout=subprocess.PIPE, text=True)
    child, started = 0, ""
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        fields = stat_fields(child)
        assert fields is not None and fields[1] == str(parent.pid)
        started = fields[19]
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        wait_for(lambda: not alive(child, started), 30, "the watched worker to exit")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if child and alive(child, started):
            os.kill(child, signal.SIGKILL)
        if parent.stdout is not None:
            parent.stdout.close()


def test_a_worker_whose_owner_is_already_gone_exits_at_once(tmp_path: Path) -> None:
    # The owner died between the fork and the initializer: no death signal will ever come.
    code = ("import os; from loremap.codemap.pool import die_with; "
            "die_with(os.getppid() + 1); print('survived')")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert (result.returncode, result.stdout) == (1, "")
