"""Read and edit JSON with comments (JSONC) without touching anything but the edited member.

Hand-written JSON carries `//` and `/* */` comments and trailing commas: agents' settings files
(VS Code's `mcp.json`, Zed's `settings.json`, Gemini CLI's `settings.json`), which `loremap
connect` edits, and the tsconfig.json and jsconfig.json files the code map's resolver reads.
`json.loads` rejects them and `json.dumps` would erase the comments and the user's layout, so
edits here are splices: the text is parsed once into nodes that know their spans, and an edit
replaces, inserts or deletes one span. Every byte outside it stays as it was. New members are
indented like their neighbours, use the file's line ending, and follow its comma style.

Paths name object members by key (`["mcpServers", "loremap"]`); an `int` in a path indexes an
array. `loads` and the editors raise `InvalidInput` on text that is not JSONC; `loads_or_none`
is the reader for configuration files read in bulk, where a malformed file counts as absent.
One tokenizer serves both, so the editor and the code map agree on what a file holds. It is a
leaf module (the standard library and `errors` only) because `agents` and `codemap` sit in
different layers and both need it.
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from loremap.errors import InvalidInput

MAX_DEPTH = 200
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_SPACE = " \t\r\n\ufeff"

Key = str | int


@dataclass
class _Node:
    """A value and its span `text[start:end]`; containers also know their entries."""

    start: int
    end: int
    kind: str  # "object", "array" or "scalar"
    value: object = None
    entries: list[_Entry] = field(default_factory=list)


@dataclass
class _Entry:
    """An object member or an array item: from its key (or value) to its comma, if any."""

    key: str | None
    start: int
    node: _Node
    comma: int | None = None


class _Parser:
    def __init__(self, text: str, shown: str) -> None:
        self.text = text
        self.shown = shown
        self.pos = 0

    def fail(self, message: str, pos: int | None = None) -> InvalidInput:
        at = self.pos if pos is None else pos
        line = self.text.count("\n", 0, at) + 1
        column = at - (self.text.rfind("\n", 0, at) + 1) + 1
        return InvalidInput(f"{self.shown}:{line}:{column}: not valid JSON: {message}")

    def skip(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            if text[self.pos] in _SPACE:
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("a /* comment is not closed")
                self.pos = end + 2
            else:
                return

    def document(self) -> _Node | None:
        self.skip()
        if self.pos == len(self.text):
            return None
        node = self.value(0)
        self.skip()
        if self.pos != len(self.text):
            raise self.fail("unexpected text after the value")
        return node

    def value(self, depth: int) -> _Node:
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")
        if self.pos >= len(self.text):
            raise self.fail("the text ends where a value should be")
        char = self.text[self.pos]
        if char in "{[":
            return self.container(depth)
        if char == '"':
            start = self.pos
            decoded = self.string()
            return _Node(start, self.pos, "scalar", decoded)
        return self.scalar()

    def string(self) -> str:
        text, start = self.text, self.pos
        i = start + 1
        while i < len(text) and text[i] != '"':
            i += 2 if text[i] == "\\" else 1
        if i >= len(text):
            raise self.fail("a string is not closed", start)
        try:
            decoded: str = json.loads(text[start:i + 1])
        except ValueError:
            raise self.fail("bad escape or control character in a string", start) from None
        self.pos = i + 1
        return decoded

    def scalar(self) -> _Node:
        start = self.pos
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, start):
                self.pos = start + len(word)
                return _Node(start, self.pos, "scalar", literal)
        match = _NUMBER.match(self.text, start)
        if match is None:
            raise self.fail(f"unexpected {self.text[start]!r}")
        self.pos = match.end()
        return _Node(start, self.pos, "scalar", json.loads(match.group()))

    def container(self, depth: int) -> _Node:
        node = _Node(self.pos, self.pos, "object" if self.text[self.pos] == "{" else "array")
        close = "}" if node.kind == "object" else "]"
        self.pos += 1
        while True:
            self.skip()
            if self.text.startswith(close, self.pos):
                break
            if node.entries and node.entries[-1].comma is None:
                raise self.fail(f"expected ',' or {close!r}")
            node.entries.append(self.entry(node.kind, depth))
            self.skip()
            if self.text.startswith(",", self.pos):
                node.entries[-1].comma = self.pos
                self.pos += 1
        self.pos += 1
        node.end = self.pos
        return node

    def entry(self, kind: str, depth: int) -> _Entry:
        start = self.pos
        key = None
        if kind == "object":
            if not self.text.startswith('"', self.pos):
                raise self.fail("expected a member name in double quotes")
            key = self.string()
            self.skip()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected ':' after the member name")
            self.pos += 1
            self.skip()
        if self.pos < len(self.text) and self.text[self.pos] in ",}]":
            raise self.fail("expected a value")
        return _Entry(key, start, self.value(depth + 1))


def _parse(text: str, shown: str) -> _Node | None:
    return _Parser(text, shown).document()


def _python(node: _Node) -> Any:
    if node.kind == "object":
        return {e.key: _python(e.node) for e in node.entries}
    if node.kind == "array":
        return [_python(e.node) for e in node.entries]
    return node.value


def loads(text: str, shown: str) -> Any:
    """The value of a JSONC document; None for a text of only blanks and comments.

    A syntax error raises `InvalidInput` naming `shown` (the file) with line:column.
    """
    node = _parse(text, shown)
    return None if node is None else _python(node)


def loads_or_none(text: str) -> object:
    """The value of a JSON or JSONC document; None when it is malformed (or holds only blanks
    and comments). Strict JSON, which most configuration files are, goes through the C parser;
    only a text it rejects is parsed here."""
    try:
        return json.loads(text.lstrip("\ufeff"))
    except (ValueError, RecursionError):
        pass
    try:
        return loads(text, "the JSON text")
    except (InvalidInput, RecursionError):
        return None


# --- layout of the file -----------------------------------------------------------------------


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _indent(text: str, pos: int) -> str:
    start = _line_start(text, pos)
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def _starts_line(text: str, pos: int) -> bool:
    return text[_line_start(text, pos):pos].strip(" \t") == ""


def _unit(text: str, root: _Node) -> str:
    """One level of indentation as the file writes it (default two spaces)."""
    todo = [root]
    while todo:
        node = todo.pop(0)
        if node.entries and _starts_line(text, node.entries[0].start):
            base, inner = _indent(text, node.start), _indent(text, node.entries[0].start)
            if inner.startswith(base) and len(inner) > len(base):
                return inner[len(base):]
        todo.extend(e.node for e in node.entries if e.node.kind != "scalar")
    return "  "


def _render(value: object, indent: str, unit: str, newline: str, compact: bool) -> str:
    """`value` as JSON: objects one member a line, short arrays of scalars on one line."""
    flat = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if compact or not isinstance(value, (dict, list)) or not value:
        return flat
    if isinstance(value, list) and len(flat) <= 60 and not any(
            isinstance(v, (dict, list)) for v in value):
        return flat
    inner = indent + unit
    if isinstance(value, dict):
        parts = [json.dumps(k, ensure_ascii=False) + ": " + _render(v, inner, unit, newline, False)
                 for k, v in value.items()]
        opening, closing = "{", "}"
    else:
        parts = [_render(v, inner, unit, newline, False) for v in value]
        opening, closing = "[", "]"
    body = ("," + newline).join(inner + part for part in parts)
    return opening + newline + body + newline + indent + closing


def _entry_text(key: Key | None, value: object, indent: str, unit: str, newline: str,
                compact: bool) -> str:
    rendered = _render(value, indent, unit, newline, compact)
    if isinstance(key, str):
        return json.dumps(key, ensure_ascii=False) + ": " + rendered
    return rendered


def _end_of_line(text: str, pos: int) -> int:
    """Past blanks and comments that stay on the line of `pos`; stops before the newline."""
    while True:
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if text.startswith("//", pos):
            end = text.find("\n", pos)
            pos = len(text) if end < 0 else end
            return pos - 1 if text[pos - 1:pos] == "\r" else pos
        if text.startswith("/*", pos):
            end = text.find("*/", pos)
            if "\n" in text[pos:end]:
                return pos
            pos = end + 2
            continue
        return pos


# --- edits ------------------------------------------------------------------------------------


def _splice(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def _insert(text: str, root: _Node, node: _Node, key: Key | None, value: object) -> str:
    """Add an entry at the end of the container `node`."""
    unit, newline = _unit(text, root), _newline(text)
    if node.entries:
        last = node.entries[-1]
        if not _starts_line(text, last.start):
            entry = _entry_text(key, value, "", unit, newline, compact=True)
            if last.comma is not None:
                return _splice(text, last.comma + 1, last.comma + 1, " " + entry + ",")
            return _splice(text, last.node.end, last.node.end, ", " + entry)
        indent = _indent(text, last.start)
        entry = _entry_text(key, value, indent, unit, newline, compact=False)
        after = last.node.end if last.comma is None else last.comma + 1
        where = _end_of_line(text, after)
        added = newline + indent + entry + ("," if last.comma is not None else "")
        text = _splice(text, where, where, added)
        return text if last.comma is not None else _splice(text, after, after, ",")
    base = _indent(text, node.start)
    entry = _entry_text(key, value, base + unit, unit, newline, compact=False)
    close = node.end - 1
    inside = text[node.start + 1:close]
    if inside.strip(_SPACE) and _starts_line(text, close):
        where = _line_start(text, close)
        return _splice(text, where, where, base + unit + entry + newline)
    start = node.start + 1 if not inside.strip(_SPACE) else close
    return _splice(text, start, close, newline + base + unit + entry + newline + base)


def _delete(text: str, node: _Node, index: int) -> str:
    """Remove entry `index` of `node` with its comma and, when it has its own line, the line."""
    entry = node.entries[index]
    previous = node.entries[index - 1] if index else None
    end = entry.node.end if entry.comma is None else entry.comma + 1
    rest = _end_of_line(text, end)
    if _starts_line(text, entry.start) and (rest >= len(text) or text[rest] in "\r\n"):
        start = _line_start(text, entry.start) - 1
        if text[start - 1:start] == "\r":
            start -= 1
        text = _splice(text, start, rest, "")
    elif entry.comma is not None:
        while end < len(text) and text[end] in " \t":
            end += 1
        return _splice(text, entry.start, end, "")
    elif previous is not None and previous.comma is not None:
        return _splice(text, previous.comma, entry.node.end, "")
    else:
        text = _splice(text, entry.start, entry.node.end, "")
    if entry.comma is None and previous is not None and previous.comma is not None:
        text = _splice(text, previous.comma, previous.comma + 1, "")
    if len(node.entries) == 1:
        close = text.index("}" if node.kind == "object" else "]", node.start)
        if not text[node.start + 1:close].strip(_SPACE):
            text = _splice(text, node.start + 1, close, "")
    return text


def _find(node: _Node, key: Key) -> int | None:
    """The index of the entry `key` names (the last one, as JSON readers take duplicates)."""
    if node.kind == "array" and isinstance(key, int):
        return key if 0 <= key < len(node.entries) else None
    if node.kind == "object" and isinstance(key, str):
        found = [i for i, e in enumerate(node.entries) if e.key == key]
        return found[-1] if found else None
    return None


def _root(text: str, shown: str) -> _Node | None:
    root = _parse(text, shown)
    if root is not None and root.kind != "object":
        raise InvalidInput(f"{shown}: the top level is not a JSON object")
    return root


def _walk(text: str, path: Sequence[Key], shown: str) -> tuple[_Node, int, _Node | None]:
    """The deepest existing container along `path`, how many keys it consumed, and the root."""
    root = _root(text, shown)
    if root is None:
        return _Node(0, 0, "none"), 0, None
    node, depth = root, 0
    while depth < len(path) - 1:
        index = _find(node, path[depth])
        if index is None:
            break
        child = node.entries[index].node
        if child.kind == "scalar" or (child.kind == "array") != isinstance(path[depth + 1], int):
            where = ".".join(str(k) for k in path[:depth + 1])
            raise InvalidInput(f"{shown}: {where} is not "
                               f"{'an array' if isinstance(path[depth + 1], int) else 'an object'}")
        node, depth = child, depth + 1
    return node, depth, root


def _nest(path: Sequence[Key], value: object) -> object:
    for key in reversed(path):
        if not isinstance(key, str):
            raise InvalidInput(f"cannot create array index {key} (append instead)")
        value = {key: value}
    return value


def _same(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def set_value(text: str, path: Sequence[Key], value: object, shown: str = "the JSON text"
              ) -> str:
    """`text` with the member at `path` set to `value`, creating missing objects on the way.

    An existing member's value is replaced in place; a new member goes after the last one of
    its object. Everything outside the edited span is unchanged, and so is the whole text when
    the member already holds `value`.
    """
    if not path:
        raise InvalidInput("an empty path names no member")
    node, depth, root = _walk(text, path, shown)
    if root is None:
        newline = _newline(text)
        rendered = _render(_nest(path, value), "", "  ", newline, compact=False)
        separator = "" if not text or text.endswith("\n") else newline
        return text + separator + rendered + newline
    if depth == len(path) - 1:
        index = _find(node, path[-1])
        if index is not None:
            entry = node.entries[index]
            if _same(_python(entry.node), value):
                return text
            inline = not _starts_line(text, entry.start)
            rendered = _render(value, _indent(text, entry.start), _unit(text, root),
                               _newline(text), compact=inline)
            return _splice(text, entry.node.start, entry.node.end, rendered)
        if isinstance(path[-1], int):
            raise InvalidInput(f"{shown}: no item {path[-1]} to replace (append instead)")
    return _insert(text, root, node, path[depth], _nest(path[depth + 1:], value))


def append(text: str, path: Sequence[Key], value: object, shown: str = "the JSON text") -> str:
    """`text` with `value` added at the end of the array at `path` (created when missing)."""
    node, depth, root = _walk(text, [*path, 0], shown)
    if root is None or depth < len(path):
        return set_value(text, path, [value], shown)
    return _insert(text, root, node, None, value)


def remove(text: str, path: Sequence[Key], shown: str = "the JSON text") -> str:
    """`text` without the member (or array item) at `path`, its comma and, when the member had
    lines of its own, those lines. Parents are left in place, even when now empty; the text is
    returned unchanged when there is no such member."""
    if not path:
        raise InvalidInput("an empty path names no member")
    node, depth, root = _walk(text, path, shown)
    if root is None or depth < len(path) - 1:
        return text
    index = _find(node, path[-1])
    if index is None:
        return text
    if node.kind == "object":
        assert isinstance(path[-1], str)
        while (index := _find(node, path[-1])) is not None:  # duplicates: all of them
            text = _delete(text, node, index)
            node = _walk(text, path, shown)[0]
        return text
    return _delete(text, node, index)
