"""Which files of a repository the code map reads, and which it skips and why.

The first stage of the code map (DESIGN.md section 5). Inside a git work tree git itself says
what belongs to the project (tracked files plus untracked ones that are not ignored); outside
git the folder is walked with its `.gitignore` files. Either way the result streams in path
order, so a 100k-file repository never sits in memory as one list, and every file that is left
out for a reason the user may want to know (too large, vendored, generated) is reported as a
`Skipped` rather than silently dropped.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from loremap.codemap.languages import language_for
from loremap.codemap.patterns import Excludes, compile_excludes
from loremap.git import in_work_tree, ls_files

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec


class SourceFile(NamedTuple):
    """A file the code map reads: source in a known language, or a config file (language None)
    that the import resolver needs."""

    path: str  # repository-relative, POSIX separators
    language: str | None
    size: int
    mtime_ns: int


class Skipped(NamedTuple):
    """A file (or a directory, path ending in "/") left out, with the reason shown to the user:
    "over 1 MB", "binary", "minified", "generated", "vendored", "excluded", "symlink",
    "unreadable"."""

    path: str
    reason: str


# Default exclusions, gitignore syntax, by the reason reported for them. A directory pattern
# ("name/") prunes the whole tree and is reported once as `Skipped("…/name/", reason)`.
_VENDORED = (
    "node_modules/", "bower_components/", "jspm_packages/",  # JS package managers
    "vendor/", "third_party/", "third-party/",  # Go, PHP, Ruby and C/C++ copies of dependencies
    "Pods/", "Carthage/",  # iOS dependency managers
    ".venv/", "venv/", ".tox/", ".nox/", "site-packages/",  # Python environments
    ".yarn/",  # yarn berry's cache and plugins
    "*-[0-9]*.[0-9]*.[0-9]*.js", "*-[0-9]*.[0-9]*.[0-9]*.css",  # jquery-3.5.1.js: a library copy
)  # fmt: skip
_BUILD_OUTPUT = (
    "dist/", "build/", "out/", "target/",  # bundler, setuptools, tsc, Cargo/Maven output
    ".next/", ".nuxt/", ".svelte-kit/", ".angular/", ".gradle/",  # framework build caches
    "coverage/", "htmlcov/",  # coverage reports
)  # fmt: skip
_CACHES = (
    "__pycache__/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/",  # tool caches
    ".loremap/",  # loremap's own data
)  # fmt: skip
_MINIFIED = (
    "*.min.js", "*.min.mjs", "*.min.css", "*-min.js",  # minified bundles
    "*.map",  # source maps
)  # fmt: skip
_GENERATED = (
    "*.pb.go", "*.pb.cc", "*.pb.h", "*_pb2.py", "*_pb2.pyi", "*_pb2_grpc.py",  # protobuf
    "*_pb.js", "*_pb.d.ts", "*_grpc_pb.js",  # protobuf for JS
    "*.g.dart", "*.freezed.dart",  # Dart build_runner
    "*.generated.*", "zz_generated.*", "*.Designer.cs",  # codegen naming conventions
    # Lock files: not read today, listed so a future JSON/YAML/TOML reader does not pick them up.
    "*.lock", "package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "yarn.lock",
)  # fmt: skip
_REASONS: dict[str, str] = {
    **dict.fromkeys(_VENDORED, "vendored"),
    **dict.fromkeys(_BUILD_OUTPUT, "generated"),
    **dict.fromkeys(_CACHES, "excluded"),
    **dict.fromkeys(_MINIFIED, "minified"),
    **dict.fromkeys(_GENERATED, "generated"),
}
DEFAULT_EXCLUDE: tuple[str, ...] = tuple(_REASONS)


class SkipRules(NamedTuple):
    """What to leave out. `exclude` holds gitignore-style patterns (`*`, `?`, `[…]`, `**`, a
    leading `/` anchors to the root, a trailing `/` matches directories only, `!` re-includes);
    the default ones report vendored/generated/minified, any other pattern reports "excluded"."""

    max_bytes: int = 1_000_000
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE


# Not source, but what the import resolver reads (package names, path aliases, module roots),
# plus READMEs for a module's summary.
_CONFIG_FILES = frozenset({
    "package.json", "jsconfig.json", "go.mod", "Cargo.toml", "composer.json", "pyproject.toml",
    "setup.cfg", "pubspec.yaml",
})  # fmt: skip


def _is_config_file(path: str) -> bool:
    """Whether a path is a config file or README the code map reads although it is not source."""
    name = path.rpartition("/")[2]
    return (name in _CONFIG_FILES or name.lower().startswith("readme")
            or (name.startswith("tsconfig") and name.endswith(".json")))


def discover(root: Path, rules: SkipRules) -> Iterator[SourceFile | Skipped]:
    """The files of the repository at `root`, sorted by path, streamed.

    Yields a SourceFile for each readable source or config file within the rules, and a Skipped
    for each such file (or excluded directory, once) left out. Files in no language loremap
    reads are not yielded at all. Content checks (binary, minified, generated) are the caller's:
    see `sniff`.
    """
    root = Path(root)
    matcher = _compile(rules.exclude)
    if in_work_tree(root):
        return _from_git(root, rules, matcher)
    return _from_walk(root, rules, matcher)


@lru_cache(maxsize=8)
def _compile(patterns: tuple[str, ...]) -> Excludes:
    return compile_excludes(patterns, _REASONS)


# ---- git work trees ----

def _from_git(root: Path, rules: SkipRules, matcher: Excludes) -> Iterator[SourceFile | Skipped]:
    inside = _Inside(root)
    clean: list[str] = []  # directory prefixes of the last path, known not excluded
    pruned = "\0"  # the excluded directory being passed over
    for path in ls_files(root):
        if path.endswith("/") or path.startswith(pruned):  # "/": an untracked nested repository
            continue
        parts = path.split("/")[:-1]
        depth = 0
        while depth < min(len(parts), len(clean)) and parts[depth] == clean[depth]:
            depth += 1
        del clean[depth:]
        for part in parts[depth:]:
            directory = "/".join([*clean, part])
            reason = matcher.reason(directory, is_dir=True)
            if reason is not None:
                pruned = directory + "/"
                yield Skipped(pruned, reason)
                break
            clean.append(part)
        else:
            found = _check_file(root, path, rules, matcher, inside)
            if found is not None:
                yield found


# ---- one file, either mode ----

class _Inside:
    """Whether a symlink's target lies inside the root."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.real = root.resolve()

    def target(self, path: str) -> os.stat_result | None:
        """The stat of the file `path` links to, or None if it is outside, dangling or a loop."""
        try:
            target = (self.root / path).resolve(strict=True)
            if not target.is_relative_to(self.real):
                return None
            return target.stat()
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop on Python < 3.13
            return None


def _check_file(root: Path, path: str, rules: SkipRules, matcher: Excludes, inside: _Inside,
                st: os.stat_result | None = None) -> SourceFile | Skipped | None:
    language = language_for(path)
    if language is None and not _is_config_file(path):
        return None
    reason = matcher.reason(path, is_dir=False)
    if reason is not None:
        return Skipped(path, reason)
    try:
        st = st or os.lstat(os.path.join(root, path))  # str join: one per file, on every run
    except FileNotFoundError:  # tracked but deleted from the work tree
        return None
    except OSError:
        return Skipped(path, "unreadable")
    if stat.S_ISLNK(st.st_mode):
        st = inside.target(path)
        if st is None:
            return Skipped(path, "symlink")
    if not stat.S_ISREG(st.st_mode):  # a submodule, a directory behind a symlink, a FIFO
        return None
    if st.st_size > rules.max_bytes:
        return Skipped(path, f"over {_size(rules.max_bytes)}")
    return SourceFile(path, language, st.st_size, st.st_mtime_ns)


def _size(limit: int) -> str:
    for unit, factor in (("MB", 1_000_000), ("KB", 1_000)):
        if limit >= factor and limit % factor == 0:
            return f"{limit // factor} {unit}"
    return f"{limit} bytes"


# ---- folders outside git ----

_Ignores = tuple[tuple[str, "GitIgnoreSpec"], ...]  # (directory prefix, its .gitignore)


def _from_walk(root: Path, rules: SkipRules, matcher: Excludes) -> Iterator[SourceFile | Skipped]:
    def ignores_in(directory: str, prefix: str, parent: _Ignores,
                   entries: list[os.DirEntry[str]]) -> _Ignores:
        if not any(e.name == ".gitignore" for e in entries):
            return parent  # no file to open: most folders have none
        # 20-40 ms to import: only once a .gitignore is found (git work trees never need it)
        from pathspec import GitIgnoreSpec

        try:
            with open(os.path.join(directory, ".gitignore"), encoding="utf-8",
                      errors="replace") as file:
                return (*parent, (prefix, GitIgnoreSpec.from_lines(file.read().splitlines())))
        except OSError:
            return parent

    inside = _Inside(root)
    top = _sorted_entries(str(root))
    stack = [(str(root), "", ignores_in(str(root), "", (), top))]
    walkers = [iter(top)]
    while walkers:
        entry = next(walkers[-1], None)
        if entry is None:
            walkers.pop()
            stack.pop()
            continue
        _, prefix, ignores = stack[-1]
        path = prefix + entry.name
        is_dir = entry.is_dir(follow_symlinks=False)
        if entry.name == ".git" or _ignored(ignores, path, is_dir):
            continue
        if not is_dir:
            found = _check_file(root, path, rules, matcher, inside, _lstat(entry))
            if found is not None:
                yield found
            continue
        reason = matcher.reason(path, is_dir=True)
        if reason is not None:
            yield Skipped(path + "/", reason)
            continue
        entries = _sorted_entries(entry.path)
        stack.append((entry.path, path + "/", ignores_in(entry.path, path + "/", ignores,
                                                         entries)))
        walkers.append(iter(entries))


def _sorted_entries(directory: str) -> list[os.DirEntry[str]]:
    # "name/" for a directory puts its subtree where its paths sort among its siblings'.
    try:
        with os.scandir(directory) as scan:
            entries = list(scan)
    except OSError:
        return []
    entries.sort(key=lambda e: e.name + "/" if e.is_dir(follow_symlinks=False) else e.name)
    return entries


def _lstat(entry: os.DirEntry[str]) -> os.stat_result | None:
    try:
        return entry.stat(follow_symlinks=False)
    except OSError:
        return None


def _ignored(ignores: _Ignores, path: str, is_dir: bool) -> bool:
    # The deepest .gitignore with a matching pattern decides; within it, the last pattern.
    for prefix, spec in reversed(ignores):
        verdict = spec.check_file(path[len(prefix):] + ("/" if is_dir else "")).include
        if verdict is not None:
            return verdict
    return False


# ---- content ----

# Markers that tools write at the top of what they generate (checked in the first 1 KB).
_GENERATED_MARKERS = re.compile(
    rb"@generated\b"  # Meta's convention (Buck, Relay, Hack, Jest snapshots)
    rb"|Code generated .{0,200}DO NOT EDIT"  # Go's convention (go generate, protoc-gen-go)
    rb"|<auto-generated"  # .NET tools
    rb"|(?i:this (?:file|code) (?:is|was|has been) (?:automatically |auto-?)generated)"
    rb"|(?im:^[\s#/*;!<>{}%\"'-]*(?:automatically|auto-?) ?generated (?:by|from|file|code)\b)"
    rb"|(?is:generated.{0,120}do not (?:edit|modify)|do not (?:edit|modify).{0,120}generated)")

# Where a bundler or minifier's output may sit under an ordinary name.
_MINIFIABLE = frozenset({".js", ".mjs", ".cjs", ".css", ".scss", ".less", ".json", ".svg"})


def sniff(path: str, head: bytes) -> str | None:
    """Why a file should be skipped, judged from its first bytes (8 KB is plenty): "binary",
    "generated" or "minified"; None for ordinary source."""
    if b"\0" in head[:8192]:
        return "binary"
    if _GENERATED_MARKERS.search(head[:1024]):
        return "generated"
    if path[path.rfind("."):].lower() in _MINIFIABLE and _minified(head[:65536]):
        return "minified"
    return None


def _minified(text: bytes) -> bool:
    # Real code may hold one very long line (a data URI, a regex table), but on average its
    # lines are short; a bundle is a few enormous lines.
    lines = text.split(b"\n")
    return max(map(len, lines)) > 1000 and len(text) / len(lines) > 200
