"""The X-ray report as one self-contained HTML page (`loremap xray --html FILE`).

The terminal view answers "how much"; the page shows the shapes behind it — cost per day,
what each compaction threshold would have saved, how the biggest sessions' context grew — so a
user can see what to change. It must open anywhere, offline, attached to a bug report or
mailed to a colleague: one file, inline CSS, charts drawn as SVG in Python (charts.py), no
JavaScript, no fonts or scripts from the network. Every string from the report comes from
transcripts (project paths, model and tool names) and is escaped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from loremap.errors import InvalidInput
from loremap.vault.fs import atomic_write
from loremap.xray.charts import Mark, Series, bars, columns, esc, line, no_data, stacked_bar
from loremap.xray.costs import OUTPUT, READ, WRITE_1H, WRITE_5M
from loremap.xray.formats import count, dollars, money, percent, saving
from loremap.xray.records import Report, SessionRow, UsageRow
from loremap.xray.report import BIG_SESSION
from loremap.xray.transcripts import Usage

# (label, colour) per kind of token, the same in every chart and legend.
KINDS = {"cache_read": ("cache reads", "#3b6fb6"), "cache_write": ("cache writes", "#f28e2b"),
         "output": ("output", "#d62f3c"), "input": ("uncached input", "#2a9d8f")}
BIG = "#7b4fa0"
REST = "#cfcfcf"
SAVING, SWEET = "#9cc3e6", "#2e8b3e"
CURVE, LIMIT, COMPACTION = "#1d4e89", "#c0392b", "#e0a000"
TOP_CURVES = 10
TABLE_ROWS = 25

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;
 margin:0;background:#fff}
main{max-width:1000px;margin:0 auto;padding:24px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 8px;
 border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:14px;margin:0 0 2px}
.sub,.meta,.note{color:#666}.meta{font-size:12px}
.stats{display:flex;flex-wrap:wrap;gap:12px;margin:14px 0}
.stat{border:1px solid #ddd;border-radius:6px;padding:8px 14px;min-width:120px}
.stat b{display:block;font-size:20px}.stat span{color:#666;font-size:12px}
.warn{background:#fff4e0;border:1px solid #f0b45a;border-radius:6px;padding:8px 12px}
.recs{padding-left:22px}.recs li{margin:0 0 10px}.saving{color:#2e8b3e;font-weight:600}
svg.chart{max-width:100%;height:auto;display:block;font:12px system-ui,sans-serif}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(460px,1fr));gap:18px}
.grid figure{margin:0;border:1px solid #e5e5e5;border-radius:6px;padding:8px}
table{border-collapse:collapse;margin:6px 0 14px;font-size:13px}
th,td{padding:3px 10px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#f6f6f6}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.best td{background:#e7f4e9;font-weight:600}.name{word-break:break-all;max-width:420px}
code{background:#f3f3f3;padding:0 3px;border-radius:3px}
"""


def write_html(report: Report, path: Path) -> None:
    """Write the page for `report` to `path`, atomically."""
    try:
        atomic_write(path, render_html(report).encode("utf-8"))
    except OSError as exc:
        raise InvalidInput(f"cannot write the HTML report {path}: {exc}") from None


def render_html(report: Report) -> str:
    """The whole page, as one string with nothing to fetch."""
    body = "\n".join([_header(report), _recommendations(report), _shares(report),
                      _days(report), _replay(report), _sessions(report), _tables(report),
                      _footer(report)])
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>Token X-ray — {esc(report.root)}</title><style>{CSS}</style></head>"
            f"<body><main>\n{body}\n</main></body></html>\n")


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _stat(value: str, label: str) -> str:
    return f'<div class="stat"><b>{esc(value)}</b><span>{esc(label)}</span></div>'


def _header(report: Report) -> str:
    t, u = report.totals, report.totals.usage
    period = (f"last {report.days} days (since {report.since})" if report.days
              else "all time")
    unpriced = f"; {_count(t.unpriced_calls, 'call')} not priced" if t.unpriced_calls else ""
    out = [f"<header><h1>Token X-ray</h1><p class=\"sub\">{esc(report.root)} · "
           f"{esc(period)} · generated {esc(report.generated_at)}</p>",
           '<div class="stats">', _stat(count(t.equiv), "input-token equivalents"),
           _stat(money(t.priced_usd), f"dollars ({report.prices}{unpriced})"),
           _stat(count(t.calls), "API calls"), _stat(count(report.session_count), "sessions"),
           _stat(count(report.files), "transcript files"), "</div>",
           f"<p>Tokens: uncached input {count(u.input)} · cache writes "
           f"{count(u.cache_write_5m)} (5 min) + {count(u.cache_write_1h)} (1 h) · "
           f"cache reads {count(u.cache_read)} · output {count(u.output)}</p>",
           f'<p class="note">An input-token equivalent weighs each token by its price relative '
           f"to plain input, the same for every model: cache read ×{READ}, cache write "
           f"×{WRITE_5M} (5 min) or ×{WRITE_1H:g} (1 h), output ×{OUTPUT:g}.</p>"]
    if report.unpriced_models:
        names = ", ".join(f"<b>{esc(m.model)}</b> ({m.calls:,} calls)"
                          for m in report.unpriced_models)
        out.append(f'<p class="warn">⚠ Not priced: {names}. The price table has no price for '
                   "these models, so the dollar figures leave them out; their tokens still "
                   "count in the equivalents.</p>")
    return "\n".join([*out, "</header>"])


def _recommendations(report: Report) -> str:
    recs = report.recommendations
    if not recs:
        return "<h2>Recommendations</h2><p>Nothing stood out.</p>"
    items = [f"<li><h3>{esc(r.title)}</h3><span class=\"saving\">"
             f"{esc(saving(r, 'equivalents'))}</span><br>{_code(r.detail)}</li>" for r in recs]
    return ("<h2>Recommendations <span class=\"meta\">largest saving first</span></h2>"
            f"<ol class=\"recs\">{''.join(items)}</ol>")


def _code(text: str) -> str:
    """Escaped `text` with its `backticked` spans as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", esc(text))


def _shares(report: Report) -> str:
    s = report.shares
    values = {"cache_read": s.cache_read, "cache_write": s.cache_write, "output": s.output,
              "input": s.input}
    kinds = [(label, values[key], colour) for key, (label, colour) in KINDS.items()]
    big = s.big_sessions
    split = [(f"sessions past {BIG_SESSION // 1000}k tokens", big, BIG),
             ("the other sessions", 1.0 - big if any(v for _, v, _ in kinds) else 0.0, REST)]
    return ("<h2>Where the cost went</h2><p class=\"meta\">Share of the input-token "
            "equivalents, by kind of token:</p>" + stacked_bar("shares", kinds)
            + "<p class=\"meta\">and by session size (sessions whose context passed "
            f"{BIG_SESSION:,} tokens):</p>" + stacked_bar("big-sessions", split))


def _day_kinds(u: Usage) -> dict[str, float]:
    return {"cache_read": READ * u.cache_read,
            "cache_write": WRITE_5M * u.cache_write_5m + WRITE_1H * u.cache_write_1h,
            "output": OUTPUT * u.output, "input": float(u.input)}


def _days(report: Report) -> str:
    rows = report.by_day
    kinds = [_day_kinds(r.cost.usage) for r in rows]
    series = [Series(label, colour, [k[key] for k in kinds])
              for key, (label, colour) in KINDS.items()]
    labels = [r.name[5:] if len(r.name) == 10 else r.name for r in rows]
    tips = [f"{r.name}: {count(r.cost.equiv)} equivalents, {dollars(r.cost)}, "
            f"{r.cost.calls:,} calls" for r in rows]
    years = sorted({r.name[:4] for r in rows if len(r.name) == 10})
    span = f" ({years[0]}–{years[-1]})" if len(years) > 1 else f" ({years[0]})" if years else ""
    return ("<h2>Cost per day</h2>" + columns(
        "days", labels, series, tips, (f"day{span}", "input-token equivalents")))


def _replay(report: Report) -> str:
    replay = report.replay
    rows = replay.thresholds
    best = next((i for i, r in enumerate(rows) if r.threshold == replay.best), None)
    # Trigger: no cost at all. Why: every share is then 0 by definition, not a finding.
    # Outcome: "no data" instead of a row of 0% bars.
    chart = no_data("replay", 1000, 300) if not replay.real_equiv else bars(
        "replay", [f"{r.threshold // 1000}k" for r in rows],
        [float(r.saving_share) for r in rows], best, (SAVING, SWEET),
        ("compact when the context passes T tokens", "saving vs. real cost"))
    body = [[f"{r.threshold:,}", count(r.equiv), count(r.saving), percent(r.saving_share),
             count(r.compactions)] for r in rows]
    verdict = ("no threshold would have saved anything" if replay.best is None else
               f"the sweet spot is {replay.best:,} tokens")
    return ("<h2>Replay: what compacting earlier would have cost</h2><p>Each session replayed "
            "compacting whenever its context passed T, then resuming from the fixed context "
            f"plus a handoff of {replay.handoff_tokens:,} tokens. Real cost: "
            f"{count(replay.real_equiv)} equivalents; {esc(verdict)}.</p>" + chart
            + _table(["threshold T", "equivalents", "saving", "saving share", "compactions"],
                     body, best, numeric=range(5)))


def _session(s: SessionRow, index: int) -> str:
    marks = [Mark(c.after_calls + 0.5, f"{c.trigger} compaction at "
                  f"{c.pre_tokens:,} tokens ({c.timestamp})") for c in s.compactions]
    chart = line(f"session-{index}", [(float(x), float(y)) for x, y in s.curve], marks,
                 (BIG_SESSION, f"{BIG_SESSION // 1000}k"), (CURVE, LIMIT, COMPACTION),
                 empty="no main-thread calls in the period")
    extra = (f" · {_count(len(marks), 'compaction')}" if marks else "") + (
        f" · {_count(s.subagents, 'sub-agent')}" if s.subagents else "")
    return (f"<figure><h3 class=\"name\" title=\"{esc(s.cwd)}\">{esc(s.project)}</h3>"
            f"<div class=\"meta\">{esc(s.session[:8])} · {esc(s.start[:16])} → "
            f"{esc(s.end[:16])} · {esc(s.model)}<br>{_count(s.cost.calls, 'call')} · peak "
            f"{s.peak_context:,} tokens · {count(s.cost.equiv)} equivalents · "
            f"{esc(dollars(s.cost))}{esc(extra)}</div>{chart}</figure>")


def _sessions(report: Report) -> str:
    sessions = report.sessions[:TOP_CURVES]
    head = ("<h2>Context of the biggest sessions</h2><p class=\"meta\">Tokens sent with each "
            f"API call of the main thread; <span style=\"color:{COMPACTION}\">orange marks"
            f"</span> are compactions, the <span style=\"color:{LIMIT}\">dashed line</span> is "
            f"{BIG_SESSION:,} tokens.</p>")
    if not sessions:
        return head + '<p class="note">No sessions.</p>'
    figures = "".join(_session(s, i) for i, s in enumerate(sessions))
    return head + f'<div class="grid">{figures}</div>'


def _table(headers: list[str], rows: list[list[str]], best: int | None = None,
           numeric: range | list[int] = range(0)) -> str:
    """A table of already-escaped cells; row `best` highlighted."""
    if not rows:
        return '<p class="note">None.</p>'
    cls = [' class="num"' if i in numeric else "" for i in range(len(headers))]
    head = "".join(f"<th{c}>{esc(h)}</th>" for h, c in zip(headers, cls, strict=True))
    body = "".join(
        ("<tr class=\"best\">" if i == best else "<tr>")
        + "".join(f"<td{c}>{cell}</td>" for cell, c in zip(row, cls, strict=True)) + "</tr>"
        for i, row in enumerate(rows))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _usage(rows: Sequence[UsageRow], key: str) -> str:
    body = []
    for r in rows[:TABLE_ROWS]:
        name = f'<span class="name">{esc(r.name)}</span>'
        if r.cwd:
            name += f'<br><span class="meta">{esc(r.cwd)}</span>'
        c, u = r.cost, r.cost.usage
        body.append([name, count(c.calls), count(u.input), count(u.cache_write),
                     count(u.cache_read), count(u.output), count(c.equiv), esc(dollars(c))])
    more = (f'<p class="meta">… {len(rows) - TABLE_ROWS} more (--json has them all)</p>'
            if len(rows) > TABLE_ROWS else "")
    return _table([key, "calls", "input", "cache writes", "cache reads", "output",
                   "equivalents", "dollars"], body, numeric=range(1, 8)) + more


def _fixed(report: Report) -> str:
    f = report.fixed_context
    parts = [[esc(name), count(tokens)] for name, tokens in f.parts.items()]
    memory = [[f'<span class="name">{esc(path)}</span>', count(tokens)]
              for path, tokens in f.memory_files.items()]
    summary = ("No session's first call to measure it from." if not f.sessions else
               f"What every call starts with, estimated from {_count(f.sessions, 'session')}'"
               f" first call: median {count(f.median)} tokens (min {count(f.min)}, max "
               f"{count(f.max)}), re-read by {_count(f.calls, 'call')}.")
    return (f"<h2>Fixed context</h2><p>{summary}</p>"
            "<h3>Itemised parts (median tokens)</h3>"
            + _table(["part", "tokens"], parts, numeric=[1])
            + "<h3>Memory files on disk</h3>"
            + _table(["file", "tokens"], memory, numeric=[1]))


def _tools(report: Report) -> str:
    servers = [[esc(s.name), count(s.calls)] for s in report.mcp_servers]
    servers += [[f"{esc(name)} <span class=\"meta\">configured, never called</span>", "0"]
                for name in report.unused_servers]
    tools = [[f'<span class="name">{esc(t.name)}</span>', esc(t.server or ""),
              count(t.calls)] for t in report.tools[:TABLE_ROWS]]
    more = len(report.tools) - TABLE_ROWS
    return ("<h2>Tools and MCP servers</h2><h3>MCP servers</h3>"
            + _table(["server", "calls"], servers, numeric=[1]) + "<h3>Tools</h3>"
            + _table(["tool", "MCP server", "calls"], tools, numeric=[2])
            + (f'<p class="meta">… {more} more (--json has them all)</p>' if more > 0 else ""))


def _tables(report: Report) -> str:
    return ("<h2>By model</h2>" + _usage(report.by_model, "model")
            + "<h2>By project</h2>" + _usage(report.by_project, "project")
            + _fixed(report) + _tools(report))


def _footer(report: Report) -> str:
    problems = report.problems
    skipped = ("<p class=\"meta\">Skipped: " + esc(", ".join(
        f"{k} {v}" for k, v in problems.items())) + "</p>") if problems else ""
    return (f"<footer>{skipped}<p class=\"meta\">Generated by <code>loremap xray</code> "
            f"at {esc(report.generated_at)} from {esc(report.root)}.</p></footer>")
