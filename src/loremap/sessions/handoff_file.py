"""The handoff file: `Handoff` <-> markdown with a small YAML frontmatter, without PyYAML.

Hooks read the latest handoff at every session start, and the hook path stays on the standard
library (DESIGN.md, principle 4), so this module reads and writes the frontmatter itself. It
writes a subset of YAML any YAML reader parses to the same values (plain scalars only where
they cannot be read as anything but that string, JSON-style double quotes elsewhere). It reads
what a person is likely to write by hand: `key: value`, quoted strings, `[a, b]` and `- item`
lists, comments; keys it does not know are skipped (they stay in the file), and anything it
cannot read is refused with the file and line named.

The body is `# Handoff: <goal's first line>` and one `## Section` per field, lists as `- item`
(continuation lines indented by two spaces). Sections are found by their `## ` headings, in any
order and case; unknown ones are kept as `extra_sections`. A line of free text that would read
as a `## ` heading is written with a backslash in front (`\\## ...`).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import NamedTuple

from loremap.errors import MalformedNote
from loremap.vault.quoting import double_quoted

SOURCES = ("agent", "human", "auto")
STATUSES = ("open", "closed")
ID_FORMAT = "%Y-%m-%dT%H-%M-%SZ"
STAMPED_ID = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}Z)(?:-(\d+))?")
SECTIONS = (("goal", "Goal"), ("state", "State"), ("decisions", "Decisions"),
            ("next_steps", "Next steps"), ("open_questions", "Open questions"), ("files", "Files"))
_LIST_FIELDS = frozenset({"decisions", "next_steps", "open_questions", "files"})
_BY_HEADING = {heading.lower(): name for name, heading in SECTIONS}

_PLAIN = re.compile(r"[A-Za-z_/][\w./@+-]*")
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "true", "false", "on", "off", "null"})
_KEY = re.compile(r"""(?P<key>"[^"]*"|'[^']*'|[^\s#"'\[\]{}&*!|>%@`,?:-][^:#]*?)[ \t]*:"""
                  r"(?:[ \t]+(?P<value>.*))?")
_STATUS_LINE = re.compile(r"""(?:status|"status"|'status')[ \t]*:(?:[ \t]|$)""")
_DOUBLE = re.compile(r'"((?:[^"\\]|\\.)*)"\s*(?:#.*)?', re.S)
_SINGLE = re.compile(r"'((?:[^']|'')*)'\s*(?:#.*)?", re.S)
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", re.S)
_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v",
            "f": "\f", "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\",
            "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}
_FLOW = re.compile(r"\[(.*)\]\s*(?:#.*)?", re.S)
_FLOW_ITEM = re.compile(r"""\s*("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^,"'\[\]{}]*?)\s*(?:,|\Z)""",
                        re.S)
_HEADING = re.compile(r"##(?:[ \t]|$)")
_NEEDS_ESCAPE = re.compile(r"\\*##(?:[ \t]|$)")
_ESCAPED = re.compile(r"\\+##(?:[ \t]|$)")
_BULLET = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?:[ \t]+(.*)|)")


class Handoff(NamedTuple):
    """One saved handoff, as read from its file."""

    id: str  # the file stem: UTC time of saving, e.g. "2026-11-30T21-40-05Z" (-2, -3 if taken)
    goal: str
    state: str
    decisions: tuple[str, ...]
    next_steps: tuple[str, ...]
    open_questions: tuple[str, ...]
    files: tuple[str, ...]
    created_at: dt.datetime  # aware, UTC
    status: str  # "open" | "closed"
    session: str | None  # the agent's session id, when known
    source: str  # "agent" | "human" | "auto" (auto: written by a hook without a model call)
    # Sections a person added by hand, (heading, text) in file order; rendered after the rest.
    extra_sections: tuple[tuple[str, str], ...] = ()


def stamp(moment: dt.datetime) -> str:
    """`moment` as an ISO UTC timestamp with second precision: `2026-11-30T21:40:05Z`."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- writing --------------------------------------------------------------------------------


def scalar(value: str | None) -> str:
    """A YAML scalar that reads back as `value` both as a mapping value and inside `[...]`."""
    if value is None:
        return "null"
    if _PLAIN.fullmatch(value) and value.lower() not in _YAML_WORDS:
        return value
    return double_quoted(value)


def _list_item(text: str) -> str:
    first, *rest = text.split("\n")
    return "- " + first + "".join("\n  " + line if line else "\n" for line in rest)


def _free_text(text: str) -> str:
    return "\n".join("\\" + line if _NEEDS_ESCAPE.match(line) else line
                     for line in text.split("\n"))


def render_body(handoff: Handoff) -> str:
    """The markdown body: the title, then one section per non-empty field."""
    parts = [f"# Handoff: {handoff.goal.split(chr(10), 1)[0]}\n"]
    for name, heading in SECTIONS:
        value = getattr(handoff, name)
        if value:
            text = ("\n".join(_list_item(v) for v in value) if name in _LIST_FIELDS
                    else _free_text(value))
            parts.append(f"## {heading}\n{text}\n")
    parts += [f"## {heading}\n{text}\n" if text else f"## {heading}\n"
              for heading, text in handoff.extra_sections]
    return "\n".join(parts)


def render_file(handoff: Handoff) -> str:
    """The whole file: frontmatter, then `render_body`."""
    handoff_id = handoff.id if STAMPED_ID.fullmatch(handoff.id) else scalar(handoff.id)
    files = ", ".join(scalar(path) for path in handoff.files)
    return (f"---\nid: {handoff_id}\ntype: handoff\nstatus: {handoff.status}\n"
            f"created_at: {stamp(handoff.created_at)}\nsession: {scalar(handoff.session)}\n"
            f"source: {handoff.source}\nfiles: [{files}]\n---\n" + render_body(handoff))


def closed_text(text: str, shown: str) -> str:
    """`text` (a readable handoff file) with `status: closed`; every other line kept as is."""
    yaml_lines, body = split(text, shown)
    out: list[str] = []
    replaced = skipping = False
    for line in yaml_lines:
        if skipping and line[:1] in (" ", "\t"):
            continue  # the rest of a value written over several lines
        skipping = False
        if not replaced and _STATUS_LINE.match(line):
            out.append("status: closed")
            replaced = skipping = True
        else:
            out.append(line)
    if not replaced:
        out.insert(next((i + 1 for i, line in enumerate(out) if line.startswith("type:")), 0),
                   "status: closed")
    return "---\n" + "".join(line + "\n" for line in out) + "---\n" + body


# --- reading --------------------------------------------------------------------------------


def split(text: str, shown: str) -> tuple[list[str], str]:
    """(frontmatter lines, body) of a handoff file's text."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    if not text.startswith("---\n"):
        raise MalformedNote(shown, "no frontmatter: the file must start with a '---' line", 1)
    lines = text[4:].split("\n")
    for i, line in enumerate(lines):
        if line.rstrip() == "---":
            return lines[:i], "\n".join(lines[i + 1 :])
    raise MalformedNote(shown, "the frontmatter has no closing '---' line", 1)


def _unescape(match: re.Match[str]) -> str:
    code = match[1]
    if len(code) > 1:
        value = int(code[1:], 16)
        if 0xD800 <= value <= 0xDFFF or value > 0x10FFFF:
            raise ValueError(f"\\{code} is not a Unicode character")
        return chr(value)
    if code not in _ESCAPES:
        raise ValueError(f"unknown escape \\{code} in a double-quoted string")
    return _ESCAPES[code]


def scalar_value(text: str) -> str | None:
    """The string a YAML scalar (plain, 'single' or "double" quoted) stands for; None for null."""
    text = text.strip()
    if text.startswith('"'):
        double = _DOUBLE.fullmatch(text)
        if double is None:
            raise ValueError("a double-quoted string is not closed")
        return _ESCAPE.sub(_unescape, double[1])
    if text.startswith("'"):
        single = _SINGLE.fullmatch(text)
        if single is None:
            raise ValueError("a single-quoted string is not closed")
        return single[1].replace("''", "'")
    value = "" if text.startswith("#") else re.split(r"\s#", text, maxsplit=1)[0].strip()
    return None if value in ("", "~", "null", "Null", "NULL") else value


def _flow(text: str) -> list[str]:
    outer = _FLOW.fullmatch(text.strip())
    if outer is None:
        raise ValueError("a [list] must end with ']'")
    inner, pos, out = outer[1], 0, []
    while pos < len(inner):
        item = _FLOW_ITEM.match(inner, pos)
        if item is None or item.end() == pos:
            raise ValueError(f"cannot read the list {text.strip()!r}")
        pos = item.end()
        value = scalar_value(item[1]) if item[1] else None
        if value is not None:
            out.append(value)
    return out


Entry = tuple[int, str, list[str]]  # line number, the value on the key's line, lines under it


def _entries(yaml_lines: list[str], shown: str) -> dict[str, Entry]:
    """The top-level keys of the frontmatter with their raw values."""
    out: dict[str, Entry] = {}
    current: Entry | None = None
    for number, line in enumerate(yaml_lines, start=2):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if line[:1] in (" ", "\t") or stripped == "-" or stripped.startswith("- "):
            if current is None:
                raise MalformedNote(shown, "malformed frontmatter: a value before any key",
                                    number)
            current[2].append(stripped)
            continue
        key = _KEY.fullmatch(line.rstrip())
        if key is None:
            raise MalformedNote(shown, f"malformed frontmatter: expected 'key: value', not "
                                f"{stripped[:40]!r}", number)
        name = key["key"].strip("\"'")
        if name in out:
            raise MalformedNote(shown, f"malformed frontmatter: '{name}' appears twice", number)
        current = out[name] = (number, (key["value"] or "").strip(), [])
    return out


def _one(entries: dict[str, Entry], key: str, shown: str) -> str | None:
    if key not in entries:
        return None
    number, inline, more = entries[key]
    if inline.startswith(("[", "{", "|", ">")) or (more and more[0].startswith("-")):
        raise MalformedNote(shown, f"'{key}' must be a single value on its line", number)
    try:
        return scalar_value(" ".join([inline, *more]))
    except ValueError as exc:
        raise MalformedNote(shown, f"'{key}': {exc}", number) from None


def _many(entries: dict[str, Entry], key: str, shown: str) -> list[str]:
    if key not in entries:
        return []
    number, inline, more = entries[key]
    try:
        if inline.startswith("["):
            return _flow(" ".join([inline, *more]))
        if inline:
            value = scalar_value(" ".join([inline, *more]))
            return [] if value is None else [value]
        items: list[str] = []
        for line in more:
            if line == "-" or line.startswith("- "):
                items.append(line[1:].strip())
            elif items:  # a plain item continued on the next line
                items[-1] += " " + line
            else:
                items.append(line)
        return [v for v in (scalar_value(item) for item in items) if v]
    except ValueError as exc:
        raise MalformedNote(shown, f"'{key}': {exc}", number) from None


def _sections(body: str) -> tuple[str | None, list[tuple[str, list[str]]]]:
    title: str | None = None
    sections: list[tuple[str, list[str]]] = []
    for line in body.split("\n"):
        if _HEADING.match(line):
            sections.append((line[2:].strip().rstrip("#").strip(), []))
        elif sections:
            sections[-1][1].append(line)
        elif title is None and line.startswith("# "):
            title = line[2:].strip()
    return title, sections


def _list_items(lines: Iterable[str]) -> tuple[str, ...]:
    items: list[list[str]] = []
    for line in lines:
        bullet = _BULLET.fullmatch(line)
        if bullet is not None:
            items.append([(bullet[1] or "").rstrip()])
        elif items and (not line.strip() or line[:1] in (" ", "\t")):
            items[-1].append(line[2:].rstrip() if line.startswith("  ") else line.strip())
        elif line.strip():
            items.append([line.strip()])
    return tuple(text for text in ("\n".join(parts).strip() for parts in items) if text)


def _body_fields(body: str) -> tuple[dict[str, str | tuple[str, ...]], list[tuple[str, str]]]:
    title, sections = _sections(body)
    fields: dict[str, str | tuple[str, ...]] = {}
    extra: list[tuple[str, str]] = []
    for heading, lines in sections:
        name = _BY_HEADING.get(" ".join(heading.lower().replace("_", " ").rstrip(":").split()))
        if name is None or name in fields:
            extra.append((heading, "\n".join(lines).strip("\n")))
        elif name in _LIST_FIELDS:
            fields[name] = _list_items(lines)
        else:
            fields[name] = "\n".join(ln[1:] if _ESCAPED.match(ln) else ln for ln in lines).strip()
    if not fields.get("goal") and title:  # no Goal section: the title says it
        fields["goal"] = title.removeprefix("Handoff:").strip()
    return fields, extra


def _created_at(value: str | None, stem: str, shown: str, line: int) -> dt.datetime:
    """`created_at` as written, else the time in a saved handoff's file name."""
    try:
        if value is not None:
            moment = dt.datetime.fromisoformat(value)
        elif (stamped := STAMPED_ID.fullmatch(stem)) is not None:
            moment = dt.datetime.strptime(stamped[1], ID_FORMAT)
        else:
            raise MalformedNote(shown, "missing 'created_at' (e.g. 2026-11-30T21:40:05Z)", 2)
    except ValueError:
        raise MalformedNote(shown, f"created_at {value!r} is not an ISO date and time",
                            line) from None
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment.astimezone(dt.UTC)


def _choice(entries: dict[str, Entry], key: str, allowed: tuple[str, ...], default: str,
            shown: str) -> str:
    value = (_one(entries, key, shown) or default).strip().lower()
    if value not in allowed:
        raise MalformedNote(shown, f"{key} {value!r} is not one of {', '.join(allowed)}",
                            entries[key][0])
    return value


def parse_file(text: str, stem: str, shown: str) -> Handoff:
    """Parse a handoff file's text; its id is the file name's `stem`, `shown` names it in
    errors (`MalformedNote`, one line)."""
    yaml_lines, body = split(text, shown)
    entries = _entries(yaml_lines, shown)
    kind = _one(entries, "type", shown)
    if kind is not None and kind.strip().lower() != "handoff":
        raise MalformedNote(shown, f"type is {kind!r}, not handoff", entries["type"][0])
    status = _choice(entries, "status", STATUSES, "open", shown)
    source = _choice(entries, "source", SOURCES, "human", shown)
    session = _one(entries, "session", shown)
    created_at = _created_at(_one(entries, "created_at", shown), stem, shown,
                             entries.get("created_at", (2, "", []))[0])
    listed = _many(entries, "files", shown)
    fields, extra = _body_fields(body)
    goal = fields.get("goal")
    if not isinstance(goal, str) or not goal:
        raise MalformedNote(shown, "no goal: the file needs a '## Goal' section")

    def items(name: str) -> tuple[str, ...]:
        value = fields.get(name, ())
        return value if isinstance(value, tuple) else ()

    state = fields.get("state", "")
    return Handoff(
        id=stem, goal=goal, state=state if isinstance(state, str) else "",
        decisions=items("decisions"), next_steps=items("next_steps"),
        open_questions=items("open_questions"),
        files=tuple(dict.fromkeys([*listed, *items("files")])), created_at=created_at,
        status=status, session=session, source=source, extra_sections=tuple(extra),
    )
