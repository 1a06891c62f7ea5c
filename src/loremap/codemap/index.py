"""`loremap index`: bring the code map in line with the repository, re-reading only what moved.

A file whose (size, mtime) matches the index is not read; one whose content hash matches is
not parsed. Parsing runs in worker processes when there is enough of it (codemap/pool.py:
they die with this process). The graph (imports, references, co-change), the ranks and the
module nodes are then recomputed from what the index holds, which needs no file I/O, and the
map pages are rendered.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from loremap.codemap.discover import Skipped, SkipRules, SourceFile, discover, sniff
from loremap.codemap.graph import rebuild_graph
from loremap.codemap.history import read_history
from loremap.model import Edge
from loremap.model.code import CodeFile, Definition, FileStamp, module_of, section_starts
from loremap.store import IndexStore
from loremap.text import Analyzer
from loremap.vault.fs import trusted_mtime

_PARALLEL_FROM = 64  # below this many files to parse, worker start-up costs more than it saves
_HEAD_META = "code.head"
# Bump when the way edges or ranks are computed changes: an index built by another version of
# the rules is then re-derived in full instead of mixing old and new edges.
GRAPH_VERSION = "2"
_GRAPH_META = "code.graph_version"
# Bump when what parsing extracts changes (queries, docstring rules): every file is parsed again.
PARSE_VERSION = "4"
_PARSE_META = "code.parse_version"

Progress = Callable[[int, int], None]


class IndexReport(NamedTuple):
    """What an index run did."""

    files: int
    parsed: int
    removed: int
    skipped: dict[str, int]
    history: str
    seconds: float
    changed: bool
    modules: frozenset[str] | None = None  # the only modules whose pages can differ (None: all)


class _Job(NamedTuple):
    root: str
    file: SourceFile
    old_hash: str | None
    languages: tuple[str, ...] = ("en",)  # the analyzer's, for the full-text tokens


_ANALYZERS: dict[tuple[str, ...], Analyzer] = {}  # one per worker process and language set


class _Touch(NamedTuple):
    path: str
    size: int
    mtime_ns: int


def _read(job: _Job) -> CodeFile | Skipped | _Touch:
    """Read, sniff, hash and parse one file (runs in a worker process)."""
    file = job.file
    try:
        with open(os.path.join(job.root, file.path), "rb") as fh:
            data = fh.read()
            st = os.fstat(fh.fileno())
    except OSError:
        return Skipped(file.path, "vanished")
    digest = hashlib.sha1(data, usedforsecurity=False).hexdigest()
    mtime = trusted_mtime(st.st_mtime_ns)  # a same-size edit within one clock tick is seen
    if digest == job.old_hash:
        return _Touch(file.path, st.st_size, mtime)
    module = module_of(file.path)
    reason = sniff(file.path, data[:8192])
    if reason is not None:  # recorded with its reason, so it is not read again until it changes
        return CodeFile(file.path, module, None, st.st_size, mtime, digest, skip=reason)
    if file.language is None:
        return CodeFile(file.path, module, None, st.st_size, mtime, digest)
    # Only here: a file whose content did not change (a touch) never loads the parsers, so the
    # session-start hook stays off tree-sitter when nothing changed.
    from loremap.codemap.parse import parse_source

    facts = parse_source(file.path, file.language, data)
    analyzer = _ANALYZERS.get(job.languages)
    if analyzer is None:
        analyzer = _ANALYZERS.setdefault(job.languages, Analyzer(job.languages))
    source = data.decode("utf-8", "replace")
    text = " ".join(analyzer.tokens(source))
    return CodeFile(file.path, module, file.language, st.st_size, mtime, digest,
                    facts.docstring, facts.imports, facts.definitions, facts.references,
                    syntax_errors=facts.syntax_errors, text=text,
                    chunks=sections(file.path, source, facts.definitions, analyzer))


def sections(path: str, source: str, definitions: Iterable[Definition], analyzer: Analyzer
             ) -> tuple[tuple[int, str], ...]:
    """The file cut at its definitions into sections (`section_starts`), each as
    (first line, analyzer tokens of the path and the section's lines)."""
    lines = source.split("\n")
    bounds = section_starts([d.line for d in definitions], len(lines))
    head = " ".join(analyzer.tokens(path))
    out = []
    for first, end in zip(bounds, [*bounds[1:], len(lines) + 1], strict=True):
        body = " ".join(analyzer.tokens("\n".join(lines[first - 1:end - 1])))
        if body:
            out.append((first, f"{head} {body}"))
    return tuple(out)


def _results(jobs: list[_Job], workers: int) -> Iterator[CodeFile | Skipped | _Touch]:
    if workers <= 1 or len(jobs) < _PARALLEL_FROM:
        yield from map(_read, jobs)
        return
    from loremap.codemap.pool import parse_pool

    with parse_pool(workers) as pool:  # its workers die with this process (SIGKILL included)
        yield from pool.map(_read, jobs, chunksize=16)


def _plan(root: Path, rules: SkipRules, stamps: dict[str, FileStamp],
          languages: tuple[str, ...]) -> tuple[list[_Job], set[str], Counter[str]]:
    jobs: list[_Job] = []
    seen: set[str] = set()
    skipped: Counter[str] = Counter()
    for item in discover(root, rules):
        if isinstance(item, Skipped):
            skipped[item.reason] += 1
            continue
        old = stamps.get(item.path)
        if old is not None and old.size == item.size and old.mtime_ns == item.mtime_ns:
            seen.add(item.path)
            continue
        jobs.append(_Job(str(root), item, old.content_hash if old else None, languages))
        seen.add(item.path)
    return jobs, seen, skipped


def index_code(store: IndexStore, root: Path, rules: SkipRules, head: str | None,
               workers: int = 1, progress: Progress | None = None,
               history_commits: int = 1000) -> IndexReport:
    """Index the repository at `root` into `store`; returns what changed."""
    started = time.perf_counter()
    stamps = store.file_stamps()
    new_parser = store.meta(_PARSE_META) != PARSE_VERSION
    jobs, seen, skipped = _plan(root, rules, {} if new_parser else stamps,
                                store.analyzer.languages)
    removed = sorted(set(stamps) - seen)
    head_moved = store.meta(_HEAD_META) != (head or "")
    new_rules = store.meta(_GRAPH_META) != GRAPH_VERSION
    parsed, changed_paths, history = 0, [], "unchanged"
    ranks_moved = True
    affected: set[str] = set()  # names whose set of defining files changed
    configs_moved = False  # tsconfig.json, go.mod, ...: what any import resolves to may change
    if jobs or removed or head_moved or new_rules:
        with store.write():
            for done, result in enumerate(_results(jobs, workers), start=1):
                if isinstance(result, Skipped):  # vanished while we were reading
                    seen.discard(result.path)
                    if result.path in stamps:
                        removed.append(result.path)
                elif isinstance(result, _Touch):
                    store.touch_file(result.path, result.size, result.mtime_ns)
                else:
                    configs_moved |= result.language is None and result.skip is None
                    old = store.defined_names([result.path]) if result.path in stamps else set()
                    affected |= old ^ {d.name for d in result.definitions}
                    store.upsert_file(result)
                    parsed += 1
                    changed_paths.append(result.path)
                if progress is not None:
                    progress(done, len(jobs))
            affected |= store.defined_names(removed)
            store.delete_files(removed)
            if head_moved:
                history = _apply_history(store, root, seen, history_commits)
                store.set_meta(_HEAD_META, head or "")
            if changed_paths or removed or head_moved or new_rules:
                files_moved = (bool(removed) or configs_moved
                               or any(p not in stamps for p in changed_paths))
                ranks_moved = rebuild_graph(store, root, changed_paths, affected,
                                            reresolve=files_moved or new_rules, full=new_rules)
                store.set_meta(_GRAPH_META, GRAPH_VERSION)
            store.set_meta(_PARSE_META, PARSE_VERSION)
    skipped.update(store.skipped_counts())
    files = store.source_file_count()
    local = not (ranks_moved or removed or head_moved)
    changed = bool(changed_paths or removed or head_moved or new_rules)
    return IndexReport(files, parsed, len(removed), dict(skipped), history,
                       time.perf_counter() - started, changed,
                       frozenset(module_of(p) for p in changed_paths) if local else None)


def _apply_history(store: IndexStore, root: Path, files: set[str], commits: int) -> str:
    history = read_history(root, max_commits=commits)
    if history is None:
        store.replace_edges("cochange", [])
        store.set_subjects({})
        return "no git history"
    edges: Iterable[Edge] = (
        Edge(a, b, "co_changes", "cochange", weight)
        for (a, b), weight in history.cochange.items() if a in files and b in files)
    store.replace_edges("cochange", edges)
    store.set_subjects(history.subjects)
    note = " (shallow clone: co-change is partial)" if history.shallow else ""
    return f"{history.commits} commits{note}"


def tty_progress(label: str) -> Progress | None:
    """A progress bar on stderr when it is a terminal, else None."""
    if not sys.stderr.isatty():
        return None
    last = [-1]

    def show(done: int, total: int) -> None:
        percent = done * 100 // max(total, 1)
        if percent == last[0] and done != total:
            return
        last[0] = percent
        bar = "#" * (percent // 4)
        sys.stderr.write(f"\r{label} [{bar:<25}] {done}/{total}")
        _drawing[0] = done != total
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


_drawing = [False]  # a bar is drawn and not finished: the cursor is at its end


def end_progress() -> None:
    """End a bar a failed command left unfinished, so that its error starts a line."""
    if _drawing[0]:
        _drawing[0] = False
        sys.stderr.write("\n")
        sys.stderr.flush()
