"""Codex CLI's `config.toml`: loremap's `[mcp_servers.loremap]` table and the `[features]`
flag that lets Codex run hooks, added and removed.

tomlkit parses the file (so a broken one is refused with its line and column) and renders what
we add. A new table goes at the end of the file, which TOML allows for any table, so nothing the
user wrote moves; removing it cuts the same text back out. Only when our part is not where we
put it (the user moved or edited it, or `mcp_servers` is an inline table) does tomlkit rewrite
the document, which keeps comments but may respace them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loremap.agents.connect.edits import Edit, append_tail, cut, like
from loremap.errors import InvalidInput

if TYPE_CHECKING:
    from tomlkit import TOMLDocument

MARK = "added by loremap connect"  # the comment on a flag of ours: undo removes only those


def _parse(text: str, shown: str) -> TOMLDocument:
    import tomlkit
    from tomlkit.exceptions import ParseError

    try:
        return tomlkit.parse(text)
    except ParseError as exc:
        message = re.sub(r" at line \d+ col \d+$", "", str(exc))
        raise InvalidInput(f"{shown}:{exc.line}:{exc.col}: not valid TOML: {message}") from None


def _cut_back(old: str, rendered: str, expected: dict[str, Any], shown: str) -> str | None:
    """`old` without `rendered` where `add` appended it, if that leaves exactly `expected`."""
    rendered = like(old, rendered)
    at = old.rfind(rendered)
    if at >= 0 and (at == 0 or old[at - 1] == "\n"):
        text = cut(old, at, at + len(rendered))
        if _parse(text, shown).unwrap() == expected:
            return text
    return None


@dataclass(frozen=True)
class TomlTable(Edit):
    """The table at `keys` (e.g. `mcp_servers.loremap`) holding `value`."""

    keys: tuple[str, ...]
    value: dict[str, Any]

    def _parse(self, text: str) -> TOMLDocument:
        return _parse(text, self.shown)

    def _find(self, doc: TOMLDocument) -> tuple[Any, Any]:
        """(parent table, our table) along `keys`; None for what is missing."""
        parent: Any = doc
        for depth, key in enumerate(self.keys[:-1]):
            parent = parent.get(key)
            if parent is None:
                return None, None
            if not isinstance(parent, Mapping):
                raise InvalidInput(f"{self.shown}: {'.'.join(self.keys[:depth + 1])} is not a "
                                   "table")
        current = parent.get(self.keys[-1])
        if current is not None and not isinstance(current, Mapping):
            raise InvalidInput(f"{self.shown}: {'.'.join(self.keys)} is not a table")
        return parent, current

    def _render(self) -> str:
        import tomlkit

        doc = tomlkit.document()
        node: Any = doc
        for key in self.keys[:-1]:
            node[key] = tomlkit.table(is_super_table=True)
            node = node[key]
        table = tomlkit.table()
        for key, value in self.value.items():
            table[key] = value
        node[self.keys[-1]] = table
        return tomlkit.dumps(doc)

    def add(self, old: str | None) -> str | None:
        import tomlkit
        from tomlkit.exceptions import ParseError

        text = old or ""
        doc = self._parse(text)
        parent, current = self._find(doc)
        if current is None:
            new = append_tail(text, self._render())
            try:
                tomlkit.parse(new)
                return new
            except ParseError:  # e.g. `mcp_servers = {...}` inline: only tomlkit can add to it
                node: Any = doc
                for key in self.keys[:-1]:
                    node = node.setdefault(key, tomlkit.table())
                node[self.keys[-1]] = self.value
                return tomlkit.dumps(doc)
        if all(_plain(current.get(k)) == v for k, v in self.value.items()):
            return text
        for key, value in self.value.items():
            current[key] = value
        return tomlkit.dumps(doc)

    def _without(self, doc: TOMLDocument) -> dict[str, Any]:
        """The document's data without our table and the parents it leaves empty."""
        data: dict[str, Any] = doc.unwrap()
        chain = [data]
        for key in self.keys[:-1]:
            chain.append(chain[-1][key])
        del chain[-1][self.keys[-1]]
        for depth in range(len(self.keys) - 1, 0, -1):
            if chain[depth] == {}:
                del chain[depth - 1][self.keys[depth - 1]]
        return data

    def drop(self, old: str | None) -> str | None:
        import tomlkit

        if old is None:
            return None
        doc = self._parse(old)
        parent, current = self._find(doc)
        if current is None:
            return old
        expected = self._without(doc)
        text = _cut_back(old, self._render(), expected, self.shown)
        if text is not None:
            return text
        del parent[self.keys[-1]]
        text = tomlkit.dumps(doc)
        if self._parse(text).unwrap() != expected:  # an emptied parent table is left: drop it
            for depth in range(len(self.keys) - 1, 0, -1):
                node = doc
                for key in self.keys[:depth - 1]:
                    node = node[key]
                if not node[self.keys[depth - 1]]:
                    del node[self.keys[depth - 1]]
            text = tomlkit.dumps(doc)
        return text


@dataclass(frozen=True)
class TomlFlag(Edit):
    """The flag `[table] key = true` (Codex's `[features] hooks`), unless the file already
    gives it, or one of its `aliases` (Codex's legacy `codex_hooks`), a value: that is the
    user's choice, kept as it is, and `off` says in one line what a `false` there means.

    Ours carries the comment `# added by loremap connect`, so undo removes a flag only when
    connect added it. A regular `[table]` gets the key at its end; a file without the table gets
    the table at its end. In another layout (an inline table, dotted keys) nothing is added:
    the program's default applies.
    """

    table: str
    key: str
    aliases: tuple[str, ...]
    off: str

    def _given(self, doc: TOMLDocument) -> tuple[Any, str | None]:
        """(the table or None, the first of key and aliases the table gives a value)."""
        table = doc.get(self.table)
        if table is None:
            return None, None
        if not isinstance(table, Mapping):
            raise InvalidInput(f"{self.shown}: {self.table} is not a table")
        return table, next((k for k in (self.key, *self.aliases) if k in table), None)

    def _item(self) -> Any:
        import tomlkit

        item = tomlkit.item(True)
        item.comment(MARK)
        return item

    def _render(self) -> str:
        import tomlkit

        doc = tomlkit.document()
        table = tomlkit.table()
        table[self.key] = self._item()
        doc[self.table] = table
        return tomlkit.dumps(doc)

    def add(self, old: str | None) -> str | None:
        import tomlkit
        from tomlkit.exceptions import ParseError
        from tomlkit.items import Table

        text = old or ""
        doc = _parse(text, self.shown)
        table, given = self._given(doc)
        if given is not None:
            return text
        if isinstance(table, Table) and not table.is_super_table():
            table[self.key] = self._item()
            return tomlkit.dumps(doc)
        if table is not None and not isinstance(table, Table):
            return text  # an inline table: only a rewrite could add to it
        new = append_tail(text, self._render())
        try:
            tomlkit.parse(new)
        except ParseError:  # dotted `features.x = ...` keys: [features] may not follow them
            return text
        return new

    def drop(self, old: str | None) -> str | None:
        import tomlkit
        from tomlkit.items import Table

        if old is None:
            return None
        doc = _parse(old, self.shown)
        table, _ = self._given(doc)
        if not isinstance(table, Table) or self.key not in table or \
                MARK not in getattr(getattr(table.item(self.key), "trivia", None), "comment", ""):
            return old
        expected = doc.unwrap()
        del expected[self.table][self.key]
        if not expected[self.table]:
            del expected[self.table]
        text = _cut_back(old, self._render(), expected, self.shown)
        if text is not None:
            return text
        del table[self.key]
        return tomlkit.dumps(doc)

    def warning(self, old: str | None) -> str | None:
        table, given = self._given(_parse(old or "", self.shown))
        if given is None or _plain(table[given]) is not False:
            return None
        return f"[{self.table}] {given} = false: {self.off}"


def _plain(value: Any) -> Any:
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value
