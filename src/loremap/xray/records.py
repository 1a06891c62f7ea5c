"""The X-ray report as typed, immutable records, and its JSON (`loremap xray --json`).

`report.py` builds a `Report`; the terminal view, the HTML page, the recommendations and the
CLI read its fields by name, so a renamed field fails mypy and the tests instead of reading as
an empty value, as a key of a plain dict did. `report_json` is the one place the records
become JSON: its shape (keys, nesting, rounding) is what `--json` always printed, and a test
pins its top-level keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from loremap.xray.transcripts import Compaction, Usage

Json = dict[str, object]


class Cost(NamedTuple):
    """What a set of calls (a model's, a project's, a day's, a session's) used and cost."""

    calls: int
    usage: Usage
    equiv: float  # input-token equivalents, rounded to 0.1
    usd: float  # dollars of the priced calls, rounded to 1e-6
    unpriced_calls: int  # calls whose model has no price

    @property
    def priced_usd(self) -> float | None:
        """The dollars, or None when no call has a price (never 0 for an unknown model)."""
        return None if self.unpriced_calls and self.unpriced_calls >= self.calls else self.usd


class UsageRow(NamedTuple):
    """One line of the by-model, by-project or by-day tables."""

    name: str
    cost: Cost
    cwd: str = ""  # a project's working directory, when a transcript named it


class SessionRow(NamedTuple):
    session: str
    project: str
    cwd: str
    start: str
    end: str
    model: str  # the model most of its calls used
    cost: Cost
    peak_context: int
    subagents: int
    fixed_context: int
    compactions: tuple[Compaction, ...]
    curve: tuple[tuple[int, int], ...]  # (call number, prompt tokens) of the main thread


class Shares(NamedTuple):
    """Shares of the equivalents by kind of token, and the share of the big sessions."""

    cache_read: float
    cache_write: float
    output: float
    input: float
    big_sessions: float


class Unpriced(NamedTuple):
    model: str
    calls: int


class ReplayRow(NamedTuple):
    threshold: int
    equiv: float
    saving: float
    saving_share: float
    compactions: int


class Replay(NamedTuple):
    handoff_tokens: int
    real_equiv: float
    thresholds: tuple[ReplayRow, ...]
    best: int | None  # the threshold that saves the most, if any saves

    @property
    def best_row(self) -> ReplayRow | None:
        return next((r for r in self.thresholds if r.threshold == self.best), None)


class FixedContext(NamedTuple):
    sessions: int
    median: int
    min: int
    max: int
    parts: Mapping[str, int]  # itemised part -> median tokens
    memory_files: Mapping[str, int]  # CLAUDE.md and the like on disk -> tokens
    calls: int  # calls of the measured sessions (each re-reads the fixed context)


class ToolRow(NamedTuple):
    name: str
    server: str | None  # the MCP server of an `mcp__<server>__<tool>` tool
    calls: int


class ServerRow(NamedTuple):
    name: str
    calls: int


class Recommendation(NamedTuple):
    title: str
    saving_equiv: float
    saving_share: float
    saving_usd: float | None  # None when nothing is priced
    detail: str


class Report(NamedTuple):
    generated_at: str
    root: str
    days: int
    since: str | None
    files: int
    problems: Mapping[str, int]
    totals: Cost
    shares: Shares
    by_model: tuple[UsageRow, ...]
    by_project: tuple[UsageRow, ...]
    by_day: tuple[UsageRow, ...]
    sessions: tuple[SessionRow, ...]
    session_count: int
    unpriced_models: tuple[Unpriced, ...]
    prices: str
    replay: Replay
    fixed_context: FixedContext
    tools: tuple[ToolRow, ...]
    mcp_servers: tuple[ServerRow, ...]
    unused_servers: tuple[str, ...]
    recommendations: tuple[Recommendation, ...]


def report_json(report: Report) -> Json:
    """`report` as the JSON `loremap xray --json` prints."""
    return {
        "generated_at": report.generated_at, "root": report.root, "days": report.days,
        "since": report.since, "files": report.files, "problems": dict(report.problems),
        "totals": _cost(report.totals), "shares": report.shares._asdict(),
        "by_model": [_row(r, "model") for r in report.by_model],
        "by_project": [{**_row(r, "project"), "cwd": r.cwd} for r in report.by_project],
        "by_day": [_row(r, "day") for r in report.by_day],
        "sessions": [_session(s) for s in report.sessions],
        "session_count": report.session_count,
        "unpriced_models": [m._asdict() for m in report.unpriced_models],
        "prices": report.prices,
        "replay": {"handoff_tokens": report.replay.handoff_tokens,
                   "real_equiv": report.replay.real_equiv,
                   "thresholds": [r._asdict() for r in report.replay.thresholds],
                   "best": report.replay.best},
        "fixed_context": {**report.fixed_context._asdict(),
                          "parts": dict(report.fixed_context.parts),
                          "memory_files": dict(report.fixed_context.memory_files)},
        "tools": [t._asdict() for t in report.tools],
        "mcp_servers": [s._asdict() for s in report.mcp_servers],
        "unused_servers": list(report.unused_servers),
        "recommendations": [{**r._asdict(), "saving_usd": None if r.saving_usd is None
                             else round(r.saving_usd, 2)} for r in report.recommendations],
    }


def _cost(cost: Cost) -> Json:
    return {"calls": cost.calls, **cost.usage._asdict(), "equiv": cost.equiv, "usd": cost.usd,
            "unpriced_calls": cost.unpriced_calls}


def _row(row: UsageRow, key: str) -> Json:
    return {key: row.name, **_cost(row.cost)}


def _session(s: SessionRow) -> Json:
    return {"session": s.session, "project": s.project, "cwd": s.cwd, "start": s.start,
            "end": s.end, "model": s.model, **_cost(s.cost), "peak_context": s.peak_context,
            "subagents": s.subagents, "fixed_context": s.fixed_context,
            "compactions": [{"at": c.timestamp, "trigger": c.trigger,
                             "pre_tokens": c.pre_tokens, "after_calls": c.after_calls}
                            for c in s.compactions],
            "curve": [list(point) for point in s.curve]}
