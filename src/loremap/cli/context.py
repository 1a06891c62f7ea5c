"""Where a command runs: its folder, its environment and where it prints.

In the `loremap` process these are the process's own. The daemon runs the read commands
(`search`, `map`, `show`, `list`) for a `loremap` process that handed them over, many at once
on its threads: each thread then has the caller's folder and environment, and prints into the
answer (`invoked`). The read commands take their folder, environment, output and App from here,
never from `Path.cwd()`, `os.environ` or `sys.stdout` directly.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TextIO

if TYPE_CHECKING:
    from loremap.app import App

# Lends a project's App for one command (the daemon's `Warm.use`).
Lender = Callable[[Path, Mapping[str, str]], contextlib.AbstractContextManager["App"]]


class Invocation(NamedTuple):
    cwd: Path
    environ: Mapping[str, str]
    out: TextIO
    err: TextIO
    lender: Lender | None


_local = threading.local()


def _current() -> Invocation | None:
    found: Invocation | None = getattr(_local, "invocation", None)
    return found


def cwd() -> Path:
    found = _current()
    return Path.cwd() if found is None else found.cwd


def environ() -> Mapping[str, str]:
    found = _current()
    return os.environ if found is None else found.environ


def out() -> TextIO:
    found = _current()
    return sys.stdout if found is None else found.out


def err() -> TextIO:
    found = _current()
    return sys.stderr if found is None else found.err


def quiet() -> bool:
    """Whether this command runs with `--quiet`: its result and its errors only."""
    return bool(getattr(_local, "quiet", False))


@contextlib.contextmanager
def quieted(on: bool) -> Iterator[None]:
    """Run this thread's command with `--quiet` on or off."""
    previous = quiet()
    _local.quiet = on
    try:
        yield
    finally:
        _local.quiet = previous


@contextlib.contextmanager
def invoked(where: Path, env: Mapping[str, str], stdout: TextIO, stderr: TextIO,
            lender: Lender | None = None) -> Iterator[None]:
    """Run this thread's commands in `where` with `env`, printing to `stdout` and `stderr`."""
    previous = _current()
    _local.invocation = Invocation(where, env, stdout, stderr, lender)
    try:
        yield
    finally:
        _local.invocation = previous


@contextlib.contextmanager
def open_app(require_project: bool = True) -> Iterator[App]:
    """The App of the command's project: the daemon's warm one when it lends them and there is
    a project, else opened for this command and closed after it."""
    from loremap.app import App
    from loremap.config import LOREMAP_DIR, find_project_root

    found = _current()
    if found is not None and found.lender is not None:
        root = find_project_root(found.cwd, found.environ)
        if root is not None and (root / LOREMAP_DIR).is_dir():
            with found.lender(root, found.environ) as app:
                yield app
            return
    with App.open(cwd(), environ(), require_project=require_project) as app:
        yield app
