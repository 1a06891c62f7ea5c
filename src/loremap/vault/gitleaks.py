"""The gitleaks rule set, run by Python `re`: the providers loremap's own rules do not know.

gitleaks (MIT) keeps the most complete public list of credential formats, each with a
regular expression, an entropy floor, keywords and allowlists. `rules/gitleaks.toml` is its
default configuration vendored byte for byte (provenance and how to update it:
`rules/README.md`; licence: `rules/LICENSE-gitleaks`); this module reads it and applies it the
way gitleaks does, so the file can be replaced by a newer release without touching code:

- **keywords first**: a rule runs only when one of its keywords occurs in the lower-cased
  text (gitleaks' Aho-Corasick prefilter; here, for a text of 2,000 characters or more, one
  pass of a trie-shaped pattern of every keyword, about 1.5x faster than one substring search
  per keyword; a shorter text, a question the prompt hook logs, is searched keyword by
  keyword and spares the pattern's ~10 ms compilation), and its regex is compiled the first
  time it runs;
- the **secret** is the first non-empty capture group (the whole match without one); it must
  have more Shannon entropy than the rule's floor and pass the global and the rule's
  allowlists (regexes on the secret, the match or the line; stopwords on the secret);
- rules bound to a file name (`path`: `.tf`, `nuget.config`, `.p12`...) are skipped, and so are
  allowlist entries that need a path: a note has none.

Go's RE2 syntax is converted where Python's differs (`_to_python`): a flag group in the middle
of a pattern (`p8e-(?i)[a-z0-9]{32}`) becomes a scoped group to the end of its enclosing group,
`\\z` becomes `\\Z`, and every pattern is compiled with `re.ASCII` (RE2's `\\w`, `\\d`, `\\s`,
`\\b` are ASCII). `tests/test_secrets.py` compiles every rule and checks one true sample per
provider kind loremap relies on.

No maintained Python port of these rules exists on PyPI (detect-secrets is a different, smaller
rule set; `gitleaks-py` is a 2022 placeholder); running the gitleaks binary would add a process
per write. Measured with `python bench/secret_scan.py` (figures in docs/notes-format.md): about
0.6 ms per 1.5 KB note against 0.06 ms for loremap's own rules, and ~40 ms to import and load
the rules once per process (82 ms when they were parsed from the TOML and the keywords' pattern
was always compiled).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

_RULES_FILE = "gitleaks.toml"
# The same rules as JSON with the TOML file's SHA-256 (`write_rules_json`): json is C and
# tomllib pure Python, ~2 ms against ~48 ms with tomllib's import, paid by every process that
# checks a text for secrets (a hook logging a question). A JSON of another TOML is not read.
_RULES_JSON = "gitleaks.json"
_GENERIC = "generic-api-key"
_FLAG = "(?i)"
_FILLER = r"[\w.-]{0,50}?"
_FILLER_REACH = 50
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


class _Allowlist(NamedTuple):
    target: str  # "secret", "match" or "line"
    regexes: tuple[str, ...]  # converted sources, compiled on first use
    stopwords: tuple[str, ...]
    both: bool  # condition AND: every criterion given must hold


class Rule(NamedTuple):
    """One gitleaks rule as loremap applies it."""

    id: str
    source: str  # the pattern converted to Python syntax, its leading name filler cut
    entropy: float
    keywords: tuple[str, ...]
    allowlists: tuple[_Allowlist, ...]
    back: int = 0  # how far the cut filler may reach left of a match


class Match(NamedTuple):
    """A gitleaks finding: the secret's span in the text and the rule that found it."""

    rule: str
    start: int
    end: int
    match_start: int  # where the whole match starts (the name before an assignment)


def _class_end(pattern: str, i: int) -> int:
    """Index just past the character class that opens at `pattern[i] == '['`."""
    j = i + 1
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def _to_python(pattern: str) -> str:
    """RE2 -> Python `re`: mid-pattern `(?i)` scoped to the rest of its group, `\\z` -> `\\Z`.

    RE2 lets `(?i)` stand anywhere and keeps it to the end of the enclosing group, across `|`;
    Python accepts global flags only at the start. Each later alternative of that group gets
    its own `(?i:...)`.
    """
    if _FLAG not in pattern[1:] and "\\z" not in pattern:
        return pattern  # most patterns: nothing to convert (the walk below costs ~0.1 ms each)
    out: list[str] = []
    opened = [0]  # per open group: how many (?i: wrappers this group must close
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            out.append("\\Z" if pattern[i : i + 2] == "\\z" else pattern[i : i + 2])
            i += 2
        elif ch == "[":
            end = _class_end(pattern, i)
            out.append(pattern[i:end])
            i = end
        elif pattern.startswith(_FLAG, i) and i > 0:
            out.append("(?i:")
            opened[-1] += 1
            i += len(_FLAG)
        elif ch == "(":
            opened.append(0)
            out.append(ch)
            i += 1
        elif ch == "|" and opened[-1]:
            out.append(")" * opened[-1] + "|(?i:")
            opened[-1] = 1
            i += 1
        elif ch == ")":
            out.append(")" * opened.pop() + ")")
            i += 1
        else:
            out.append(ch)
            i += 1
    out.append(")" * opened[-1])
    return "".join(out)


@functools.cache
def compiled(source: str) -> re.Pattern[str]:
    """A converted pattern, compiled once per process (only when a keyword asked for it)."""
    return re.compile(source, re.ASCII)


def _allowlist(raw: dict[str, Any]) -> _Allowlist | None:
    """Trigger: an allowlist entry needs a file path. Why: a note has no path. Outcome: an
    AND entry with paths can never hold (None); an OR entry keeps its other criteria."""
    both = raw.get("condition", "OR").upper() == "AND"
    if both and raw.get("paths"):
        return None
    regexes = tuple(_to_python(r) for r in raw.get("regexes", ()))
    stopwords = tuple(w.lower() for w in raw.get("stopwords", ()))
    if not regexes and not stopwords:
        return None
    return _Allowlist(raw.get("regexTarget", "secret"), regexes, stopwords, both)


def _cut_filler(source: str) -> tuple[str, int]:
    """`source` without its leading lazy `[\\w.-]{0,50}?` (once or twice), and its reach.

    The filler only moves where a match starts (gitleaks reports the name before `=`), but
    `re` tries it at every position: 1.7 ms per 1.5 KB note for `database-password`, which
    has no keyword. Cut, the pattern starts on its literal name; `_findings` puts the filler
    back by walking left over `[\\w.-]` from each match, as the leftmost match would.
    """
    head, reach = "", 0
    if source.startswith(_FLAG):
        head, source = _FLAG, source[len(_FLAG):]
    while True:
        if source.startswith(_FILLER):
            source, reach = source[len(_FILLER):], reach + _FILLER_REACH
        elif source.startswith("(?i:" + _FILLER):
            head, source = head + "(?i:", source[len("(?i:" + _FILLER):]
            reach += _FILLER_REACH
        else:
            return head + source, reach


def _rule(raw: dict[str, Any]) -> Rule | None:
    if "regex" not in raw or "path" in raw:  # file-name rules do not apply to a note
        return None
    allowlists = tuple(a for a in map(_allowlist, raw.get("allowlists", ())) if a is not None)
    source, reach = _cut_filler(_to_python(raw["regex"]))
    return Rule(raw["id"], source, float(raw.get("entropy", 0.0)),
                tuple(k.lower() for k in raw.get("keywords", ())), allowlists, reach)


class RuleSet(NamedTuple):
    rules: tuple[Rule, ...]
    allow: _Allowlist
    always: tuple[Rule, ...]  # rules without keywords
    by_keyword: dict[str, tuple[Rule, ...]]
    prefixes: dict[str, tuple[str, ...]]  # keyword -> the keywords it starts with, itself too
    # every keyword as one trie-shaped pattern (`_trie`), compiled on its first call
    keywords: Callable[[], re.Pattern[str]]

    def present(self, lowered: str) -> set[str]:
        """The keywords that occur in `lowered`. A short text (a question, a title) is
        searched for each keyword; a longer one is read once by the trie-shaped pattern of
        every keyword, whose ~10 ms compilation a hook that only checks a question never
        pays."""
        if len(lowered) < _SHORT:
            return {k for k in self.by_keyword if k in lowered}
        return {k for m in self.keywords().finditer(lowered)
                if m.group(1) for k in self.prefixes[m.group(1)]}


_SHORT = 2_000  # characters under which each keyword is searched for on its own


def _trie(words: list[str]) -> str:
    """One regex matching the longest of `words` at a position, shaped as a trie so that
    each position costs a branch per character instead of a try per word."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        branches = [re.escape(ch) + build(sub) for ch, sub in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
        return f"(?:{body})?" if "" in node else body
    return f"(?=({build(root)}))"


def rules_data(folder: Path) -> dict[str, Any]:
    """The rules of `folder`'s gitleaks.toml, read from its JSON copy when that copy was
    written from this very file, else from the TOML."""
    raw = (folder / _RULES_FILE).read_bytes()
    try:
        copy = json.loads((folder / _RULES_JSON).read_text(encoding="utf-8"))
        if copy.get("sha256") == hashlib.sha256(raw).hexdigest():
            return dict(copy["rules"])
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        pass
    import tomllib

    return tomllib.loads(raw.decode("utf-8"))


def write_rules_json(folder: Path | None = None) -> Path:
    """Write the JSON copy of `folder`'s gitleaks.toml (default: the vendored rules), after
    the TOML is replaced (`rules/README.md`)."""
    import tomllib

    folder = folder or Path(__file__).parent / "rules"
    raw = (folder / _RULES_FILE).read_bytes()
    out = folder / _RULES_JSON
    out.write_text(json.dumps({"sha256": hashlib.sha256(raw).hexdigest(),
                               "rules": tomllib.loads(raw.decode("utf-8"))},
                              ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    return out


@functools.lru_cache(maxsize=1)
def rule_set() -> RuleSet:
    """The vendored rules, read once per process (~6 ms from the JSON copy, ~40 ms more when
    the TOML must be parsed)."""
    data = rules_data(Path(__file__).parent / "rules")
    rules = tuple(r for r in map(_rule, data.get("rules", ())) if r is not None)
    allow = _allowlist(data.get("allowlist", {})) or _Allowlist("secret", (), (), False)
    by_keyword: dict[str, list[Rule]] = {}
    for rule in rules:
        for keyword in rule.keywords:
            by_keyword.setdefault(keyword, []).append(rule)
    # A keyword's prefixes among the keywords, shortest first (one lookup per prefix length,
    # not one test per pair of keywords: 10 ms for the 234 of gitleaks 8).
    prefixes = {w: tuple(w[:n] for n in range(1, len(w) + 1) if w[:n] in by_keyword)
                for w in by_keyword}
    words = sorted(by_keyword)
    return RuleSet(rules, allow, tuple(r for r in rules if not r.keywords),
                   {k: tuple(v) for k, v in by_keyword.items()}, prefixes,
                   functools.cache(lambda: re.compile(_trie(words))))


def entropy(value: str) -> float:
    """Shannon entropy of `value`'s characters in bits (gitleaks' `shannonEntropy`)."""
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values()) if size else 0.0


def _line(text: str, start: int, end: int) -> str:
    return text[text.rfind("\n", 0, start) + 1 : (text.find("\n", end) + 1 or len(text) + 1) - 1]


def _allowed(allow: _Allowlist, text: str, span: tuple[int, int], secret: str) -> bool:
    target = (text[span[0]:span[1]] if allow.target == "match"
              else _line(text, *span) if allow.target == "line" else secret)
    hits = []
    if allow.regexes:
        hits.append(any(compiled(r).search(target) for r in allow.regexes))
    if allow.stopwords:
        lowered = secret.lower()
        hits.append(any(w in lowered for w in allow.stopwords))
    return all(hits) if allow.both else any(hits)


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    for index in range(1, (match.re.groups or 0) + 1):
        start, end = match.span(index)
        if end > start:
            return start, end
    return match.span()


def _reach_left(text: str, start: int, reach: int) -> int:
    """Where the cut filler would have started the match: up to `reach` name characters."""
    floor = max(0, start - reach)
    while start > floor and text[start - 1] in _NAME_CHARS:
        start -= 1
    return start


def _findings(rule: Rule, text: str, allow: _Allowlist) -> list[Match]:
    found = []
    for match in compiled(rule.source).finditer(text):
        start, end = _secret_span(match)
        span = (_reach_left(text, match.start(), rule.back), match.end())
        secret = text[start:end]
        if rule.entropy and entropy(secret) <= rule.entropy:
            continue
        # gitleaks drops a generic finding whose secret has no digit; kept here.
        if rule.id == _GENERIC and not any(ch.isdigit() for ch in secret):
            continue
        if _allowed(allow, text, span, secret) or any(
                _allowed(a, text, span, secret) for a in rule.allowlists):
            continue
        found.append(Match(rule.id, start, end, span[0]))
    return found


def scan(text: str, lowered: str | None = None) -> list[Match]:
    """Every gitleaks finding in `text` (`lowered`: `text.lower()` when the caller has it)."""
    lowered = text.lower() if lowered is None else lowered
    rules = rule_set()
    wanted = {id(r): r for r in rules.always}
    for keyword in rules.present(lowered):
        wanted.update((id(r), r) for r in rules.by_keyword[keyword])
    found: list[Match] = []
    for rule in rules.rules:  # file order, as gitleaks reports
        if id(rule) in wanted:
            found.extend(_findings(rule, text, rules.allow))
    return found
