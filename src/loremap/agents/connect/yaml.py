"""YAML for `loremap connect`: Goose's `extensions:` entry and Continue's MCP block file.

ruamel.yaml in round-trip mode parses the user's file (a broken one is refused with its line
and column), says on which line each key sits, and renders our entry. The edit itself is a
splice of whole lines: our entry goes in after the last entry of the mapping, indented like
it, and leaves by the same lines. Dumping the whole document instead would re-indent a file
written with another indentation and move comments that ruamel attaches to the entry before
ours; the splice leaves every other byte alone. A layout the splice cannot handle (a flow
mapping such as `extensions: {}`) falls back to ruamel's dump, which keeps the comments.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loremap.agents.connect.edits import Edit, append_tail, cut
from loremap.errors import InvalidInput


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a long line the user wrote
    return yaml


def dump(data: Any, unit: int = 2) -> str:
    """`data` as block-style YAML with `unit`-space indentation."""
    yaml = _yaml()
    yaml.indent(mapping=unit, sequence=unit + 2, offset=unit)
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _lines(text: str) -> list[str]:
    """Lines with their endings, split as YAML counts them (on line feeds)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _offset(lines: list[str], index: int) -> int:
    return sum(len(line) for line in lines[:index])


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


@dataclass(frozen=True)
class YamlEntry(Edit):
    """`parent: {name: value}` in a YAML mapping, e.g. Goose's `extensions: {loremap: ...}`."""

    parent: str
    name: str
    value: dict[str, Any]

    def _load(self, text: str) -> Any:
        from ruamel.yaml.error import YAMLError

        try:
            data = _yaml().load(text)
        except YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise InvalidInput(f"{self.shown}{where}: not valid YAML: {problem}") from None
        if data is None:
            from ruamel.yaml.comments import CommentedMap

            return CommentedMap()
        if not isinstance(data, Mapping):
            raise InvalidInput(f"{self.shown}: the top level is not a mapping")
        section = data.get(self.parent)
        if section is not None and not isinstance(section, Mapping):
            raise InvalidInput(f"{self.shown}: {self.parent} is not a mapping")
        if section is not None and self.name in section and not isinstance(
                section[self.name], Mapping):
            raise InvalidInput(f"{self.shown}: {self.parent}.{self.name} is not a mapping")
        return data

    def _entry(self, column: int, unit: int, newline: str) -> str:
        rendered = dump({self.name: self.value}, unit)
        return "".join(" " * column + line + newline for line in rendered.splitlines())

    @staticmethod
    def _span(lines: list[str], start: int, column: int) -> tuple[int, int]:
        """Lines of the key at `start` (its column `column`): itself and all deeper lines."""
        end = start + 1
        for i in range(start + 1, len(lines)):
            if not lines[i].strip():
                continue
            if _indent(lines[i]) <= column:
                break
            end = i + 1
        return start, end

    def _unit(self, section: Any, key: Any, column: int) -> int:
        from ruamel.yaml.comments import CommentedMap

        child = section[key]
        if isinstance(child, CommentedMap) and child and not child.fa.flow_style():
            inner = child.lc.key(next(iter(child)))[1]
            if inner > column:
                return int(inner - column)
        return 2

    def _dumped(self, data: Any) -> str:
        out = io.StringIO()
        _yaml().dump(data, out)
        return out.getvalue()

    def add(self, old: str | None) -> str | None:
        text = old or ""
        data = self._load(text)
        section = data.get(self.parent)
        newline = "\r\n" if "\r\n" in text else "\n"
        if section is not None and self.name in section:
            current = _plain(section[self.name])
            if all(current.get(k) == v for k, v in self.value.items()):
                return text
        if self.parent not in data:
            block = f"{self.parent}:{newline}" + self._entry(2, 2, newline)
            return append_tail(text, block)
        spliced = self._splice_in(text, data, section, newline)
        if spliced is not None and _plain(self._load(spliced).get(self.parent, {})).get(
                self.name) == self.value:
            return spliced
        data[self.parent] = section if section is not None else {}
        data[self.parent][self.name] = self.value
        return self._dumped(data)

    def _splice_in(self, text: str, data: Any, section: Any, newline: str) -> str | None:
        lines = _lines(text)
        if section is None:  # `extensions:` with nothing after it
            line, column = data.lc.key(self.parent)
            at = line + 1
            entry = self._entry(column + 2, 2, newline)
        elif not section or section.fa.flow_style():
            return None
        elif self.name in section:  # an older entry of ours: replace its lines
            line, column = section.lc.key(self.name)
            start, end = self._span(lines, line, column)
            entry = self._entry(column, self._unit(section, self.name, column), newline)
            return "".join(lines[:start]) + entry + "".join(lines[end:])
        else:
            last = list(section)[-1]
            line, column = section.lc.key(last)
            at = self._span(lines, line, column)[1]
            entry = self._entry(column, self._unit(section, last, column), newline)
        if at > len(lines) or (at == len(lines) and lines and not lines[-1].endswith("\n")):
            return None
        return "".join(lines[:at]) + entry + "".join(lines[at:])

    def drop(self, old: str | None) -> str | None:
        if old is None:
            return None
        data = self._load(old)
        section = data.get(self.parent)
        if section is None or self.name not in section:
            return old
        expected = _plain(data)
        del expected[self.parent][self.name]
        if not expected[self.parent]:
            del expected[self.parent]
        text = self._splice_out(old, data, section)
        if text is None or _plain(self._load(text)) != expected:
            del section[self.name]
            if not section:
                del data[self.parent]
            text = self._dumped(data)
        return text

    def _splice_out(self, text: str, data: Any, section: Any) -> str | None:
        if section.fa.flow_style():
            return None
        lines = _lines(text)
        line, column = section.lc.key(self.name)
        start, end = self._span(lines, line, column)
        if len(section) == 1:  # the mapping held only ours: its key goes too
            start = data.lc.key(self.parent)[0]
        return cut(text, _offset(lines, start), _offset(lines, end))


def continue_block(name: str, server: dict[str, Any]) -> str:
    """A Continue block file (`.continue/mcpServers/<name>.yaml`) declaring one MCP server."""
    return dump({"name": name, "version": "0.0.1", "schema": "v1",
                 "mcpServers": [{"name": name, **server}]})
