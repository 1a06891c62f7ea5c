"""Code-map speed on real open-source code, each step as a whole `loremap` process.

    python bench/codemap.py [--cache DIR] [--skip-ts] [--aider]

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

With `--aider` that anchor is measured in the same run: `aider-chat` is installed into a venv
under the cache (reused afterwards), and a small driver builds Aider's map (RepoMap,
map_tokens=1024, a dummy model counting len/4 tokens) over the files loremap indexed, cold (no
tag cache) and warm, each as a whole process with PYTHONHASHSEED=0 (Aider's ranking iterates
sets, so its order changes with the hash seed) and tree-sitter captures sorted by position
(their order varies per process, and Aider counts the last one twice, so without the sort the
cold ranking differs run to run; the warm one repeats whatever the cold run cached).
Printed beside loremap's numbers, with the 20 most central files of each: loremap's by
`files.rank` in its index, Aider's by first appearance in `RepoMap.get_ranked_tags` (the order
its map fills the token budget in). Aider's
"warm" builds and renders the map; loremap's is `loremap index` (its render is `loremap map`).
If the install or the driver fails, one line says why and the rest still runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

LOREMAP = [sys.executable, "-m", "loremap"]
TOP = 20


class ProcessFailed(SystemExit):
    """A measured process exited non-zero. Uncaught, it ends the benchmark with the command
    and the tail of its stderr; the Aider comparison catches it and reports `last_line`."""

    def __init__(self, cmd: list[str], stderr: str) -> None:
        super().__init__(f"{' '.join(cmd)} failed: {stderr[-500:]}")
        lines = stderr.strip().splitlines()
        self.last_line = lines[-1] if lines else "no output"


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one process."""
    # stderr goes to a file, not a pipe: Aider's progress bar would fill a pipe nobody reads.
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            errors.seek(0)
            raise ProcessFailed(cmd, errors.read().decode(errors="replace"))
    return seconds, usage.ru_maxrss / 1024


REPEAT = 5  # warm and one-change runs are short: the median of several resists the noise


def median_run(runs: list[tuple[float, float]]) -> tuple[float, float]:
    """The (seconds, RSS) pair of the median run by time."""
    return sorted(runs)[len(runs) // 2]


def spread(runs: list[tuple[float, float]]) -> str:
    times = sorted(seconds for seconds, _ in runs)
    return f"{times[0]:.2f}-{times[-1]:.2f} s"


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


class Timings(NamedTuple):
    """Cold and warm wall seconds and peak RSS (MB) of one tool on one corpus."""

    cold: float
    cold_rss: float
    warm: float
    warm_rss: float


def bench(name: str, source: Path, work: Path, env: dict[str, str]) -> tuple[Path, Timings]:
    root = work / name
    shutil.copytree(source, root, symlinks=True)
    cold, cold_rss = run([*LOREMAP, "init"], root, env)
    warms = [run([*LOREMAP, "index"], root, env) for _ in range(REPEAT)]
    changed = central_file(root, env)
    ones = []
    for _ in range(REPEAT):
        with open(root / changed, "a", encoding="utf-8") as fh:
            fh.write("\n")
        ones.append(run([*LOREMAP, "index"], root, env))
    render, _ = run([*LOREMAP, "map"], root, env)
    floor, files = parse_floor(root)
    (warm, warm_rss), (one, one_rss) = median_run(warms), median_run(ones)
    print(f"{name}: {files} source files")
    print(f"  cold init        {cold:6.2f} s  {files / cold:6.0f} files/s  "
          f"peak RSS {cold_rss:5.0f} MB   (single-process parse floor {floor:.2f} s)")
    print(f"  warm, no change  {warm:6.2f} s  peak RSS {warm_rss:5.0f} MB  "
          f"(median of {REPEAT}; {spread(warms)})")
    print(f"  one file changed {one:6.2f} s  peak RSS {one_rss:5.0f} MB  "
          f"(median of {REPEAT}; {spread(ones)}; {changed})")
    print(f"  loremap map      {render:6.2f} s")
    return root, Timings(cold, cold_rss, warm, warm_rss)


# Runs inside the aider venv: argv is root, a JSON list of relative paths, the JSON out file.
AIDER_DRIVER = """\
import json, sys, time

import aider
from aider.io import InputOutput
from aider.repomap import RepoMap


class TokenModel:  # all RepoMap asks of the main model
    def token_count(self, text):
        return len(text) // 4


root, files_json, out_json = sys.argv[1:4]
with open(files_json, encoding="utf-8") as fh:
    fnames = [f"{root}/{path}" for path in json.load(fh)]
start = time.perf_counter()
io = InputOutput(pretty=False, yes=True, fancy_input=False)
repo_map = RepoMap(map_tokens=1024, root=root, main_model=TokenModel(), io=io)
# py-tree-sitter 0.25 orders each capture list differently per process, and get_tags_raw
# counts the last node twice (Aider-AI/aider#5580): sorted, the cold map is reproducible.
run_captures = repo_map._run_captures
def sorted_captures(query, node):
    captures = run_captures(query, node)
    return {tag: sorted(captures[tag], key=lambda n: (n.start_byte, n.end_byte))
            for tag in sorted(captures)}
repo_map._run_captures = sorted_captures
ranked = []
get_ranked_tags = repo_map.get_ranked_tags
def keep_ranked(*args, **kwargs):
    ranked.extend(get_ranked_tags(*args, **kwargs))
    return ranked
repo_map.get_ranked_tags = keep_ranked
text = repo_map.get_repo_map([], fnames) or ""
seconds = time.perf_counter() - start
with open(out_json, "w", encoding="utf-8") as fh:
    json.dump({"version": aider.__version__, "seconds": seconds, "map_chars": len(text),
               "files": list(dict.fromkeys(tag[0] for tag in ranked))}, fh)
"""


def aider_python(cache: Path) -> Path:
    """The interpreter of a venv under `cache` with aider-chat, installed on first use.
    Raises RuntimeError with a one-line reason if it cannot be had."""
    venv = cache / "aider-venv"
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import aider.repomap"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    steps = [[sys.executable, "-m", "venv", "--clear", str(venv)],
             [str(python), "-m", "pip", "install", "-q", "aider-chat"], probe]
    for step in steps:
        try:
            result = subprocess.run(step, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RuntimeError(f"{' '.join(step[:4])}: {exc}") from exc
        if result.returncode != 0:
            lines = [line for line in result.stderr.splitlines()
                     if line.strip() and not line.startswith("WARNING:")]
            raise RuntimeError(f"{' '.join(step[:4])}: "
                               f"{lines[-1] if lines else f'exit {result.returncode}'}")
    return python


def indexed_files(root: Path, top: int | None = None) -> list[str]:
    """Source files in loremap's index of `root`, most central first."""
    import sqlite3
    from contextlib import closing

    query = ("SELECT path FROM files WHERE language IS NOT NULL AND skip IS NULL"
             " ORDER BY rank DESC, path" + (f" LIMIT {top}" if top else ""))
    uri = f"file:{root / '.loremap' / 'index.sqlite'}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as db:
        return [path for (path,) in db.execute(query)]


class AiderRun(NamedTuple):
    """What the driver reported: Aider's version, its files in ranked order, and the seconds
    of the map call itself (without interpreter start-up and imports), cold and warm."""

    version: str
    files: list[str]
    cold_call: float
    warm_call: float
    stable: bool  # cold and warm ranked the files the same


def aider_map(python: Path, root: Path, work: Path,
              env: dict[str, str]) -> tuple[Timings, AiderRun]:
    """Aider's map of the files loremap indexed, cold then warm, each a whole process."""
    driver, files, out = work / "aider_driver.py", work / "aider_files.json", work / "aider.json"
    driver.write_text(AIDER_DRIVER, encoding="utf-8")
    files.write_text(json.dumps(sorted(indexed_files(root))), encoding="utf-8")
    for stale in root.glob(".aider.tags.cache.v*"):
        shutil.rmtree(stale)
    cmd = [str(python), str(driver), str(root), str(files), str(out)]
    env = {**env, "PYTHONHASHSEED": "0"}
    cold, cold_rss = run(cmd, root, env)
    first = json.loads(out.read_text(encoding="utf-8"))
    warm, warm_rss = run(cmd, root, env)
    second = json.loads(out.read_text(encoding="utf-8"))
    return Timings(cold, cold_rss, warm, warm_rss), AiderRun(
        second["version"], second["files"], first["seconds"], second["seconds"],
        first["files"] == second["files"])


def compare_aider(name: str, python: Path, root: Path, ours: Timings, work: Path,
                  env: dict[str, str]) -> None:
    try:
        theirs, aider = aider_map(python, root, work, env)
    except ProcessFailed as exc:
        # Trigger: the driver crashed (an aider-chat release changed RepoMap, say).
        # Why/Outcome: as for a failed install: one line, and the benchmark goes on.
        print(f"aider: skipped ({name}: {exc.last_line})")
        return
    mine, aider_files = indexed_files(root, TOP), aider.files[:TOP]
    width = max(len("loremap"), *map(len, mine)) + 2
    print(f"{name}: loremap vs Aider {aider.version} repo map (map_tokens=1024, tokens = "
          f"len/4, PYTHONHASHSEED=0), same files")
    print(f"  {'':18}{'loremap':>10}{'aider':>10}")
    print(f"  {'cold':18}{ours.cold:8.2f} s{theirs.cold:8.2f} s"
          f"   (aider map call {aider.cold_call:.2f} s in-process)")
    print(f"  {'warm':18}{ours.warm:8.2f} s{theirs.warm:8.2f} s"
          f"   (aider map call {aider.warm_call:.2f} s in-process)")
    print(f"  {'peak RSS cold':18}{ours.cold_rss:7.0f} MB{theirs.cold_rss:7.0f} MB")
    print(f"  {'peak RSS warm':18}{ours.warm_rss:7.0f} MB{theirs.warm_rss:7.0f} MB")
    print(f"  {TOP} most central files (loremap: files.rank; aider: first appearance in "
          "get_ranked_tags)")
    print(f"      {'loremap':{width}}aider")
    for i, (left, right) in enumerate(zip(mine, aider_files, strict=False), 1):
        print(f"  {i:2}  {left:{width}}{right}")
    print(f"  overlap: {len(set(mine) & set(aider_files))} of {TOP}"
          + ("" if aider.stable else "  (note: Aider's cold and warm rankings differ)"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "loremap-bench-corpora")
    parser.add_argument("--skip-ts", action="store_true")
    parser.add_argument("--aider", action="store_true",
                        help="also run Aider's repo map (installs aider-chat into the cache)")
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
        aider = None
        if args.aider:
            try:
                aider = aider_python(args.cache)
            except RuntimeError as exc:
                # Trigger: no network, no PyPI, or aider-chat does not build on this Python.
                # Why: the loremap numbers are the point of the run; Aider is the anchor.
                # Outcome: one line says why, and the benchmark goes on without it.
                print(f"aider: skipped ({exc})")
        corpora = [("django-5.1.4", fetch_django(args.cache))]
        rxjs = None if args.skip_ts else fetch_rxjs(args.cache)
        if rxjs is not None:
            corpora.append(("rxjs-7.8.1", rxjs))
        for name, source in corpora:
            root, ours = bench(name, source, work, env)
            if aider is not None:
                compare_aider(name, aider, root, ours, work, env)
        if rxjs is None and not args.skip_ts:
            print("rxjs: skipped (npm not found)")


if __name__ == "__main__":
    main()
