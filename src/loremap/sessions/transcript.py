"""What the hooks read from a live Claude Code transcript: the context size now, and what the
session did (files read and edited, commands, errors, the user's requests).

The X-ray reads whole transcript folders for totals; the hooks need two cheaper questions
about one session, answered while the agent waits: the meter reads only the file's tail, and
the session record decodes only the lines that can hold a tool call, an error or a prompt.
Both tolerate what a live file looks like: a half-written last line, records of unknown types,
lines that are not JSON. Standard library only (this runs inside `loremap-hook`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

TAIL_BYTES = 512 * 1024
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
READ_TOOLS = frozenset({"Read", "NotebookRead"})
SEARCH_TOOLS = frozenset({"Grep", "Glob", "LS", "WebSearch", "WebFetch"})
# Shell commands that explore rather than change (the first word of a Bash call).
SEARCH_COMMANDS = frozenset({"grep", "rg", "ag", "find", "fd", "ls", "cat", "head", "tail",
                             "less", "tree", "git"})


def context_tokens(path: Path, tail_bytes: int = TAIL_BYTES) -> int | None:
    """The context size of the session's latest model call, or None when unknown.

    It is the call's input (uncached + cache reads + cache writes) plus its output: what the
    next call starts from. Unknown: no call yet, or a compaction after the latest call (the
    context was just replaced), or no usage in the last `tail_bytes` of the file.
    """
    for record in _records_backwards(path, tail_bytes):
        if record.get("type") == "system" and record.get("subtype") == "compact_boundary":
            return None
        if record.get("type") != "assistant" or record.get("isSidechain"):
            continue
        message = record.get("message")
        if not isinstance(message, dict) or message.get("model") == "<synthetic>":
            continue
        usage = message.get("usage")
        if isinstance(usage, dict):
            return sum(_int(usage.get(k)) for k in (
                "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
                "output_tokens"))
    return None


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _records_backwards(path: Path, tail_bytes: int) -> Iterator[dict[str, Any]]:
    with open(path, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        start = max(0, size - tail_bytes)
        fh.seek(start)
        data = fh.read()
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # cut mid-line by the seek
    for line in reversed(lines):
        if b'"usage"' not in line and b'"compact_boundary"' not in line:
            continue
        record = _decode(line)
        if record is not None:
            yield record


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None  # a half-written last line, or not JSON at all
    return record if isinstance(record, dict) else None


class Activity(NamedTuple):
    """What one session did, most recent last in every list."""

    requests: tuple[str, ...]
    reads: tuple[str, ...]
    edits: tuple[str, ...]
    commands: tuple[str, ...]
    errors: tuple[str, ...]
    explore_calls: int      # reads and searches (files, greps, globs, exploring shell commands)
    recorded: bool          # a note was written (the remember tool or `loremap remember`)
    compactions: int


class _Scan:
    def __init__(self, root: Path | None, clean: Callable[[str], str] | None = None) -> None:
        self.root = root
        # Each field is cleaned as it was typed, before it is flattened or cut: a key's line
        # breaks and a token's tail are what a scanner needs to recognise them.
        self.clean: Callable[[str], str] = clean or str
        self.requests: list[str] = []
        self.reads: dict[str, None] = {}
        self.edits: dict[str, None] = {}
        self.commands: list[str] = []
        self.errors: list[str] = []
        self.explore = 0
        self.recorded = False
        self.compactions = 0
        self.tool_names: dict[str, str] = {}

    def assistant(self, message: dict[str, Any]) -> None:
        for block in _blocks(message):
            if block.get("type") != "tool_use":
                continue
            name = str(block.get("name") or "")
            raw = block.get("input")
            given: dict[str, Any] = raw if isinstance(raw, dict) else {}
            self.tool_names[str(block.get("id") or "")] = name
            self.tool(name, given)

    def tool(self, name: str, given: dict[str, Any]) -> None:
        target = given.get("file_path") or given.get("notebook_path")
        if name in EDIT_TOOLS and isinstance(target, str):
            self.edits[self.clean(self._shown(target))] = None
        elif name in READ_TOOLS and isinstance(target, str):
            self.reads[self.clean(self._shown(target))] = None
            self.explore += 1
        elif name in SEARCH_TOOLS:
            self.explore += 1
        elif name == "Bash" and isinstance(given.get("command"), str):
            command = " ".join(given["command"].split())
            self.commands.append(" ".join(self.clean(given["command"]).split())[:200])
            first = command.split(" ", 1)[0].rsplit("/", 1)[-1]
            if first in SEARCH_COMMANDS:
                self.explore += 1
            if "loremap remember" in command:
                self.recorded = True
        elif name.endswith("__remember") and "loremap" in name:
            self.recorded = True

    def user(self, record: dict[str, Any], message: dict[str, Any]) -> None:
        content = message.get("content")
        if isinstance(content, str):
            self._request(record, content)
            return
        texts = []
        for block in _blocks(message):
            if block.get("type") == "tool_result" and block.get("is_error"):
                name = self.tool_names.get(str(block.get("tool_use_id") or ""), "a tool")
                self.errors.append(f"{name}: {_first_line(self.clean(_result_text(block)))}")
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
        if texts:
            self._request(record, "\n".join(texts))

    def _request(self, record: dict[str, Any], text: str) -> None:
        if record.get("isMeta") or record.get("isCompactSummary"):
            return
        text = text.strip()
        if not text or text.startswith(("<system-reminder>", "<command-", "<local-command",
                                        "[Request interrupted")):
            return
        self.requests.append(" ".join(self.clean(text).split())[:300])

    def _shown(self, target: str) -> str:
        if self.root is not None:
            try:
                return Path(target).resolve().relative_to(self.root).as_posix()
            except (ValueError, OSError):
                pass
        return target

    def result(self, keep: int) -> Activity:
        return Activity(tuple(self.requests[-5:]), tuple(list(self.reads)[-keep:]),
                        tuple(list(self.edits)[-keep:]), tuple(self.commands[-keep:]),
                        tuple(self.errors[-10:]), self.explore, self.recorded, self.compactions)


def _blocks(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, list):
        yield from (b for b in content if isinstance(b, dict))


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = " ".join(line.replace("<tool_use_error>", "").split())
        if line:
            return line[:200]
    return "(no message)"


def activity(path: Path, root: Path | None = None, keep: int = 20,
             clean: Callable[[str], str] | None = None) -> Activity:
    """What the session in `path` did; paths inside `root` are shown relative to it.

    `clean` (the session record passes secret redaction) sees every kept text whole, before
    it is flattened to one line and cut to length, so no cut leaves part of a token."""
    scan = _Scan(root.resolve() if root is not None else None, clean)
    with open(path, "rb") as fh:
        for line in fh:
            if b'"compact_boundary"' in line:
                scan.compactions += 1
                continue
            # Cheap filters first: most of a transcript's bytes are tool results and snapshots.
            if b'"assistant"' in line and b'"tool_use"' in line:
                record = _decode(line)
                if record is not None and record.get("type") == "assistant" and \
                        not record.get("isSidechain") and isinstance(record.get("message"), dict):
                    scan.assistant(record["message"])
            elif b'"user"' in line and (b'"tool_result"' not in line or b'"is_error":true' in
                                        line or b'"is_error": true' in line):
                record = _decode(line)
                if record is not None and record.get("type") == "user" and \
                        not record.get("isSidechain") and isinstance(record.get("message"), dict):
                    scan.user(record, record["message"])
    return scan.result(keep)
