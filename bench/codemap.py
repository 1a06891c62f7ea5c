"""Code-map speed on real open-source code, each step as a whole `loremap` process.

    python bench/codemap.py [--cache DIR] [--skip-ts]

Corpora (downloaded once into the cache, never committed):
  - the Django 5.1.4 source distribution (`pip download --no-deps --no-binary :all:`),
    ~6,800 files, ~2,900 of them source; not a git repository, so discovery walks it;
  - the rxjs 7.8.1 npm package, which ships its TypeScript sources (`npm pack`).
For each: cold `loremap init` (parse everything, both cores), warm `loremap index` with nothing
changed, `loremap index` after one changed file, `loremap map`; wall time and the peak RSS of
the process. Baseline in the same run: tree-sitter parsing of the same files in one process
with no index at all (the parse floor), and `python -c pass`.
Targets (issue 3): Django cold <= 10 s, warm <= 0.5 s, one changed file <= 0.3 s, RSS <= 300 MB.
The anchor is Aider's repository map measured on this machine on the same sdist: cold 16 s,
warm 3.8 s, peak RSS ~280 MB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

LOREMAP = [sys.executable, "-m", "loremap"]


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode()[-500:]}")
    return seconds, usage.ru_maxrss / 1024


def fetch_django(cache: Path) -> Path:
    target = cache / "Django-5.1.4"
    if not target.is_dir():
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--no-binary", ":all:", "django==5.1.4", "-d", str(cache)], check=True)
        with tarfile.open(next(cache.glob("[Dd]jango-5.1.4.tar.gz"))) as tar:
            tar.extractall(cache, filter="data")
    return target


def fetch_rxjs(cache: Path) -> Path | None:
    target = cache / "rxjs-7.8.1"
    if target.is_dir():
        return target
    if shutil.which("npm") is None:
        return None
    subprocess.run(["npm", "pack", "--silent", "rxjs@7.8.1"], cwd=cache, check=True,
                   capture_output=True)
    with tarfile.open(cache / "rxjs-7.8.1.tgz") as tar:
        tar.extractall(cache / "rxjs-tmp", filter="data")
    (cache / "rxjs-tmp" / "package").rename(target)
    shutil.rmtree(cache / "rxjs-tmp")
    return target


def parse_floor(root: Path) -> tuple[float, int]:
    """Seconds to read and parse every source file in one process, with nothing else."""
    from loremap.codemap.discover import SkipRules, SourceFile, discover
    from loremap.codemap.parse import parse_source

    files = [f for f in discover(root, SkipRules())
             if isinstance(f, SourceFile) and f.language is not None]
    start = time.perf_counter()
    for f in files:
        parse_source(f.path, f.language, (root / f.path).read_bytes())
    return time.perf_counter() - start, len(files)


def central_file(root: Path, env: dict[str, str]) -> str:
    out = subprocess.run([*LOREMAP, "map", "--json"], cwd=root, env=env, check=True,
                         capture_output=True, text=True).stdout
    import json
    import re

    text = json.loads(out)["text"]
    return re.findall(r"^- `([^`]+\.[a-z]+)`", text, re.MULTILINE)[0]


def bench(name: str, source: Path, work: Path, env: dict[str, str]) -> None:
    root = work / name
    shutil.copytree(source, root, symlinks=True)
    cold, cold_rss = run([*LOREMAP, "init"], root, env)
    warm, warm_rss = run([*LOREMAP, "index"], root, env)
    changed = central_file(root, env)
    with open(root / changed, "a", encoding="utf-8") as fh:
        fh.write("\n")
    one, one_rss = run([*LOREMAP, "index"], root, env)
    render, _ = run([*LOREMAP, "map"], root, env)
    floor, files = parse_floor(root)
    print(f"{name}: {files} source files")
    print(f"  cold init        {cold:6.2f} s  {files / cold:6.0f} files/s  "
          f"peak RSS {cold_rss:5.0f} MB   (single-process parse floor {floor:.2f} s)")
    print(f"  warm, no change  {warm:6.2f} s  peak RSS {warm_rss:5.0f} MB")
    print(f"  one file changed {one:6.2f} s  peak RSS {one_rss:5.0f} MB  ({changed})")
    print(f"  loremap map      {render:6.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "loremap-bench-corpora")
    parser.add_argument("--skip-ts", action="store_true")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    import compileall

    import loremap

    compileall.compile_dir(str(Path(loremap.__file__).parent), quiet=1)
    with tempfile.TemporaryDirectory(prefix="loremap-codemap-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "LOREMAP_HOME": str(work / "home")}
        base, _ = run([sys.executable, "-c", "pass"], work, env)
        print(f"loremap bench/codemap.py — Python {sys.version.split()[0]}, {os.cpu_count()} CPUs;"
              f" `python -c pass` {base * 1000:.0f} ms")
        bench("django-5.1.4", fetch_django(args.cache), work, env)
        rxjs = None if args.skip_ts else fetch_rxjs(args.cache)
        if rxjs is not None:
            bench("rxjs-7.8.1", rxjs, work, env)
        elif not args.skip_ts:
            print("rxjs: skipped (npm not found)")


if __name__ == "__main__":
    main()
