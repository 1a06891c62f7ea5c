"""The parse workers' process pool, whose workers never outlive the process that started it.

A `ProcessPoolExecutor` worker waits for work on a pipe. With the fork start method every
worker inherits the write ends its siblings' pipes were created with, so when the parent is
SIGKILLed no worker ever reads end-of-file: it waits forever, holding the index open (issue 17:
two survivors in 8 of 13 kills of `loremap index`, alive 40 minutes later). The same inherited
descriptors make `multiprocessing.parent_process().sentinel` useless as a sign of death. So each
worker arms its own death in the pool's initializer:

- Linux: `prctl(PR_SET_PDEATHSIG, SIGKILL)` (through ctypes: the standard library has no
  binding). The kernel kills the worker when its parent exits, however it exits, with no delay
  and no thread. A parent that died before the call sends nothing (the worker was already
  re-parented), so the worker then checks that its parent is still the pool's owner.
- elsewhere (macOS, the BSDs), or if prctl is unavailable: a daemon thread polls
  `os.getppid()` every `WATCH_S` seconds and ends the worker once it no longer names the owner
  (re-parenting is the portable sign of a parent's death). A worker outlives its parent by at
  most that long.

Chosen over a process group of their own (the parent `killpg`s it on exit): SIGKILL runs no
exit code, so only the worker side can notice. Measured: tests/test_workers.py kills `loremap
index` while two workers parse; before this module both survived every run, now none does.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import ProcessPoolExecutor

WATCH_S = 1.0  # how often a worker without prctl looks at its parent
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def parse_pool(workers: int, setup: Callable[..., None] | None = None,
               args: tuple[object, ...] = ()) -> ProcessPoolExecutor:
    """A pool of `workers` processes that exit when this process dies; each then runs
    `setup(*args)` (the embedding workers load their model there)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing.context import BaseContext

    context: BaseContext = multiprocessing.get_context()
    if context.get_start_method() == "forkserver":
        # Trigger: the forkserver start method (Python 3.14's default on Linux).
        # Why: its workers are children of the fork server, not of us, so the owner check below
        # would end each one at once. Outcome: spawn, whose workers are our children.
        context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=context,
                               initializer=_start, initargs=(os.getpid(), setup, args))


def _start(owner: int, setup: Callable[..., None] | None, args: tuple[object, ...]) -> None:
    die_with(owner)
    if setup is not None:
        setup(*args)


def die_with(owner: int) -> None:
    """Worker initializer: end this process when `owner`, its parent, ends."""
    armed = _parent_death_signal()
    if os.getppid() != owner:  # the owner died before we got here: nobody will signal us
        os._exit(1)
    if not armed:
        # Trigger: not Linux, or prctl refused. Why: without the kernel's signal only polling
        # sees the parent go. Outcome: a watchdog thread, up to WATCH_S seconds late.
        threading.Thread(target=_watch, args=(owner,), name="parent-watch", daemon=True).start()


def _parent_death_signal() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError):  # no libc symbol table (static builds, odd libcs)
        return False


def _watch(owner: int) -> None:
    while os.getppid() == owner:
        time.sleep(WATCH_S)
    os._exit(1)
