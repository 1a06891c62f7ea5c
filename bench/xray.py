"""X-ray speed and memory on ~1 GB of synthetic Claude Code transcripts, next to ccusage 18.

    python bench/xray.py [--size 1G] [--quick] [--seed 1] [--no-ccusage]

Why: a heavy user's `~/.claude/projects` holds gigabytes of transcripts, and `loremap xray`
must read all of them in one pass. The targets: 1 GB in <= 30 s, and a peak RSS <= 300 MB
whatever the corpus size (memory bounded by the largest session, not by the corpus).

The corpus is written by tests/transcripts.py (`generate_bytes`: heavy-tailed sessions,
sub-agents, compactions, split API calls, several models) and cached under
/tmp/xraybench-v<generator version>-s<seed>-<size>/, so later runs skip generation. Every file
is read once before timing, so both tools see a warm page cache; that read is printed as the
I/O floor. Each tool runs once as a separate process; wall time is measured around it and peak
RSS comes from `os.wait4` on that process (its own rusage, descendants included: npx's node
child counts). ccusage 18.0.11 (`session --json --offline`: bundled prices, no network) runs on
the same data when `npx` is present; its entry point is run with `node` directly when the npx
cache holds it, so npm's start-up is not billed to it.

How to read the output: MB/s and calls/s for each tool, then the ratios (ccusage / X-ray:
above 1 means the X-ray is faster or leaner). The X-ray's totals are checked against the
generator's known totals (exact); ccusage's output is expected to equal the sum of first-line
figures (it keeps the first line of a split call, see tests/test_xray_ccusage.py). Machines are
shared and noisy: read the ratios. Anchor measured on this machine: ccusage 18 reads 231 MB of
real Claude Code transcripts (4,182 files, 107k API calls) in 6.6 s with an 840 MB peak RSS.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from transcripts import VERSION, Expected, generate_bytes  # noqa: E402

CCUSAGE = "ccusage@18.0.11"
NPM_CACHE = Path(os.path.expanduser("~")) / ".npm"
TARGET_SECONDS_PER_GB = 30.0
TARGET_RSS_MB = 300.0
MB = 1_000_000
FIELDS = ("calls", "input", "cache_write_5m", "cache_write_1h", "cache_read", "output")


@dataclass
class Run:
    seconds: float
    rss_mb: float
    code: int
    stdout: str
    stderr: str


def parse_size(text: str) -> int:
    units = {"K": 1_000, "M": MB, "G": 1_000 * MB}
    text = text.upper().rstrip("B")
    if text[-1:] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def corpus(size: int, seed: int) -> tuple[Path, Expected]:
    """The cached corpus for (generator version, seed, size), generated on first use."""
    folder = Path(tempfile.gettempdir()) / f"xraybench-v{VERSION}-s{seed}-{size // MB}M"
    marker = folder / "expected.json"
    if marker.exists():
        return folder, Expected.from_json(json.loads(marker.read_text(encoding="utf-8")))
    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    expected = generate_bytes(folder, size, seed)
    print(f"generated {folder} in {time.perf_counter() - started:.1f} s")
    tmp = marker.with_suffix(".tmp")
    tmp.write_text(json.dumps(expected.to_json()), encoding="utf-8")
    os.replace(tmp, marker)  # written last: a half-generated corpus has no marker
    return folder, expected


def warm(folder: Path) -> tuple[float, int]:
    """Read every transcript once (page cache); the seconds it took and the bytes read."""
    started = time.perf_counter()
    total = 0
    for path in (folder / "projects").rglob("*.jsonl"):
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                total += len(chunk)
    return time.perf_counter() - started, total


def largest_session(folder: Path) -> int:
    """Bytes of the biggest session: its main file plus its sub-agents' files."""
    sizes: dict[str, int] = {}
    for path in (folder / "projects").rglob("*.jsonl"):
        rel = path.relative_to(folder / "projects").parts
        key = f"{rel[0]}/{rel[1].removesuffix('.jsonl')}"
        sizes[key] = sizes.get(key, 0) + path.stat().st_size
    return max(sizes.values(), default=0)


def measure(cmd: list[str], env: dict[str, str]) -> Run:
    """Run `cmd`; wall time and the peak RSS of that process tree (os.wait4's own rusage,
    unlike RUSAGE_CHILDREN, which is the maximum over every child this script ever had)."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out, \
            tempfile.TemporaryFile("w+", encoding="utf-8") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=tempfile.gettempdir())
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(seconds, usage.ru_maxrss / 1024, proc.returncode, out.read(), err.read())


def ccusage_command() -> list[str] | None:
    """`node <ccusage entry point>` from the npx cache, else `npx -y ccusage@18.0.11`."""
    if shutil.which("npx") is None:
        return None
    env = npm_env()
    subprocess.run(["npx", "-y", CCUSAGE, "--version"], env=env, capture_output=True,
                   timeout=600, check=False)
    pattern = str(NPM_CACHE / "_npx" / "*" / "node_modules" / "ccusage" / "package.json")
    for manifest in sorted(glob.glob(pattern)):
        meta = json.loads(Path(manifest).read_text(encoding="utf-8"))
        bin_path = meta.get("bin", {}).get("ccusage") if isinstance(meta.get("bin"), dict) \
            else meta.get("bin")
        if meta.get("version") == CCUSAGE.split("@")[1] and bin_path and shutil.which("node"):
            return ["node", str(Path(manifest).parent / bin_path)]
    return ["npx", "-y", CCUSAGE]


def npm_env() -> dict[str, str]:
    return {**os.environ, "npm_config_cache": str(NPM_CACHE),
            "npm_config_update_notifier": "false", "NO_COLOR": "1"}


def check(name: str, got: dict[str, int], want: dict[str, int]) -> str:
    wrong = [f"{k} {got.get(k, 0):,} vs {v:,} ({(got.get(k, 0) - v) / max(v, 1):+.2%})"
             for k, v in want.items() if got.get(k) != v]
    return f"{name} totals " + ("exact" if not wrong else "WRONG: " + "; ".join(wrong))


def report_tool(name: str, run: Run, expected: Expected) -> None:
    mb = expected.bytes / MB
    print(f"{name:8} {run.seconds:7.2f} s  {mb / run.seconds:7.1f} MB/s  "
          f"{expected.total.calls / run.seconds:9,.0f} calls/s  peak RSS {run.rss_mb:7.1f} MB")


def run_xray(folder: Path, expected: Expected) -> Run | None:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(folder)}
    run = measure([sys.executable, "-m", "loremap", "xray", "--json", "--days", "0"], env)
    if run.code != 0:
        print(f"xray failed ({run.code}): {run.stderr.strip()[-2000:]}")
        return None
    report_tool("xray", run, expected)
    totals = json.loads(run.stdout)["totals"]
    want = {k: getattr(expected.total, k) for k in FIELDS}
    print("  " + check("xray", totals, want))
    return run


def run_ccusage(folder: Path, expected: Expected) -> Run | None:
    cmd = ccusage_command()
    if cmd is None:
        print("ccusage  skipped: npx is not installed")
        return None
    env = {**npm_env(), "CLAUDE_CONFIG_DIR": str(folder)}
    run = measure([*cmd, "session", "--json", "--offline"], env)
    if run.code != 0:
        print(f"ccusage failed ({run.code}): {run.stderr.strip()[-2000:]}")
        return None
    report_tool("ccusage", run, expected)
    t = json.loads(run.stdout)["totals"]
    got = {"input": t["inputTokens"], "cache_write": t["cacheCreationTokens"],
           "cache_read": t["cacheReadTokens"], "output_first": t["outputTokens"]}
    e = expected.total
    want = {"input": e.input, "cache_write": e.cache_write, "cache_read": e.cache_read,
            "output_first": e.output_first}
    print("  " + check("ccusage", got, want) + f" (first-line output; "
          f"{e.output - e.output_first:,} output tokens of split calls not counted, "
          f"{(e.output - e.output_first) / e.output:.0%})")
    return run


def targets(xray: Run, expected: Expected) -> None:
    gb = expected.bytes / (1_000 * MB)
    limit = TARGET_SECONDS_PER_GB * gb
    verdict = "ok" if xray.seconds <= limit else "MISSED"
    print(f"target time  <= {limit:.1f} s for {gb:.2f} GB (30 s/GB): {xray.seconds:.1f} s "
          f"{verdict}")
    verdict = "ok" if xray.rss_mb <= TARGET_RSS_MB else "MISSED"
    print(f"target RSS   <= {TARGET_RSS_MB:.0f} MB: {xray.rss_mb:.0f} MB {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="1G", help="corpus size (default 1G; 100M, 2G...)")
    parser.add_argument("--quick", action="store_true", help="a 100 MB corpus")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-ccusage", action="store_true", help="skip the ccusage baseline")
    args = parser.parse_args()
    size = parse_size("100M" if args.quick else args.size)
    folder, expected = corpus(size, args.seed)
    seconds, read = warm(folder)
    print(f"corpus   {folder}: {expected.bytes / MB:,.0f} MB, {expected.files:,} files "
          f"({expected.sessions:,} sessions, {expected.forks:,} of them forked, "
          f"{expected.subagents:,} sub-agents), "
          f"{expected.total.calls:,} API calls in {expected.lines:,} lines, "
          f"{expected.compactions:,} compactions; largest session "
          f"{largest_session(folder) / MB:.1f} MB")
    print(f"floor    {seconds:7.2f} s  {read / MB / seconds:7.1f} MB/s  (reading the bytes, "
          f"warm cache)")
    xray = run_xray(folder, expected)
    cc = None if args.no_ccusage else run_ccusage(folder, expected)
    if xray and cc:
        print(f"ratio    ccusage/xray: time x{cc.seconds / xray.seconds:.2f}, "
              f"peak RSS x{cc.rss_mb / xray.rss_mb:.2f}")
    if xray:
        targets(xray, expected)
    print("anchor   ccusage 18 on 231 MB of real transcripts (4,182 files, 107k API calls): "
          "6.6 s, 840 MB peak RSS (this machine)")


if __name__ == "__main__":
    main()
