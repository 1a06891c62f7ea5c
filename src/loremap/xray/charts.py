"""Inline SVG charts for the X-ray's HTML page.

The page must open anywhere, offline and without JavaScript, so the charts are drawn here, in
Python, as plain `<svg>` elements: a stacked bar, stacked columns, bars with one highlighted,
and a small line chart. Each function takes plain numbers and labels, escapes every label
(transcript data is untrusted), and draws a "no data" box rather than dividing by zero.
Hovering a bar shows its exact figures through an SVG `<title>`.
"""

from __future__ import annotations

import math
from html import escape
from typing import NamedTuple

from loremap.xray.formats import percent

AXIS = "#555555"
GRID = "#e3e3e3"
MUTED = "#888888"


class Series(NamedTuple):
    """One stacked layer of a column chart."""

    name: str
    colour: str
    values: list[float]


class Mark(NamedTuple):
    """A vertical mark on a line chart (a compaction), at `x` on the x axis."""

    x: float
    label: str


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def short(value: float) -> str:
    """A compact number for axes: 950, 12.5k, 1.2M, 3.4B."""
    for limit, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.3g}{suffix}"
    return f"{value:.3g}" if value % 1 else f"{value:.0f}"


def ticks(lo: float, hi: float, count: int = 4) -> list[float]:
    """Round tick values covering lo..hi (lo <= 0 <= hi expected; a flat range gets 0..1)."""
    span = hi - lo
    if span <= 0:
        return [0.0, 1.0]
    raw = span / count
    base = 10 ** math.floor(math.log10(raw))
    step = next(m * base for m in (1, 2, 2.5, 5, 10) if m * base >= raw * (1 - 1e-9))
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [k * step for k in range(first, last + 1)]


def _svg(name: str, width: int, height: int, body: str, label: str) -> str:
    return (f'<svg class="chart" data-chart="{esc(name)}" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" aria-label="{esc(label)}">'
            f"{body}</svg>")


def no_data(name: str, width: int, height: int, message: str = "no data") -> str:
    """An empty frame that says so, in place of a chart without data."""
    body = (f'<rect x="0.5" y="0.5" width="{width - 1}" height="{height - 1}" fill="#fafafa" '
            f'stroke="{GRID}"/><text x="{width / 2}" y="{height / 2 + 5}" text-anchor="middle" '
            f'fill="{MUTED}" font-size="15">{esc(message)}</text>')
    return _svg(name, width, height, body, message)


def _text(x: float, y: float, label: str, anchor: str = "middle", extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>'
            f"{esc(label)}</text>")


def _legend(items: list[tuple[str, str]], x: float, y: float) -> str:
    out = []
    for label, colour in items:
        out.append(f'<rect x="{x:.1f}" y="{y - 10:.1f}" width="12" height="12" '
                   f'fill="{colour}"/>' + _text(x + 17, y, label, "start"))
        x += 30 + 7.2 * len(label)
    return "".join(out)


def stacked_bar(name: str, parts: list[tuple[str, float, str]], width: int = 1000) -> str:
    """One horizontal bar split into `parts` (label, fraction of the whole, colour)."""
    total = sum(max(v, 0.0) for _, v, _ in parts)
    height = 86
    if total <= 0:
        return no_data(name, width, height)
    out, x = [], 0.0
    for label, value, colour in parts:
        w = width * max(value, 0.0) / total
        if w <= 0:
            continue
        out.append(f'<rect x="{x:.1f}" y="4" width="{w:.1f}" height="40" fill="{colour}">'
                   f"<title>{esc(label)}: {percent(value)}</title></rect>")
        if w > 46:
            out.append(_text(x + w / 2, 29, percent(value), extra=' fill="#ffffff" '
                             'font-weight="600"'))
        x += w
    out.append(_legend([(f"{label} {percent(value)}", colour) for label, value, colour in parts],
                       0, 72))
    return _svg(name, width, height, "".join(out), "stacked bar")


def _y_axis(tick_values: list[float], y_of: dict[float, float], left: int, right: int,
            fmt: str) -> str:
    out = []
    for t in tick_values:
        y = y_of[t]
        out.append(f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="{AXIS if t == 0 else GRID}"/>')
        label = f"{t:.0%}" if fmt == "%" else short(t)
        out.append(_text(left - 6, y + 4, label, "end", f' fill="{AXIS}"'))
    return "".join(out)


def _axis_titles(x_title: str, y_title: str, width: int, height: int, left: int) -> str:
    return (_text(left + (width - left) / 2, height - 6, x_title, extra=f' fill="{AXIS}"')
            + f'<text transform="translate(14 {(height - 40) / 2:.0f}) rotate(-90)" '
              f'text-anchor="middle" fill="{AXIS}">{esc(y_title)}</text>')


def columns(name: str, labels: list[str], series: list[Series], tips: list[str],
            axes: tuple[str, str], width: int = 1000, height: int = 320) -> str:
    """Stacked columns, one per label, layered by `series`; `tips` is each column's hover."""
    totals = [sum(s.values[i] for s in series) for i in range(len(labels))]
    if not labels or max(totals, default=0) <= 0:
        return no_data(name, width, height)
    left, top, bottom = 70, 30, height - 56
    scale = ticks(0, max(totals))
    y_of = {t: bottom - (bottom - top) * t / scale[-1] for t in scale}
    slot = (width - left - 10) / len(labels)
    every = max(1, math.ceil(len(labels) / 12))
    out = [_legend([(s.name, s.colour) for s in series], left, 14),
           _y_axis(scale, y_of, left, width - 10, "")]
    bar = min(slot * 0.8, 60.0)  # a few days must not make slabs
    for i, label in enumerate(labels):
        centre, y = left + slot * (i + 0.5), float(bottom)
        out.append(f"<g><title>{esc(tips[i])}</title>")
        for s in series:
            h = (bottom - top) * max(s.values[i], 0.0) / scale[-1]
            y -= h
            out.append(f'<rect x="{centre - bar / 2:.1f}" y="{y:.1f}" width="{bar:.1f}" '
                       f'height="{h:.1f}" fill="{s.colour}"/>')
        out.append("</g>")
        if i % every == 0:
            out.append(_text(centre, bottom + 16, label, extra=f' fill="{AXIS}"'))
    out.append(_axis_titles(axes[0], axes[1], width, height, left))
    return _svg(name, width, height, "".join(out), "stacked columns")


def bars(name: str, labels: list[str], values: list[float], best: int | None,
         colours: tuple[str, str], axes: tuple[str, str], width: int = 1000,
         height: int = 300) -> str:
    """Vertical bars of shares (may be negative); the `best` index in the second colour."""
    if not labels:
        return no_data(name, width, height)
    left, top, bottom = 70, 24, height - 44
    # All zero (nothing saves): a 0-5% axis rather than a flat 0-100% one.
    scale = ticks(min(0.0, *values), max(0.05 if not any(values) else 0.0, *values))
    lo, hi = scale[0], scale[-1]

    def y(v: float) -> float:
        return bottom - (bottom - top) * (v - lo) / (hi - lo)

    slot = (width - left - 10) / len(labels)
    out = [_y_axis(scale, {t: y(t) for t in scale}, left, width - 10, "%")]
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        x, colour = left + slot * i + slot * 0.15, colours[1 if i == best else 0]
        y0, y1 = sorted((y(0), y(value)))
        out.append(f'<rect x="{x:.1f}" y="{y0:.1f}" width="{slot * 0.7:.1f}" '
                   f'height="{max(y1 - y0, 1):.1f}" fill="{colour}"><title>{esc(label)}: '
                   f"{percent(value)}</title></rect>")
        note = percent(value) + (" ★ sweet spot" if i == best else "")
        out.append(_text(x + slot * 0.35, y0 - 5 if value >= 0 else y1 + 14, note,
                         extra=' font-weight="600"' if i == best else ""))
        out.append(_text(x + slot * 0.35, bottom + 16, label, extra=f' fill="{AXIS}"'))
    out.append(_axis_titles(axes[0], axes[1], width, height, left))
    return _svg(name, width, height, "".join(out), "bars")


def line(name: str, points: list[tuple[float, float]], marks: list[Mark],
         level: tuple[float, str], colours: tuple[str, str, str], width: int = 520,
         height: int = 200, empty: str = "no data") -> str:
    """A line through `points`, vertical `marks`, and a dashed horizontal line at `level`."""
    if not points:
        return no_data(name, width, height, empty)
    left, right, top, bottom = 52, width - 8, 10, height - 34
    x_max = max(max(p[0] for p in points), 2.0)
    scale = ticks(0, max(max(p[1] for p in points), level[0]) * 1.05)

    def x(v: float) -> float:
        return left + (right - left) * (v - 1) / (x_max - 1)

    def y(v: float) -> float:
        return bottom - (bottom - top) * v / scale[-1]

    out = [_y_axis(scale, {t: y(t) for t in scale}, left, right, ""),
           _level(y(level[0]), left, right, level[1], colours[1])]
    for mark in marks:
        mx = x(min(max(mark.x, 1.0), x_max))
        out.append(f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{top}" y2="{bottom}" '
                   f'stroke="{colours[2]}" stroke-width="2"><title>{esc(mark.label)}</title>'
                   "</line>")
    path = " ".join(f"{x(px):.1f},{y(py):.1f}" for px, py in points)
    out.append(f'<polyline points="{path}" fill="none" stroke="{colours[0]}" '
               'stroke-width="2" stroke-linejoin="round"/>')
    if len(points) < 3:  # a line of one point draws nothing: show the points themselves
        out += [f'<circle cx="{x(px):.1f}" cy="{y(py):.1f}" r="3" fill="{colours[0]}"/>'
                for px, py in points]
    out.append(_text(left, bottom + 16, "1", extra=f' fill="{AXIS}"')
               + _text(right, bottom + 16, f"{x_max:,.0f}", "end", f' fill="{AXIS}"')
               + _text((left + right) / 2, bottom + 28, "API call", extra=f' fill="{AXIS}"'))
    return _svg(name, width, height, "".join(out), "line chart")


def _level(y: float, left: float, right: float, label: str, colour: str) -> str:
    return (f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="{colour}" '
            'stroke-width="1.5" stroke-dasharray="6 4"/>'
            # At the left: contexts start small, so the label is clear of the line there.
            + _text(left + 4, y - 4, label, "start", f' fill="{colour}" font-size="11"'))
