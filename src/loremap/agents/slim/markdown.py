"""The markdown of an agent's instruction file, read the way `slim` needs it.

Two questions only: where the sections are (ATX headings, nested by level, with fenced code,
HTML comments and a leading frontmatter block never mistaken for headings) and what a stretch of
lines is made of: rules an agent needs on every turn (short imperative lines, short list items)
or reference material it needs now and then (prose, code, tables, command listings). The lines
that must never leave the file are marked too: `@path` imports, which the agent expands into
its context, and loremap's own block between `<!-- loremap:begin -->` and `<!-- loremap:end -->`.

Nothing here is a full CommonMark parser; it errs on the side of "not a heading" and "keep".
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from loremap.text import estimate_tokens

TEXT, HEADING, CODE, PINNED, OPAQUE = "text", "heading", "code", "pinned", "opaque"
RULES = "rules"

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
# Fences are recognised at any indentation: inside list items they are indented, and a
# `# comment` line of a shell block there would otherwise read as a heading.
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")
_BEGIN = re.compile(r"\s*<!--\s*loremap:begin\b")
_END = re.compile(r"<!--\s*loremap:end\b")
_CODE_SPAN = re.compile(r"(`+).+?\1")
# `@docs/x.md`, `@~/.claude/me.md`, `@AGENTS.md`: a path after an `@` that does not continue a
# word (so `me@example.com` is not one) and that has a `/`, a `.` or a leading `~`.
_IMPORT = re.compile(r"(?<![\w`@])@(?:~/|\.{0,2}/)?[\w-][\w.-]*(?:/[\w.-]+)*")
_ITEM = re.compile(r"\s*(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)")
_TABLE = re.compile(r"\s*\|")
_QUOTE = re.compile(r"\s*>\s?")
# `- `make docs`: builds ...`, `- **api**: HTTP ...`, `- web/ - the admin UI`
_LISTING = re.compile(r"(?:`[^`]+`|\*\*[^*]+\*\*|__[^_]+__|[\w./-]+/)\s*(?::|[-\u2013\u2014]\s)")
_MARKUP = re.compile(r"[*_`>]+")
_MODAL = re.compile(r"\b(?:must|never|always|don['\u2019]t|do not|should|shall|avoid|prefer|"
                    r"make sure|only ever)\b", re.IGNORECASE)
_IMPERATIVE = frozenset(
    "always never must don't do prefer avoid use keep ensure make only run write add put place "
    "name call check follow import return raise test commit document update treat leave ask "
    "read remember mark wrap pin log handle validate see start stop prefix create delete remove "
    "limit reuse".split())
_RULE_WORDS = 20  # a list item shorter than this reads as a rule
_IMPERATIVE_WORDS = 40  # an imperative paragraph or item up to this long is still a rule


@dataclass(frozen=True, slots=True)
class Section:
    """A heading and its text up to the next heading of the same or a higher level.

    `level` is 0 for the preamble before the first heading. Line indices are 0-based: the
    heading is `start`, its own text runs to `intro_end` (where the first subsection starts)
    and the whole section, subsections included, to `end`.
    """

    level: int
    title: str
    start: int
    intro_end: int
    end: int
    children: tuple[Section, ...] = ()


@dataclass(frozen=True, slots=True)
class Document:
    """The file as lines (endings kept, so that unchanged lines are written back as they were),
    the kind of each line and the section tree."""

    lines: tuple[str, ...]
    kinds: tuple[str, ...]
    sections: tuple[Section, ...]
    newline: str

    def text(self, start: int, end: int, with_pinned: bool = False) -> str:
        return "".join(line for i, line in enumerate(self.lines[start:end], start)
                       if with_pinned or self.kinds[i] != PINNED)

    def pinned(self, start: int, end: int) -> list[int]:
        return [i for i in range(start, end) if self.kinds[i] == PINNED]


def parse(text: str) -> Document:
    """Split `text` into lines, classify each line and build the section tree."""
    lines = tuple(_LINE.findall(text))
    kinds = _kinds(lines)
    heads = [(i, len(m.group(1)), (m.group(2) or "").strip())
             for i, line in enumerate(lines) if kinds[i] == HEADING
             if (m := _HEADING.fullmatch(line.rstrip("\r\n")))]
    first = heads[0][0] if heads else len(lines)
    preamble = (Section(0, "", 0, first, first),) if any(s.strip() for s in lines[:first]) else ()
    crlf = sum(line.endswith("\r\n") for line in lines)
    newline = "\r\n" if crlf * 2 > len(lines) else "\n"
    return Document(lines, kinds, preamble + _tree(heads, len(lines)), newline)


def _frontmatter_end(lines: tuple[str, ...]) -> int:
    """The line after a leading `---` ... `---` block (Cursor rules have one), else 0."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    for i, line in enumerate(lines[1:100], 1):
        if line.rstrip() in ("---", "..."):
            return i + 1
    return 0


def _kinds(lines: tuple[str, ...]) -> tuple[str, ...]:
    kinds = [OPAQUE] * _frontmatter_end(lines)
    fence: tuple[str, int] | None = None
    in_block = in_comment = False
    for line in lines[len(kinds):]:
        s = line.rstrip("\r\n")
        if in_block:
            kinds.append(PINNED)
            in_block = not _END.search(s)
        elif fence is not None:
            kinds.append(CODE)
            closing = _FENCE.fullmatch(s.rstrip())
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= fence[1] \
                    and not closing.group(2).strip():
                fence = None
        elif (opening := _FENCE.fullmatch(s)) and not (
                opening.group(1)[0] == "`" and "`" in opening.group(2)):
            kinds.append(CODE)
            fence = (opening.group(1)[0], len(opening.group(1)))
        elif _BEGIN.match(s):
            kinds.append(PINNED)
            in_block = not _END.search(s)
        elif in_comment or (s.lstrip().startswith("<!--") and "-->" not in s):
            kinds.append(OPAQUE)
            in_comment = "-->" not in s
        elif _HEADING.fullmatch(s):
            kinds.append(HEADING)
        else:
            kinds.append(PINNED if _imports(s) else TEXT)
    return tuple(kinds)


def _imports(line: str) -> bool:
    return any("/" in m or "." in m.rstrip(".") or m.startswith("@~")
               for m in _IMPORT.findall(_CODE_SPAN.sub("", line)))


def _tree(heads: list[tuple[int, int, str]], stop: int) -> tuple[Section, ...]:
    """The sections of `heads` at the top of this slice; each takes the deeper ones after it."""
    out = []
    k = 0
    while k < len(heads):
        start, level, title = heads[k]
        m = k + 1
        while m < len(heads) and heads[m][1] > level:
            m += 1
        end = heads[m][0] if m < len(heads) else stop
        intro_end = heads[k + 1][0] if m > k + 1 else end
        out.append(Section(level, title, start, intro_end, end, _tree(heads[k + 1:m], end)))
        k = m
    return tuple(out)


# --- what a stretch of lines is made of -----------------------------------------------------


def makeup(doc: Document, start: int, end: int) -> dict[str, int]:
    """Tokens per kind of content in lines `start`..`end`: `rules`, `prose`, `code`, `tables`,
    `listings` (headings, pinned lines and blank lines count for none)."""
    out: dict[str, int] = {}
    for shape, text in _blocks(doc, start, end):
        kind = _classify(shape, text)
        out[kind] = out.get(kind, 0) + estimate_tokens(text)
    return out


def rule_share(counts: dict[str, int]) -> float:
    total = sum(counts.values())
    return counts.get(RULES, 0) / total if total else 0.0


def _blocks(doc: Document, start: int, end: int) -> Iterator[tuple[str, str]]:
    """(shape, text) of each block: `code`, `table`, `item` (with its continuation lines) or
    `para`."""
    shape = ""
    buf: list[str] = []
    for i in range(start, end):
        kind, s = doc.kinds[i], doc.lines[i].rstrip("\r\n")
        if kind == CODE:
            new = "code"
        elif kind != TEXT or not s.strip():
            new = ""
        elif _TABLE.match(s):
            new = "table"
        elif _ITEM.match(s):
            new = "item!"  # always starts a block
        else:
            new = shape if shape in ("item", "para") else "para"
        if new != shape or new == "item!":
            if buf:
                yield shape, "\n".join(buf)
            shape, buf = new.rstrip("!"), []
        if new:
            buf.append(s)
    if buf:
        yield shape, "\n".join(buf)


def _classify(shape: str, text: str) -> str:
    if shape == "code":
        return "code"
    if shape == "table":
        return "tables"
    item = _ITEM.match(text) if shape == "item" else None
    content = item.group(1) if item else _QUOTE.sub("", text)
    plain = _MARKUP.sub("", content)
    words = len(plain.split())
    first = plain.split(maxsplit=1)[0].lower().strip(".,:;!") if words else ""
    modal = bool(_MODAL.search(plain))
    imperative = modal or first in _IMPERATIVE
    if item is not None:
        if not modal and _LISTING.match(content):
            return "listings"
        if words < _RULE_WORDS or (imperative and words < _IMPERATIVE_WORDS):
            return RULES
        return "prose"
    return RULES if imperative and words < _IMPERATIVE_WORDS else "prose"
