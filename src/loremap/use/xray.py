"""The X-ray's report of the agents' transcripts, for `loremap xray` and the dashboard's
tokens page: one function, so both read the same transcripts over the same period."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loremap.xray.records import Report


def report(project: Path | None, days: int, prices: Path | None = None,
           progress: Callable[[int, int], None] | None = None,
           environ: Mapping[str, str] | None = None) -> Report:
    """The report of Claude Code's transcripts (of `project` only, when given) of the last
    `days` days (0: all), priced by `prices` (None: the shipped table)."""
    import datetime as dt
    import time

    from loremap.xray.costs import Prices
    from loremap.xray.report import build
    from loremap.xray.transcripts import read_all, transcripts_root

    root = transcripts_root(environ)
    since = time.time() - days * 86400 if days else None
    chains = read_all(root, project, since, progress)
    return build(chains, Prices.load(prices), days, root, dt.datetime.now(dt.UTC))
