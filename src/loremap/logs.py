"""The log file of the CLI, the MCP server and the hook: unexpected errors land here, with their
traceback."""

from __future__ import annotations

import datetime as dt
import os
import traceback
from pathlib import Path

from loremap.config import UserPaths


def log_path(name: str = "loremap.log") -> Path:
    return UserPaths.from_env().logs / name


def log_exception(exc: BaseException, name: str = "loremap.log") -> Path:
    """Append `exc` with its traceback to the log; return the log's path."""
    path = log_path(name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        text = "".join(traceback.format_exception(exc))
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{stamp} pid={os.getpid()} {type(exc).__name__}: {exc}\n{text}\n")
    except OSError:
        pass
    return path
