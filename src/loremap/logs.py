"""The log files: one writer for the CLI, the MCP server and the hook.

Unexpected errors land in `<logs>/loremap.log` (the CLI) or the server's log with their
traceback; the hook, which must fail open without a word on stdout, writes one line per failure
to `<logs>/hook.log`. Every entry is one append of a UTC timestamp and its text. Standard library
only, and cheap to import (`traceback` is loaded only to format an exception): the hook runs it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from loremap.config import UserPaths


def log_path(name: str = "loremap.log", environ: Mapping[str, str] | None = None) -> Path:
    return UserPaths.from_env(environ).logs / name


def append(name: str, text: str, environ: Mapping[str, str] | None = None) -> Path:
    """Append `text` after a UTC timestamp to the log file `name`; return its path.

    Never raises: a log that cannot be written must not turn one failure into two.
    """
    import datetime as dt

    path = log_path(name, environ)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{stamp} {text}\n")
    except OSError:
        pass
    return path


def log_line(name: str, message: str, environ: Mapping[str, str] | None = None) -> Path:
    """Append `message` as one line (its whitespace, newlines included, folded to spaces)."""
    return append(name, " ".join(message.split()), environ)


def log_exception(exc: BaseException, name: str = "loremap.log") -> Path:
    """Append `exc` with its traceback to the log; return the log's path."""
    import traceback

    text = "".join(traceback.format_exception(exc))
    return append(name, f"pid={os.getpid()} {type(exc).__name__}: {exc}\n{text}")
