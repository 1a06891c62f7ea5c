"""The edits `loremap connect` makes to one file, each with its exact inverse.

An edit is a pure function of the file's text (None: no such file) to its new text (None:
delete the file): `add` puts loremap's part in, `drop` takes exactly that part out and leaves
the rest, even when nothing is left (the caller deletes a file that holds only what connect
wrote). Neither
touches the disk, so a connect can compute every file's new text, and refuse on the first bad
one, before it writes anything. Adding what is already there returns the text unchanged, which
is what "already connected" means.

JSON files go through the JSONC splicer, so the user's comments and layout survive; what we
append at the end of a text file (a TOML table, a marked block) is removed with the blank line
put before it, so add then drop gives the original bytes back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loremap import jsonc
from loremap.agents.instructions import BEGIN, BLOCK, END
from loremap.errors import InvalidInput

HOOK_PROGRAM = "loremap-hook"  # a hook handler whose command names it is ours


@dataclass(frozen=True)
class Edit:
    """loremap's part of one file; `role` says what it is ("MCP server", "instructions").

    `needs` are the bare program names (looked up on PATH) that what the edit writes runs."""

    path: Path
    role: str
    needs: tuple[str, ...] = field(default=(), kw_only=True)

    @property
    def shown(self) -> str:
        return str(self.path)

    def add(self, old: str | None) -> str | None:
        raise NotImplementedError

    def drop(self, old: str | None) -> str | None:
        raise NotImplementedError

    def warning(self, old: str | None) -> str | None:
        """Why what this edit adds would not take effect in `old`, in one line (None: it does)."""
        return None


def like(text: str, block: str) -> str:
    """`block` with the line endings of `text` (a Windows file keeps its CRLF)."""
    return block.replace("\r\n", "\n").replace("\n", "\r\n") if "\r\n" in text else block


def append_tail(text: str, block: str) -> str:
    """`block` at the end of `text`, after a blank line when there is text before it."""
    if not text:
        return block
    newline = like(text, "\n")
    return text + (newline if text.endswith("\n") else newline * 2) + like(text, block)


def cut(text: str, start: int, end: int) -> str:
    """`text` without `text[start:end]`; at the end of the file, also the blank line that
    `append_tail` put before it."""
    newline = like(text, "\n")
    rest = text[:start] + text[end:]
    if end == len(text) and rest.endswith(newline * 2):
        rest = rest[:-len(newline)]
    return rest


# --- JSON -------------------------------------------------------------------------------------


def _object(data: Any, shown: str) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InvalidInput(f"{shown}: the top level is not a JSON object")
    return data


def _at(data: dict[str, Any], keys: tuple[str, ...], shown: str) -> Any:
    """The value at `keys`, None when missing; refuses a non-object on the way."""
    node: Any = data
    for depth, key in enumerate(keys):
        if not isinstance(node, dict):
            raise InvalidInput(f"{shown}: {'.'.join(keys[:depth])} is not an object")
        node = node.get(key)
        if node is None:
            return None
    return node


def prune(text: str, keys: tuple[str, ...], shown: str) -> str:
    """Remove the objects (or a list) along `keys`, deepest first, that are now empty and hold
    no comment."""
    for depth in range(len(keys), 0, -1):
        if _at(_object(jsonc.loads(text, shown), shown), keys[:depth], shown) not in ({}, []):
            break
        shorter = jsonc.remove(text, keys[:depth], shown)
        if shorter.count("//") + shorter.count("/*") != text.count("//") + text.count("/*"):
            break
        text = shorter
    return text


@dataclass(frozen=True)
class JsonEntry(Edit):
    """A member (an MCP server) at `keys` in a JSON or JSONC file.

    Only the fields we write are compared and set, so what the user or the agent added to the
    entry (Cline's `autoApprove`, a timeout) survives a second connect. `obsolete` are paths
    inside the entry that an older loremap wrote and this one does not (`env.LOREMAP_PROJECT_DIR`
    holding an absolute path in a committed file): they go, and an object they leave empty too.
    """

    keys: tuple[str, ...]
    value: dict[str, Any]
    obsolete: tuple[tuple[str, ...], ...] = field(default=(), kw_only=True)

    def add(self, old: str | None) -> str | None:
        text = old or ""
        current = _at(_object(jsonc.loads(text, self.shown), self.shown), self.keys, self.shown)
        if current is None:
            return jsonc.set_value(text, self.keys, self.value, self.shown)
        if not isinstance(current, dict):
            raise InvalidInput(f"{self.shown}: {'.'.join(self.keys)} is not an object")
        for key, value in self.value.items():
            text = jsonc.set_value(text, (*self.keys, key), value, self.shown)
        for inner in self.obsolete:
            text = self._forget(text, inner)
        return text

    def _forget(self, text: str, inner: tuple[str, ...]) -> str:
        where = (*self.keys, *inner)
        if _at(_object(jsonc.loads(text, self.shown), self.shown), where, self.shown) is None:
            return text
        text = jsonc.remove(text, where, self.shown)
        parent = _at(_object(jsonc.loads(text, self.shown), self.shown), where[:-1], self.shown)
        return jsonc.remove(text, where[:-1], self.shown) if parent == {} else text

    def drop(self, old: str | None) -> str | None:
        if old is None:
            return None
        data = _object(jsonc.loads(old, self.shown), self.shown)
        if _at(data, self.keys, self.shown) is None:
            return old
        return prune(jsonc.remove(old, self.keys, self.shown), self.keys[:-1], self.shown)


def ours(handler: Any) -> bool:
    """Whether a hook handler is loremap's: its command runs `loremap-hook`."""
    return isinstance(handler, dict) and HOOK_PROGRAM in str(handler.get("command", ""))


def _handlers(group: Any) -> list[Any]:
    handlers = group.get("hooks") if isinstance(group, dict) else None
    return handlers if isinstance(handlers, list) else []


@dataclass(frozen=True)
class JsonHooks(Edit):
    """Claude-style hooks: `hooks.<Event>: [{"matcher": ..., "hooks": [{"type": "command",
    ...}]}]` (Claude Code's settings, Codex's hooks.json, Gemini CLI's settings).

    Ours are the handlers whose command names `loremap-hook`; each event gets one group of its
    own (`groups`: event, group). A group of the user's that also holds one of ours loses only
    ours. Handlers of ours in other events (left by an older loremap) go on add, and every
    handler of ours goes on drop.
    """

    groups: tuple[tuple[str, dict[str, Any]], ...]  # (event, the group we add)

    def _events(self, text: str) -> list[str]:
        hooks = _at(_object(jsonc.loads(text, self.shown), self.shown), ("hooks",), self.shown)
        if hooks is not None and not isinstance(hooks, dict):
            raise InvalidInput(f"{self.shown}: hooks is not an object")
        return list(hooks or {})

    def _groups(self, data: dict[str, Any], event: str) -> list[Any]:
        groups = _at(data, ("hooks", event), self.shown)
        if groups is None:
            return []
        if not isinstance(groups, list):
            raise InvalidInput(f"{self.shown}: hooks.{event} is not a list")
        return groups

    def _strip(self, text: str, event: str) -> str:
        data = _object(jsonc.loads(text, self.shown), self.shown)
        for g, group in reversed(list(enumerate(self._groups(data, event)))):
            handlers = _handlers(group)
            if not any(ours(h) for h in handlers):
                continue
            if all(ours(h) for h in handlers):
                text = jsonc.remove(text, ("hooks", event, g), self.shown)
                continue
            for h in reversed([i for i, handler in enumerate(handlers) if ours(handler)]):
                text = jsonc.remove(text, ("hooks", event, g, "hooks", h), self.shown)
        return text

    def _strip_events(self, text: str, events: list[str]) -> str:
        for event in events:
            stripped = self._strip(text, event)
            if stripped != text:
                text = prune(stripped, ("hooks", event), self.shown)
        return text

    def add(self, old: str | None) -> str | None:
        wanted = {event for event, _ in self.groups}
        text = self._strip_events(old or "", [e for e in self._events(old or "")
                                              if e not in wanted])
        for event, group in self.groups:
            data = _object(jsonc.loads(text, self.shown), self.shown)
            mine = [g for g in self._groups(data, event) if any(ours(h) for h in _handlers(g))]
            if mine == [group]:
                continue
            text = jsonc.append(self._strip(text, event), ("hooks", event), group, self.shown)
        return text

    def drop(self, old: str | None) -> str | None:
        if old is None:
            return None
        return self._strip_events(old, self._events(old))


# --- text files -------------------------------------------------------------------------------


@dataclass(frozen=True)
class OwnFile(Edit):
    """A file that is loremap's alone (a rule file, a block file): written whole, deleted."""

    content: str

    def add(self, old: str | None) -> str | None:
        return self.content

    def drop(self, old: str | None) -> str | None:
        return None


def _block_span(text: str, shown: str) -> tuple[int, int] | None:
    """Where the marked block is: from its begin line to past its end line."""
    lines = text.splitlines(keepends=True)
    begins = [i for i, line in enumerate(lines) if line.strip() == BEGIN]
    ends = [i for i, line in enumerate(lines) if line.strip() == END]
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise InvalidInput(f"{shown}: the lines {BEGIN} and {END} are not one pair in order; "
                           "fix them by hand")
    start = sum(len(line) for line in lines[:begins[0]])
    return start, sum(len(line) for line in lines[:ends[0] + 1])


@dataclass(frozen=True)
class MarkedBlock(Edit):
    """loremap's instructions between marker lines, in a file other tools read too."""

    def add(self, old: str | None) -> str | None:
        text = old or ""
        span = _block_span(text, self.shown)
        if span is None:
            return append_tail(text, BLOCK)
        start, end = span
        block = like(text, BLOCK if text[end - 1] == "\n" else BLOCK[:-1])
        return text[:start] + block + text[end:]

    def drop(self, old: str | None) -> str | None:
        if old is None:
            return None
        span = _block_span(old, self.shown)
        if span is None:
            return old
        return cut(old, *span)
