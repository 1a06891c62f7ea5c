"""Gitignore-style exclude patterns, translated to regexes and matched against paths.

Discovery checks every directory and file of a repository against the user's `exclude`
patterns (and the default ones). `pathspec` would do it, but costs 40 ms to import and git work
trees never need it otherwise, so this small translator covers the syntax the settings document:
`*`, `?`, `[…]`, `**`, a leading `/` or inner `/` anchors to the root, a trailing `/` matches
directories only, `!` re-includes, and the last matching pattern wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple


class _Pattern(NamedTuple):
    regex: str  # compiled on first use (by `re`'s own cache): most never match anything
    negate: bool
    dir_only: bool
    reason: str
    basename: bool  # no "/" in the pattern: it is matched against the last path component


class Excludes:
    """Gitignore-style patterns matched against a path; a pre-check on one combined regex keeps
    the common case (no pattern matches) at one regex call per path."""

    def __init__(self, patterns: Sequence[_Pattern]) -> None:
        self._patterns = tuple(reversed(patterns))  # last match wins
        # Pre-checks: most patterns name a file or folder anywhere (`node_modules/`, `*.min.js`)
        # and are tried on the short last component, the others on the whole path.
        self._any = {
            (is_dir, base): _union(p.regex for p in patterns
                                   if p.basename is base and (is_dir or not p.dir_only))
            for is_dir in (False, True) for base in (False, True)}

    def reason(self, path: str, is_dir: bool) -> str | None:
        """Why `path` (no trailing slash) is excluded, or None."""
        name = path.rsplit("/", 1)[-1]
        if not (self._any[is_dir, True].fullmatch(name)
                or self._any[is_dir, False].fullmatch(path)):
            return None
        for pattern in self._patterns:
            if (is_dir or not pattern.dir_only) and re.fullmatch(
                    pattern.regex, name if pattern.basename else path):
                return None if pattern.negate else pattern.reason
        return None


def _union(regexes: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{r})" for r in regexes) or "(?!)")


def compile_excludes(patterns: Iterable[str], reasons: Mapping[str, str]) -> Excludes:
    """A matcher for `patterns` (blank lines and `#` comments skipped); a pattern reports the
    reason `reasons` gives for it as written, "excluded" when it gives none."""
    compiled = []
    for raw in patterns:
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        negate = text.startswith("!")
        text = text.removeprefix("!")
        dir_only = text.endswith("/")
        text = text.rstrip("/")
        anchored = "/" in text
        body = _glob_to_regex(text.lstrip("/"))
        basename = not anchored and "**" not in text
        regex = body if anchored or basename else f"(?:.*/)?{body}"
        compiled.append(_Pattern(regex, negate, dir_only, reasons.get(raw, "excluded"),
                                 basename))
    return Excludes(compiled)


def _glob_to_regex(glob: str) -> str:
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        char = glob[i]
        close = glob.find("]", i + 2) if char == "[" else -1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif close != -1:
            inner = glob[i + 1:close]
            inner = "^" + inner[1:] if inner.startswith("!") else inner
            out.append("[" + inner.replace("\\", "\\\\") + "]")
            i = close
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)
