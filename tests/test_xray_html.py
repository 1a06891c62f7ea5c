"""The X-ray's HTML page: one self-contained file, every string escaped, and charts that a real
browser (Debian's headless Chromium) parses and paints.

The rich report is built here from the records `loremap.xray.report` produces (several days,
models — one without a price — projects, sessions of hundreds of calls with compactions), with
its recommendations from the real `audit.recommendations`; the empty one is what `build`
returns for no transcripts at all.
"""

from __future__ import annotations

import random
import re
import shutil
import struct
import subprocess
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loremap.errors import InvalidInput
from loremap.xray import html as page
from loremap.xray.audit import recommendations
from loremap.xray.costs import Prices, equivalents
from loremap.xray.records import (
    Cost,
    FixedContext,
    Replay,
    ReplayRow,
    Report,
    ServerRow,
    SessionRow,
    Shares,
    ToolRow,
    Unpriced,
    UsageRow,
)
from loremap.xray.report import build
from loremap.xray.transcripts import Compaction, Usage

EVIL = "<script>alert(1)</script>"
EVIL_TOOL = "mcp__evil__<img src=x onerror=alert(2)>"
UNPRICED = "mystery-model-9"
PRICE = {"claude-opus-4-6": 5.0, "claude-sonnet-4-5": 3.0, "claude-haiku-4-5": 1.0}
THRESHOLDS = (50_000, 75_000, 100_000, 125_000, 150_000, 200_000, 250_000, 300_000, 400_000)
SHARES = (-0.04, 0.12, 0.21, 0.18, 0.14, 0.08, 0.04, 0.01, 0.0)
CHARTS = ["shares", "big-sessions", "days", "replay", *(f"session-{i}" for i in range(10))]


def usage_cost(rng: random.Random, scale: float, model: str | None = None,
               calls: int | None = None) -> Cost:
    """Token totals of `scale` prompt tokens, with equivalents and dollars as report.py does."""
    u = Usage(input=int(scale * rng.uniform(0.002, 0.01)),
              cache_write_5m=int(scale * rng.uniform(0.02, 0.05)),
              cache_write_1h=int(scale * rng.uniform(0.0, 0.03)),
              cache_read=int(scale * rng.uniform(0.8, 1.0)),
              output=int(scale * rng.uniform(0.003, 0.01)))
    equiv = equivalents(u)
    calls = calls or max(1, int(scale / 60_000))
    price = PRICE.get(model or "claude-sonnet-4-5")
    return Cost(calls, u, round(equiv, 1), round(equiv * price / 1e6, 4) if price else 0.0,
                0 if price else calls)


def session(rng: random.Random, index: int, project: str, model: str) -> SessionRow:
    """A session of a few hundred calls whose context grows and is compacted past ~165k."""
    calls, context = rng.randint(180, 600), 21_000 + rng.randint(0, 6_000)
    every = max(1, calls // 120)
    curve: list[tuple[int, int]] = []
    compactions: list[Compaction] = []
    peak = 0
    for n in range(1, calls + 1):
        context += rng.randint(150, 2_200)
        if context > 165_000:
            compactions.append(Compaction(f"2026-01-{6 + index:02d}T1{n % 10}:00:00Z", "auto",
                                          context, n - 1))
            context = 26_000 + rng.randint(0, 4_000)
        peak = max(peak, context)
        if n % every == 0 or n == calls:
            curve.append((n, context))
    return SessionRow(f"{index:08x}-5e55-4d00-8000-{index:012x}", project, f"/home/u/{project}",
                      f"2026-01-{6 + index:02d}T09:12:00Z", f"2026-01-{6 + index:02d}T17:40:00Z",
                      model, usage_cost(rng, calls * 90_000, model, calls), peak, index % 3,
                      23_000, tuple(compactions), tuple(curve))


def _sum(costs: list[Cost]) -> Cost:
    usage = Usage()
    for c in costs:
        usage = usage.plus(c.usage)
    return Cost(sum(c.calls for c in costs), usage, round(sum(c.equiv for c in costs), 1),
                round(sum(c.usd for c in costs), 4), 140)


def rich_report() -> Report:
    rng = random.Random(7)
    projects = ["-home-u-shop", EVIL, "-home-u-very-long-project-name-for-the-layout-test",
                "-home-u-notes"]
    models = ["claude-opus-4-6", "claude-sonnet-4-5", "claude-haiku-4-5", UNPRICED]
    days = tuple(UsageRow(f"2026-01-{6 + i:02d}", usage_cost(rng, rng.uniform(2e6, 4e7)))
                 for i in range(21))
    totals = _sum([d.cost for d in days])
    real = totals.equiv
    replay = Replay(8000, real, tuple(
        ReplayRow(t, round(real * (1 - s), 1), round(real * s, 1), s, 400_000 // t * 3)
        for t, s in zip(THRESHOLDS, SHARES, strict=True)), 100_000)
    fixed = FixedContext(31, 23_400, 19_800, 31_200,
                         {"system prompt": 3_100, "skills": 1_250, "agent listing": 820,
                          "hook context": 140},
                         {"/home/u/-home-u-shop/CLAUDE.md": 2_400,
                          "/home/u/.claude/CLAUDE.md": 610}, 5_200)
    unused = ("playwright", "sentry")
    return Report(
        "2026-01-27T10:00:00Z", "/home/u/.claude/projects", 30, "2025-12-28", 57,
        {"bad json": 2}, totals, Shares(0.58, 0.29, 0.1, 0.03, 0.64),
        tuple(UsageRow(m, usage_cost(rng, 5e7 / (i + 1), m)) for i, m in enumerate(models)),
        tuple(UsageRow(p, usage_cost(rng, 6e7 / (i + 1)), f"/home/u/{p}")
              for i, p in enumerate(projects)),
        days, tuple(session(rng, i, projects[i % 4], models[i % 4]) for i in range(12)), 31,
        (Unpriced(UNPRICED, 140),), "shipped prices.toml", replay, fixed,
        tuple(ToolRow(n, s, c) for n, s, c in (
            ("Bash", None, 910), ("Read", None, 702), ("Edit", None, 388),
            ("mcp__loremap__search", "loremap", 121), ("Grep", None, 95),
            ("mcp__github__get_issue", "github", 14), (EVIL_TOOL, "evil", 1))),
        (ServerRow("loremap", 121), ServerRow("github", 14), ServerRow("evil", 1)), unused,
        recommendations(totals, replay, fixed, unused))


def empty_report(tmp_path: Path) -> Report:
    return build([], Prices.load(), 0, tmp_path / "projects")


def svgs(text: str) -> dict[str, str]:
    """Each chart's `<svg>` element, by its data-chart name."""
    return {m.group(1): m.group(0) for m in
            re.finditer(r'<svg class="chart" data-chart="([^"]+)".*?</svg>', text, re.S)}


CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is missing")


def chromium(tmp_path: Path, *args: str) -> bytes:
    """Headless Chromium, kept off this machine's closed network; its stdout."""
    assert CHROMIUM is not None
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'chromium'}", *args],
        capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-2000:]
    return done.stdout


class Png:
    """An 8-bit RGB or RGBA PNG, decoded with zlib (no Pillow): `rows` of raw pixels."""

    def __init__(self, data: bytes) -> None:
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        pos, idat = 8, []
        while pos < len(data):
            length, kind = struct.unpack(">I4s", data[pos:pos + 8])
            body = data[pos + 8:pos + 8 + length]
            if kind == b"IHDR":
                self.width, self.height, depth, colour, _, _, interlace = struct.unpack(
                    ">IIBBBBB", body)
                assert depth == 8 and colour in (2, 6) and interlace == 0
                self.bpp = 3 if colour == 2 else 4
            elif kind == b"IDAT":
                idat.append(body)
            pos += 12 + length
        raw, stride = zlib.decompress(b"".join(idat)), self.width * self.bpp
        self.rows: list[bytes] = []
        prev = bytes(stride)
        for y in range(self.height):
            start = y * (stride + 1)
            prev = self._unfilter(raw[start], bytearray(raw[start + 1:start + 1 + stride]), prev)
            self.rows.append(prev)

    def _unfilter(self, kind: int, line: bytearray, prev: bytes) -> bytes:
        bpp = self.bpp
        if kind == 2:  # Up
            return bytes((a + b) & 255 for a, b in zip(line, prev, strict=True))
        for i in range(len(line)) if kind in (1, 3, 4) else ():
            a = line[i - bpp] if i >= bpp else 0
            if kind == 1:  # Sub
                line[i] = (line[i] + a) & 255
            elif kind == 3:  # Average
                line[i] = (line[i] + ((a + prev[i]) >> 1)) & 255
            else:  # Paeth
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) \
                    & 255
        return bytes(line)

    def find(self, colour: str) -> tuple[int, tuple[int, int, int, int]]:
        """How many pixels are exactly `colour` (#rrggbb), and their bounding box."""
        pattern, bpp = bytes.fromhex(colour[1:]), self.bpp
        count, box = 0, [self.width, self.height, -1, -1]
        for y, row in enumerate(self.rows):
            i = row.find(pattern)
            while i >= 0:
                if i % bpp == 0:
                    count += 1
                    box = [min(box[0], i // bpp), min(box[1], y), max(box[2], i // bpp),
                           max(box[3], y)]
                i = row.find(pattern, i + (bpp if i % bpp == 0 else 1))
        return count, (box[0], box[1], box[2], box[3])

    def ink(self, box: tuple[int, int, int, int]) -> float:
        """The share of pixels in `box` that are not white."""
        x0, y0, x1, y1 = box
        bpp, white = self.bpp, b"\xff\xff\xff"
        inked = sum(row[x * bpp:x * bpp + 3] != white
                    for row in self.rows[y0:y1 + 1] for x in range(x0, x1 + 1))
        return inked / max(1, (x1 - x0 + 1) * (y1 - y0 + 1))


@pytest.fixture
def rich_page(tmp_path: Path) -> Path:
    path = tmp_path / "xray.html"
    page.write_html(rich_report(), path)
    return path


def test_the_page_is_one_file_that_fetches_nothing(rich_page: Path, tmp_path: Path) -> None:
    text = rich_page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert "http://" not in text and "https://" not in text and "//" not in text
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b", text)
    assert "@import" not in text and "url(" not in text and "<style>" in text
    assert [p.name for p in tmp_path.iterdir()] == ["xray.html"]  # no temp file left


def test_every_chart_is_an_svg_that_draws(rich_page: Path) -> None:
    charts = svgs(rich_page.read_text(encoding="utf-8"))
    assert list(charts) == CHARTS
    for name, svg in charts.items():
        assert "no data" not in svg, name
        drawn = svg.count("<rect") + svg.count("<polyline") + svg.count("<line")
        assert drawn > 3, name
    assert charts["days"].count("<rect") >= 21 * 4
    assert all(charts[f"session-{i}"].count("<polyline") == 1 for i in range(10))


def test_transcript_strings_are_escaped(rich_page: Path) -> None:
    text = rich_page.read_text(encoding="utf-8")
    assert EVIL not in text and "<script" not in text and "<img" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "mcp__evil__&lt;img src=x onerror=alert(2)&gt;" in text


def test_the_sections_come_in_the_order_a_user_acts_on_them(rich_page: Path) -> None:
    text = rich_page.read_text(encoding="utf-8")
    headings = ["Token X-ray", "Recommendations", "Where the cost went", "Cost per day",
                "Replay", "Context of the biggest sessions", "By model", "By project",
                "Fixed context", "Tools and MCP servers"]
    where = [text.index(f">{h}") for h in headings]
    assert where == sorted(where)
    assert text.index("Compact at 100k tokens") < text.index('data-chart="shares"')


def test_unpriced_models_are_named_in_a_warning_and_never_priced_at_zero(
        rich_page: Path) -> None:
    text = rich_page.read_text(encoding="utf-8")
    warning = re.search(r'<p class="warn">(.*?)</p>', text, re.S)
    assert warning and UNPRICED in warning.group(1) and "140 calls" in warning.group(1)
    row = re.search(rf"{UNPRICED}</span>.*?</tr>", text, re.S)
    assert row and "not priced" in row.group(0) and "$0.00" not in row.group(0)
    assert "140 calls not priced" in text


def test_the_replay_highlights_the_sweet_spot(rich_page: Path) -> None:
    text = rich_page.read_text(encoding="utf-8")
    replay = svgs(text)["replay"]
    assert replay.count(f'fill="{page.SWEET}"') == 1 and "21.0% ★ sweet spot" in replay
    assert re.search(r'<tr class="best"><td class="num">100,000</td>', text)


def test_session_curves_mark_compactions_and_the_150k_line(rich_page: Path) -> None:
    report = rich_report()
    charts = svgs(rich_page.read_text(encoding="utf-8"))
    for i, s in enumerate(report.sessions[:10]):
        chart = charts[f"session-{i}"]
        assert chart.count(f'stroke="{page.COMPACTION}"') == len(s.compactions) > 0
        assert chart.count('stroke-dasharray="6 4"') == 1 and ">150k<" in chart
        points = re.search(r'<polyline points="([^"]+)"', chart)
        assert points and len(points.group(1).split()) == len(s.curve) >= 100


def test_an_empty_report_says_no_data_without_dividing_by_zero(tmp_path: Path) -> None:
    report = empty_report(tmp_path)
    assert report.totals.equiv == 0 and report.replay.best is None
    path = tmp_path / "empty.html"
    page.write_html(report, path)
    text = path.read_text(encoding="utf-8")
    charts = svgs(text)
    assert list(charts) == ["shares", "big-sessions", "days", "replay"]
    assert all("no data" in svg for svg in charts.values())
    assert "No sessions." in text and "Nothing stood out." in text


def test_a_session_without_main_thread_calls_gets_an_empty_chart() -> None:
    report = rich_report()
    first, second, *rest = report.sessions
    sessions = (first._replace(curve=(), compactions=(), peak_context=0),
                second._replace(curve=((1, 25_353),), compactions=()), *rest)
    charts = svgs(page.render_html(report._replace(sessions=sessions)))
    assert "no main-thread calls" in charts["session-0"]
    assert "<circle" in charts["session-1"]


def test_the_cli_writes_the_page(cli: Callable[..., Any], tmp_path: Path) -> None:
    out = tmp_path / "out" / "xray.html"
    out.parent.mkdir()
    result = cli("xray", "--days", "0", "--html", str(out))
    assert result.code == 0, result.err
    assert 'data-chart="days"' in out.read_text(encoding="utf-8")


def test_an_unwritable_path_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="cannot write the HTML report"):
        page.write_html(rich_report(), tmp_path / "missing" / "xray.html")


@needs_chromium
def test_chromium_parses_every_chart(rich_page: Path, tmp_path: Path) -> None:
    dom = chromium(tmp_path, "--dump-dom", rich_page.as_uri()).decode("utf-8")
    charts = svgs(dom)
    assert list(charts) == CHARTS
    assert all("<rect" in svg or "<polyline" in svg for svg in charts.values())
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and "<script" not in dom


@needs_chromium
def test_chromium_paints_the_charts(rich_page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "page.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,4400", "--hide-scrollbars",
             "--force-device-scale-factor=1", rich_page.as_uri())
    png = Png(shot.read_bytes())
    assert (png.width, png.height) == (1280, 4400)
    found = {colour: png.find(colour) for colour in [
        *(c for _, c in page.KINDS.values()), page.BIG, page.SAVING, page.SWEET, page.CURVE,
        page.COMPACTION]}
    for colour, (count, _) in found.items():
        assert count >= 300, colour
    shares, replay, curves = found[page.BIG][1], found[page.SAVING][1], found[page.CURVE][1]
    assert shares[1] < replay[1] < curves[1]  # painted in the page's order
    assert replay[2] - replay[0] > 600 and png.ink(replay) > 0.15
    assert curves[2] - curves[0] > 600 and curves[3] - curves[1] > 1000  # 2 columns, 5 rows
    assert png.ink(curves) > 0.05
    colours = {row[x:x + 3] for row in png.rows[::7] for x in range(0, len(row), png.bpp * 3)}
    assert len(colours) > 100  # text, anti-aliasing and fills: a page, not a blank
