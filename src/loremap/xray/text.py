"""The X-ray report as terminal text: the totals, where the cost went, the replay, the
biggest sessions, the fixed context and the recommendations."""

from __future__ import annotations

from typing import Any


def count(value: float) -> str:
    return f"{value:,.0f}"


def usd(value: float | None) -> str:
    return "—" if value is None else f"${value:,.2f}"


def _table(rows: list[dict[str, Any]], key: str, limit: int) -> list[str]:
    out = [f"  {key:<34} {'calls':>7} {'input':>9} {'cache write':>12} {'cache read':>13} "
           f"{'output':>10} {'equiv':>13} {'$':>10}"]
    for r in rows[:limit]:
        name = str(r[key])
        out.append(f"  {name[:34]:<34} {r['calls']:>7,} {r['input']:>9,} "
                   f"{r['cache_write_5m'] + r['cache_write_1h']:>12,} {r['cache_read']:>13,} "
                   f"{r['output']:>10,} {count(r['equiv']):>13} {usd(r['usd']):>10}")
    if len(rows) > limit:
        out.append(f"  ... {len(rows) - limit} more (--json has them all)")
    return out


def render(report: dict[str, Any]) -> list[str]:
    t = report["totals"]
    period = f"last {report['days']} days" if report["days"] else "all time"
    out = [f"X-ray of {report['root']} ({period}): {report['files']:,} files, "
           f"{report['session_count']:,} sessions, {t['calls']:,} API calls",
           f"  input {t['input']:,} · cache writes {t['cache_write_5m']:,} (5 min) + "
           f"{t['cache_write_1h']:,} (1 h) · cache reads {t['cache_read']:,} · "
           f"output {t['output']:,}",
           f"  cost: {count(t['equiv'])} input-token equivalents, {usd(t['usd'])} "
           f"({report['prices']})"]
    if report["unpriced_models"]:
        names = ", ".join(f"{m['model']} ({m['calls']} calls)" for m in report["unpriced_models"])
        out.append(f"  ⚠ not priced (no price for the model; dollars leave them out): {names}")
    s = report["shares"]
    out += ["", "Where the cost went:",
            f"  re-reading context (cache reads) {s['cache_read']:.0%} · writing cache "
            f"{s['cache_write']:.0%} · output {s['output']:.0%} · uncached input {s['input']:.0%}",
            f"  sessions that grew past 150k tokens: {s['big_sessions']:.0%} of the cost"]
    out += ["", "By model:", *_table(report["by_model"], "model", 10)]
    out += ["", "By project:", *_table(report["by_project"], "project", 10)]
    out += ["", "Biggest sessions:"]
    for r in report["sessions"][:10]:
        marks = f", {len(r['compactions'])} compactions" if r["compactions"] else ""
        out.append(f"  {r['start'][:16]} {r['session'][:8]} {r['project'][-30:]:<30} "
                   f"peak {r['peak_context']:>8,} tokens, {r['calls']:>5,} calls, "
                   f"{count(r['equiv'])} equiv{marks}")
    out += ["", *_replay(report["replay"]), "", *_fixed(report)]
    out += ["", "Recommendations (largest saving first):"]
    for i, rec in enumerate(report["recommendations"], 1):
        saving = (f"saves {rec['saving_share']:.0%} ({count(rec['saving_equiv'])} equiv, "
                  f"{usd(rec['saving_usd'])})" if rec["saving_equiv"] else "saving unknown")
        out += [f"  {i}. {rec['title']} — {saving}", f"     {rec['detail']}"]
    if report["problems"]:
        out += ["", "Skipped: " + ", ".join(f"{k} {v}" for k, v in report["problems"].items())]
    return out


def _replay(replay: dict[str, Any]) -> list[str]:
    out = [f"Replay: compact when the context passes T, resume from the fixed context plus a "
           f"{replay['handoff_tokens']:,}-token handoff (real cost: "
           f"{count(replay['real_equiv'])} equiv)"]
    for r in replay["thresholds"]:
        star = "  ← sweet spot" if r["threshold"] == replay["best"] else ""
        out.append(f"  T = {r['threshold'] // 1000:>3}k: {count(r['equiv']):>13} equiv, saving "
                   f"{r['saving_share']:>6.1%}, {r['compactions']:>4} compactions{star}")
    return out


def _fixed(report: dict[str, Any]) -> list[str]:
    f = report["fixed_context"]
    out = [f"Fixed context (estimated from {f['sessions']} sessions' first call): median "
           f"{f['median']:,} tokens (min {f['min']:,}, max {f['max']:,})"]
    out += [f"  {name}: ~{tokens:,}" for name, tokens in f["parts"].items()]
    out += [f"  {path}: {tokens:,}" for path, tokens in f["memory_files"].items()]
    used = ", ".join(f"{s['name']} {s['calls']}" for s in report["mcp_servers"]) or "none"
    out.append(f"  MCP servers called: {used}")
    if report["unused_servers"]:
        out.append(f"  configured, never called: {', '.join(report['unused_servers'])}")
    return out
