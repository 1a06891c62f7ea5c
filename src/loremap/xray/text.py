"""The X-ray report as terminal text: the totals, where the cost went, the replay, the
biggest sessions, the fixed context and the recommendations. Its figures go through
`formats`, as the HTML page's do, so both views read the same."""

from __future__ import annotations

from collections.abc import Sequence

from loremap.xray.formats import count, dollars, percent, saving
from loremap.xray.records import Replay, Report, UsageRow


def _table(rows: Sequence[UsageRow], key: str, limit: int) -> list[str]:
    out = [f"  {key:<34} {'calls':>7} {'input':>9} {'cache write':>12} {'cache read':>13} "
           f"{'output':>10} {'equiv':>13} {'$':>10}"]
    for r in rows[:limit]:
        c, u = r.cost, r.cost.usage
        out.append(f"  {r.name[:34]:<34} {c.calls:>7,} {u.input:>9,} {u.cache_write:>12,} "
                   f"{u.cache_read:>13,} {u.output:>10,} {count(c.equiv):>13} "
                   f"{dollars(c):>10}")
    if len(rows) > limit:
        out.append(f"  ... {len(rows) - limit} more (--json has them all)")
    return out


def render(report: Report) -> list[str]:
    t, u = report.totals, report.totals.usage
    period = f"last {report.days} days" if report.days else "all time"
    out = [f"X-ray of {report.root} ({period}): {report.files:,} files, "
           f"{report.session_count:,} sessions, {t.calls:,} API calls",
           f"  input {u.input:,} · cache writes {u.cache_write_5m:,} (5 min) + "
           f"{u.cache_write_1h:,} (1 h) · cache reads {u.cache_read:,} · output {u.output:,}",
           f"  cost: {count(t.equiv)} input-token equivalents, {dollars(t)} ({report.prices})"]
    if report.unpriced_models:
        names = ", ".join(f"{m.model} ({m.calls} calls)" for m in report.unpriced_models)
        out.append(f"  ⚠ not priced (no price for the model; dollars leave them out): {names}")
    s = report.shares
    out += ["", "Where the cost went:",
            f"  re-reading context (cache reads) {percent(s.cache_read)} · writing cache "
            f"{percent(s.cache_write)} · output {percent(s.output)} · uncached input "
            f"{percent(s.input)}",
            f"  sessions that grew past 150k tokens: {percent(s.big_sessions)} of the cost"]
    out += ["", "By model:", *_table(report.by_model, "model", 10)]
    out += ["", "By project:", *_table(report.by_project, "project", 10)]
    out += ["", "Biggest sessions:"]
    for r in report.sessions[:10]:
        marks = f", {len(r.compactions)} compactions" if r.compactions else ""
        out.append(f"  {r.start[:16]} {r.session[:8]} {r.project[-30:]:<30} "
                   f"peak {r.peak_context:>8,} tokens, {r.cost.calls:>5,} calls, "
                   f"{count(r.cost.equiv)} equiv{marks}")
    out += ["", *_replay(report.replay), "", *_fixed(report)]
    out += ["", "Recommendations (largest saving first):"]
    for i, rec in enumerate(report.recommendations, 1):
        out += [f"  {i}. {rec.title} — {saving(rec, 'equiv')}", f"     {rec.detail}"]
    if report.problems:
        out += ["", "Skipped: " + ", ".join(f"{k} {v}" for k, v in report.problems.items())]
    return out


def _replay(replay: Replay) -> list[str]:
    out = [f"Replay: compact when the context passes T, resume from the fixed context plus a "
           f"{replay.handoff_tokens:,}-token handoff (real cost: "
           f"{count(replay.real_equiv)} equiv)"]
    for r in replay.thresholds:
        star = "  ← sweet spot" if r.threshold == replay.best else ""
        out.append(f"  T = {r.threshold // 1000:>3}k: {count(r.equiv):>13} equiv, saving "
                   f"{percent(r.saving_share):>6}, {r.compactions:>4} compactions{star}")
    return out


def _fixed(report: Report) -> list[str]:
    f = report.fixed_context
    out = [f"Fixed context (estimated from {f.sessions} sessions' first call): median "
           f"{f.median:,} tokens (min {f.min:,}, max {f.max:,})"]
    out += [f"  {name}: ~{tokens:,}" for name, tokens in f.parts.items()]
    out += [f"  {path}: {tokens:,}" for path, tokens in f.memory_files.items()]
    used = ", ".join(f"{s.name} {s.calls}" for s in report.mcp_servers) or "none"
    out.append(f"  MCP servers called: {used}")
    if report.unused_servers:
        out.append(f"  configured, never called: {', '.join(report.unused_servers)}")
    return out
