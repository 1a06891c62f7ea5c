"""The X-ray's numbers: one streaming pass over the transcripts into the report.

Chains (a session's main thread and its sub-agents) arrive one file at a time; each is
tallied into totals per model, project, day and session, replayed under every compaction
threshold, and dropped. What stays in memory is one summary per session (with its context
curve cut to at most `CURVE_POINTS` points), so memory follows the largest session, not the
corpus. The report is a `records.Report`: `--json` prints `records.report_json` of it, the
terminal and HTML views render it.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from loremap.xray.costs import Prices, equivalents
from loremap.xray.records import (
    Cost,
    Replay,
    ReplayRow,
    Report,
    SessionRow,
    Shares,
    Unpriced,
    UsageRow,
)
from loremap.xray.replay import HANDOFF, THRESHOLDS, fixed_context, policy_cost, real_cost
from loremap.xray.transcripts import Call, Chain, Compaction, Usage, home_dir

BIG_SESSION = 150_000
CURVE_POINTS = 120
TOP_SESSIONS = 50


class _Tally:
    __slots__ = ("calls", "usage", "usd", "unpriced")

    def __init__(self) -> None:
        self.calls = 0
        self.usage = Usage()
        self.usd = 0.0
        self.unpriced = 0  # calls without a price

    def add(self, call: Call, usd: float | None) -> None:
        self.calls += 1
        self.usage = self.usage.plus(call.usage)
        if usd is None:
            self.unpriced += 1
        else:
            self.usd += usd

    def record(self) -> Cost:
        return Cost(self.calls, self.usage, round(equivalents(self.usage), 1),
                    round(self.usd, 6), self.unpriced)


class _Session:
    def __init__(self, session: str, project: str, cwd: str) -> None:
        self.session, self.project, self.cwd = session, project, cwd
        self.tally = _Tally()
        self.models: Counter[str] = Counter()
        self.start = self.end = ""
        self.peak = 0
        self.curve: list[tuple[int, int]] = []
        self.compactions: list[Compaction] = []
        self.subagents = 0
        self.fixed = 0
        self.parts: dict[str, int] = {}

    @property
    def calls(self) -> int:
        return self.tally.calls

    def record(self) -> SessionRow:
        return SessionRow(self.session, self.project, self.cwd, self.start, self.end,
                          self.models.most_common(1)[0][0] if self.models else "",
                          self.tally.record(), self.peak, self.subagents, self.fixed,
                          tuple(self.compactions), tuple(self.curve))


def _curve(calls: list[Call]) -> list[tuple[int, int]]:
    points = [(i + 1, c.usage.prompt) for i, c in enumerate(calls)]
    if len(points) <= CURVE_POINTS:
        return points
    step = len(points) / CURVE_POINTS
    kept = {int(k * step) for k in range(CURVE_POINTS)} | {len(points) - 1}
    # Keep each local peak too: the drop of a compaction must show.
    kept |= {i for i in range(1, len(points) - 1)
             if points[i][1] > points[i + 1][1] * 1.5}
    return [points[i] for i in sorted(kept)]


class Builder:
    """Accumulates chains into the report."""

    def __init__(self, prices: Prices, since: str | None, thresholds: tuple[int, ...]
                 = THRESHOLDS, handoff: int = HANDOFF) -> None:
        self.prices = prices
        self.since = since
        self.thresholds = thresholds
        self.handoff = handoff
        self.total = _Tally()
        self.models: dict[str, _Tally] = {}
        self.projects: dict[str, _Tally] = {}
        self.project_cwd: dict[str, str] = {}
        self.days: dict[str, _Tally] = {}
        self.sessions: dict[tuple[str, str], _Session] = {}
        self.tools: Counter[str] = Counter()
        self.problems: Counter[str] = Counter()
        self.files = 0
        self.real = 0.0
        self.policy = [0.0] * len(thresholds)
        self.policy_compactions = [0] * len(thresholds)

    def add(self, chain: Chain) -> None:
        self.files += 1
        self.problems.update(chain.problems)
        if self.since is not None:
            chain = _since(chain, self.since)
        if not chain.calls and not chain.tools:
            return
        self.tools.update(chain.tools)
        key = (chain.project, chain.session)
        session = self.sessions.get(key)
        if session is None:
            session = self.sessions[key] = _Session(chain.session, chain.project, chain.cwd)
        if chain.cwd:
            self.project_cwd.setdefault(chain.project, chain.cwd)
        for call in chain.calls:
            self._call(call, chain, session)
        self._shape(chain, session)
        self.real += real_cost(chain)
        for k, threshold in enumerate(self.thresholds):
            cost, n = policy_cost(chain, threshold, self.handoff)
            self.policy[k] += cost
            self.policy_compactions[k] += n

    def _call(self, call: Call, chain: Chain, session: _Session) -> None:
        usd = self.prices.dollars(call.model, call.usage)
        for table, name in ((self.models, call.model), (self.projects, chain.project),
                            (self.days, call.timestamp[:10] or "unknown")):
            table.setdefault(name, _Tally()).add(call, usd)
        self.total.add(call, usd)
        session.tally.add(call, usd)
        session.models[call.model] += 1
        if call.timestamp:
            session.start = min(session.start or call.timestamp, call.timestamp)
            session.end = max(session.end, call.timestamp)

    def _shape(self, chain: Chain, session: _Session) -> None:
        if chain.agent is not None:
            session.subagents += 1
            return
        session.peak = max([session.peak, *(c.usage.prompt for c in chain.calls)])
        session.curve = _curve(chain.calls)
        session.compactions = list(chain.compactions)
        session.fixed = fixed_context(chain)
        session.parts = dict(chain.fixed_parts)

    def report(self, meta: Meta) -> Report:
        from loremap.xray.audit import fixed_context_audit, recommendations, tool_usage

        sessions = sorted(self.sessions.values(), key=lambda s: -equivalents(s.tally.usage))
        big = sum(equivalents(s.tally.usage) for s in sessions if s.peak > BIG_SESSION)
        totals, replay = self.total.record(), self._replay()
        fixed = fixed_context_audit(sessions)
        tools, servers = tool_usage(self.tools)
        configured = self._configured()
        unused = tuple(sorted(set(configured) - {row.name for row in servers}))
        trimmable = [name for name in unused if not configured[name]]
        return Report(
            generated_at=meta.generated_at, root=meta.root, days=meta.days, since=meta.since,
            files=self.files, problems=dict(sorted(self.problems.items())), totals=totals,
            shares=_shares(self.total.usage, equivalents(self.total.usage), big),
            by_model=_rows(self.models),
            by_project=tuple(r._replace(cwd=self.project_cwd.get(r.name, ""))
                             for r in _rows(self.projects)),
            by_day=tuple(sorted(_rows(self.days), key=lambda r: r.name)),
            sessions=tuple(s.record() for s in sessions[:TOP_SESSIONS]),
            session_count=len(sessions),
            unpriced_models=tuple(Unpriced(m, t.calls) for m, t in sorted(self.models.items())
                                  if t.unpriced),
            prices=self.prices.origin, replay=replay, fixed_context=fixed, tools=tools,
            mcp_servers=servers, unused_servers=unused,
            recommendations=recommendations(totals, replay, fixed, trimmable))

    def _configured(self) -> dict[str, bool]:
        """The MCP servers configured in the sessions' projects: name -> loremap's own."""
        from loremap.xray.audit import configured_servers

        home = home_dir()
        out: dict[str, bool] = {}
        for cwd in sorted(set(self.project_cwd.values())):
            for name, server in configured_servers(Path(cwd), home).items():
                out[name] = out.get(name, False) or server.loremap
        return out

    def _replay(self) -> Replay:
        rows = tuple(
            ReplayRow(t, round(c, 1), round(self.real - c, 1),
                      round((self.real - c) / self.real, 4) if self.real else 0.0, n)
            for t, c, n in zip(self.thresholds, self.policy, self.policy_compactions,
                               strict=True))
        good = [r for r in rows if r.saving > 0]
        best = max(good, key=lambda r: (r.saving, r.threshold)) if good else None
        return Replay(self.handoff, round(self.real, 1), rows,
                      best.threshold if best else None)


class Meta(NamedTuple):
    """What the report says about itself: when, over which folder and period."""

    generated_at: str
    root: str
    days: int
    since: str | None


def _rows(table: dict[str, _Tally]) -> tuple[UsageRow, ...]:
    rows = [UsageRow(key, tally.record()) for key, tally in table.items()]
    return tuple(sorted(rows, key=lambda r: (-r.cost.equiv, r.name)))


def _shares(u: Usage, total: float, big: float) -> Shares:
    if not total:
        return Shares(0.0, 0.0, 0.0, 0.0, 0.0)
    return Shares(round(0.1 * u.cache_read / total, 4),
                  round((1.25 * u.cache_write_5m + 2 * u.cache_write_1h) / total, 4),
                  round(5 * u.output / total, 4), round(u.input / total, 4),
                  round(big / total, 4))


def _since(chain: Chain, since: str) -> Chain:
    """`chain` without the calls (and compactions) before `since` (an ISO date)."""
    calls = [c for c in chain.calls if not c.timestamp or c.timestamp >= since]
    if len(calls) == len(chain.calls):
        return chain
    dropped = len(chain.calls) - len(calls)
    compactions = [c._replace(after_calls=c.after_calls - dropped) for c in chain.compactions
                   if c.after_calls >= dropped]
    return chain._replace(calls=calls, compactions=compactions)


def build(chains: Iterable[Chain], prices: Prices, days: int, root: Path,
          now: dt.datetime | None = None) -> Report:
    """The whole report over `chains` (already limited to the files of the period)."""
    now = now or dt.datetime.now(dt.UTC)
    since = (now - dt.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S") if days else None
    builder = Builder(prices, since)
    for chain in chains:
        builder.add(chain)
    return builder.report(Meta(now.strftime("%Y-%m-%dT%H:%M:%SZ"), str(root), days,
                               since[:10] if since else None))
