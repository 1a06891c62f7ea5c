"""Reading Claude Code transcripts: one pass over each file, each API call counted once.

Claude Code appends one JSON object per line to `<root>/<project-key>/<session-id>.jsonl`
(sub-agents: `<session-id>/subagents/**/agent-<id>.jsonl`). One API response is written as
several `assistant` lines, one per content block, sharing `message.id` and `requestId` and
each repeating `message.usage`; the output count can grow from one line to the next. A call is
counted once, with the largest figure of each field seen on its lines (ccusage keeps the first
line and so undercounts output whenever a later line carries more).

Only the lines that can matter are parsed: a cheap byte test skips tool results, file
snapshots and progress records, which are most of the bytes. Memory is one file's calls at a
time. Bad input is counted, never fatal: a truncated last line (a session being written),
malformed lines, unknown record types, records without usage, bytes that are not UTF-8.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from loremap.text import estimate_tokens

# Record types Claude Code writes (2.0 to 2.1.328); anything else is counted as unknown.
KNOWN_TYPES = frozenset({
    "user", "assistant", "system", "progress", "file-history-snapshot", "queue-operation",
    "summary", "attachment", "api-request", "api-request-shape", "api-request-blob",
    "last-prompt", "atis-latch", "cost-state", "custom-title", "tag", "agent-name",
    "pr-link", "worktree-state", "mode",
})
_WANTED = (b'"assistant"', b"compact_boundary", b'"attachment"')
_SYNTHETIC = "<synthetic>"


class Usage(NamedTuple):
    """Tokens of one API call (or a sum of calls)."""

    input: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    cache_read: int = 0
    output: int = 0

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h

    @property
    def prompt(self) -> int:
        """The context the call was sent with: every input token, cached or not."""
        return self.input + self.cache_read + self.cache_write

    def plus(self, other: Usage) -> Usage:
        return Usage(*(a + b for a, b in zip(self, other, strict=True)))


class Call(NamedTuple):
    model: str
    timestamp: str  # ISO UTC of the call's first line
    usage: Usage


class Compaction(NamedTuple):
    timestamp: str
    trigger: str  # auto | manual
    pre_tokens: int
    after_calls: int  # calls of the chain before the boundary


class Chain(NamedTuple):
    """One transcript file: a session's main thread or one of its sub-agents."""

    path: Path
    session: str
    project: str  # the project key (folder name under the root)
    cwd: str
    agent: str | None  # the sub-agent id, None for the main thread
    calls: list[Call]
    compactions: list[Compaction]
    tools: Counter[str]  # tool_use blocks by tool name
    first_prompt: int  # estimated tokens of the first user message (for the fixed context)
    fixed_parts: dict[str, int]  # 2.1.3x attachments: what the first call carried, in tokens
    problems: Counter[str]  # bad_line, truncated, unknown_type, not_utf8


def home_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$HOME` (which the tests point elsewhere), else the account's home."""
    env = os.environ if environ is None else environ
    return Path(env.get("HOME") or Path.home())


def transcripts_root(environ: Mapping[str, str] | None = None) -> Path:
    """`$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`."""
    env = os.environ if environ is None else environ
    base = env.get("CLAUDE_CONFIG_DIR", "").strip()
    return (Path(base).expanduser() if base else home_dir(env) / ".claude") / "projects"


def project_key(path: Path) -> str:
    """Claude Code's folder name for a project: every character outside [A-Za-z0-9] as '-'
    (keys over 200 characters are cut and hashed by Claude Code: compare the first 200)."""
    return "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in str(path))


def discover(root: Path, project: Path | None = None, since_epoch: float | None = None
             ) -> Iterator[tuple[str, Path]]:
    """(project key, file) of every transcript under `root`, main files before their
    sub-agents, skipping files last written before `since_epoch`."""
    if not root.is_dir():
        return
    wanted = project_key(project)[:200] if project is not None else None
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if wanted is not None and folder.name[:200] != wanted:
            continue
        for path in sorted(folder.rglob("*.jsonl")):
            try:
                if since_epoch is not None and path.stat().st_mtime < since_epoch:
                    continue
            except OSError:
                continue
            yield folder.name, path


def _int(value: object) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def _usage(raw: Mapping[str, Any]) -> Usage:
    total_write = _int(raw.get("cache_creation_input_tokens"))
    split = raw.get("cache_creation")
    w5 = w1 = 0
    if isinstance(split, dict):
        w5 = _int(split.get("ephemeral_5m_input_tokens"))
        w1 = _int(split.get("ephemeral_1h_input_tokens"))
    if w5 + w1 < total_write:  # no split (older versions), or a partial one: the rest is 5m
        w5 += total_write - w5 - w1
    return Usage(_int(raw.get("input_tokens")), w5, w1, _int(raw.get("cache_read_input_tokens")),
                 _int(raw.get("output_tokens")))


class _Reader:
    """The state of one file while it is read."""

    def __init__(self, path: Path, project: str, seen: set[int]) -> None:
        self.path = path
        self.project = project
        self.seen = seen  # hashes of the calls and boundaries of the files read before
        self.mine: set[tuple[str, str]] = set()  # the calls first read in this file
        self.session = ""
        self.cwd = ""
        self.agent: str | None = None
        self.calls: dict[tuple[str, str], list[Any]] = {}  # key -> [model, ts, max usage]
        self.compactions: list[Compaction] = []
        self.tools: Counter[str] = Counter()
        self.tool_ids: set[str] = set()
        self.first_prompt = -1
        self.fixed: dict[str, int] = {}
        self.problems: Counter[str] = Counter()

    def line(self, raw: bytes, last: bool) -> None:
        first_user = self.first_prompt < 0 and b'"user"' in raw
        if not first_user and not any(marker in raw for marker in _WANTED):
            return
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            self.problems["not_utf8"] += 1
            text = raw.decode("utf-8", "replace")
        try:
            record = json.loads(text)
        except ValueError:
            self.problems["truncated" if last and not raw.endswith(b"\n") else "bad_line"] += 1
            return
        if not isinstance(record, dict):
            self.problems["bad_line"] += 1
            return
        self.record(record)

    def record(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind not in KNOWN_TYPES:
            self.problems["unknown_type"] += 1
            return
        if not self.session and isinstance(record.get("sessionId"), str):
            self.session = record["sessionId"]
            self.cwd = str(record.get("cwd") or "")
        if record.get("isSidechain") and isinstance(record.get("agentId"), str):
            self.agent = record["agentId"]
        if kind == "assistant":
            self.assistant(record)
        elif kind == "user" and self.first_prompt < 0 and not record.get("isMeta"):
            self.first_prompt = _prompt_tokens(record)
        elif kind == "system" and record.get("subtype") == "compact_boundary":
            if self._copied(("boundary", str(record.get("uuid") or ""))):
                return
            meta = record.get("compactMetadata") or {}
            self.compactions.append(Compaction(
                str(record.get("timestamp") or ""), str(meta.get("trigger") or "auto"),
                _int(meta.get("preTokens")), len(self.calls)))
        elif kind == "attachment" and not self.calls:
            _fixed_part(record, self.fixed)

    def _copied(self, key: tuple[str, str]) -> bool:
        """Whether `key` was read in an earlier file: a forked or resumed session starts with a
        copy of its parent's records (same message ids); they are counted where first read."""
        digest = hash(key)
        if digest in self.seen:
            return True
        self.seen.add(digest)
        return False

    def assistant(self, record: dict[str, Any]) -> None:
        message = record.get("message")
        if not isinstance(message, dict):
            return
        key = (str(message.get("id") or record.get("uuid") or ""),
               str(record.get("requestId") or ""))
        if key not in self.mine:
            if self._copied(key):
                return
            self.mine.add(key)
        for block in message.get("content") or ():
            if isinstance(block, dict) and block.get("type") == "tool_use":
                block_id = str(block.get("id") or "")
                if block_id not in self.tool_ids:
                    self.tool_ids.add(block_id)
                    self.tools[str(block.get("name") or "?")] += 1
        raw = message.get("usage")
        model = str(message.get("model") or "")
        if not isinstance(raw, dict) or model == _SYNTHETIC:
            return
        usage = _usage(raw)
        known = self.calls.get(key)
        if known is None:
            self.calls[key] = [model, str(record.get("timestamp") or ""), usage]
        else:
            known[2] = Usage(*map(max, known[2], usage))

    def chain(self) -> Chain:
        calls = [Call(m, ts, u) for m, ts, u in self.calls.values()]
        session = self.session or self.path.stem
        return Chain(self.path, session, self.project, self.cwd, self.agent, calls,
                     self.compactions, self.tools, max(self.first_prompt, 0), self.fixed,
                     self.problems)


def _prompt_tokens(record: dict[str, Any]) -> int:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return estimate_tokens(content)
    if isinstance(content, list):
        return sum(estimate_tokens(str(b.get("text") or "")) for b in content
                   if isinstance(b, dict) and b.get("type") == "text")
    return 0


_PARTS = {"skill_listing": "skills", "agent_listing_delta": "agent listing",
          "deferred_tools_delta": "deferred tool names", "hook_additional_context": "hook context",
          "environment": "environment", "date": "environment", "model": "environment"}


def _fixed_part(record: dict[str, Any], fixed: dict[str, int]) -> None:
    """What a 2.1.3x transcript says the first call carried besides the conversation."""
    attachment = record.get("attachment")
    if not isinstance(attachment, dict):
        return
    kind = str(attachment.get("type") or "")
    if kind == "prompt_snapshot":
        parts = attachment.get("systemPrompt") or []
        fixed["system prompt"] = fixed.get("system prompt", 0) + sum(
            estimate_tokens(p) if isinstance(p, str) else 0 for p in parts)
        return
    name = _PARTS.get(kind)
    if name is None:
        return
    rendered = record.get("rendered") or []
    text = "".join(str(r.get("content") or "") for r in rendered if isinstance(r, dict))
    fixed[name] = fixed.get(name, 0) + estimate_tokens(text or json.dumps(attachment))


def read_chain(path: Path, project: str, seen: set[int] | None = None) -> Chain:
    """Read one transcript file; never raises on its content (unreadable: an empty chain).
    `seen` carries the calls of the files read before (see `_Reader._copied`)."""
    reader = _Reader(path, project, set() if seen is None else seen)
    try:
        with open(path, "rb") as fh:
            previous = fh.readline()
            while previous:
                current = fh.readline()
                reader.line(previous, last=not current)
                previous = current
    except OSError:
        reader.problems["unreadable"] += 1
    return reader.chain()


def read_all(root: Path, project: Path | None = None, since_epoch: float | None = None,
             progress: Callable[[int, int], None] | None = None) -> Iterator[Chain]:
    """Every chain under `root`, one file in memory at a time (and one hash per call);
    `progress(done, total)` after each file (the files are listed first to know the total)."""
    seen: set[int] = set()
    files = list(discover(root, project, since_epoch))
    for done, (key, path) in enumerate(files, start=1):
        chain = read_chain(path, key, seen)
        if progress is not None:
            progress(done, len(files))
        yield chain
