"""The fixed context (what every call starts with), tool use, and the recommendations.

Every call re-reads the fixed context — system prompt, tool and MCP definitions, CLAUDE.md and
memory files — so each 1,000 tokens of it cost about 100 input-token equivalents per call
(a cache read) plus a cache write at every session start and compaction. Transcripts do not
record it directly: it is estimated from each session's first call (its prompt minus the
user's message); 2.1.3x transcripts itemise part of it (system prompt, skills, agent listing,
hook context), and CLAUDE.md files are measured on disk.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from loremap.config import CLAUDE_COMPACT_MARGIN, CLAUDE_MIN_WINDOW
from loremap.text import estimate_tokens
from loremap.xray.formats import count, percent
from loremap.xray.records import Cost, FixedContext, Recommendation, Replay, ServerRow, ToolRow
from loremap.xray.transcripts import home_dir

MEMORY_FILES = ("CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md")
LOREMAP_SERVER = "loremap"  # the name loremap's installers and its plugin give its server


class SessionLike(Protocol):
    @property
    def fixed(self) -> int: ...
    @property
    def parts(self) -> Mapping[str, int]: ...
    @property
    def cwd(self) -> str: ...
    @property
    def calls(self) -> int: ...


class Server(NamedTuple):
    """An MCP server Claude Code would start in a project."""

    source: str  # the file that configures it
    loremap: bool  # loremap's own server (by its name, or a command that runs `loremap serve`)


def is_loremap_name(name: str) -> bool:
    """Whether a server name is loremap's: `loremap` is one of its words, so the plugin's
    server (`plugin:loremap:loremap`, whose tools are `mcp__plugin_loremap_loremap__*`) and a
    renamed copy (`loremap-dev`) are too. Keeping a server is the safe side of a mistake."""
    return LOREMAP_SERVER in re.split(r"[^a-z0-9]+", name.lower())


def runs_loremap_serve(entry: object) -> bool:
    """Whether a server entry starts `loremap serve`: the command is loremap (any path), or
    loremap is an argument before `serve` (`uvx loremap serve`, `python -m loremap serve`)."""
    if not isinstance(entry, dict):
        return False
    args = entry.get("args")
    words = [str(entry.get("command", "")), *(map(str, args) if isinstance(args, list) else ())]
    for at, word in enumerate(words):
        name = re.split(r"[=@\[]", Path(word).name.lower().removesuffix(".exe"))[0]
        if name == LOREMAP_SERVER and "serve" in words[at + 1:]:
            return True
    return False


def claude_md_tokens(cwd: Path, home: Path) -> dict[str, int]:
    """Tokens of the memory files Claude Code loads for a project at `cwd`."""
    out: dict[str, int] = {}
    for path in [*(cwd / name for name in MEMORY_FILES), home / ".claude" / "CLAUDE.md"]:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        out[str(path)] = estimate_tokens(text)
    return out


def fixed_context_audit(sessions: Iterable[SessionLike]) -> FixedContext:
    """Median fixed context over sessions, its itemised parts, and CLAUDE.md on disk."""
    rows = [s for s in sessions if s.fixed > 0]
    fixed = [s.fixed for s in rows]
    parts: dict[str, list[int]] = {}
    for s in rows:
        for name, tokens in s.parts.items():
            parts.setdefault(name, []).append(tokens)
    home = home_dir()
    memory: dict[str, int] = {}
    for cwd in sorted({s.cwd for s in rows if s.cwd}):
        memory.update(claude_md_tokens(Path(cwd), home))
    median = int(statistics.median(fixed)) if fixed else 0
    itemised = {name: int(statistics.median(values)) for name, values in sorted(parts.items())}
    return FixedContext(len(rows), median, min(fixed, default=0), max(fixed, default=0),
                        itemised, memory, sum(s.calls for s in rows))


def tool_usage(tools: Counter[str]) -> tuple[tuple[ToolRow, ...], tuple[ServerRow, ...]]:
    """Calls per tool, and per MCP server (tools named `mcp__<server>__<tool>`)."""
    servers: Counter[str] = Counter()
    rows = []
    for name, calls in tools.most_common():
        server = name.split("__")[1] if name.startswith("mcp__") and name.count("__") >= 2 \
            else None
        if server:
            servers[server] += calls
        rows.append(ToolRow(name, server, calls))
    return tuple(rows), tuple(ServerRow(s, n) for s, n in servers.most_common())


def configured_servers(project: Path, home: Path) -> dict[str, Server]:
    """MCP servers Claude Code would start in `project`, by name (from `.mcp.json`, the
    project's and the user's entries in `~/.claude.json`)."""
    found: dict[str, Server] = {}
    sources: list[tuple[Path, list[str]]] = [(project / ".mcp.json", ["mcpServers"]),
                                             (home / ".claude.json", ["mcpServers"]),
                                             (home / ".claude.json",
                                              ["projects", str(project), "mcpServers"])]
    for path, keys in sources:
        try:
            node: object = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            for name, entry in node.items():
                found.setdefault(str(name), Server(str(path), is_loremap_name(str(name))
                                                   or runs_loremap_serve(entry)))
    return found


def recommendations(totals: Cost, replay: Replay, fixed: FixedContext,
                    unused: Sequence[str]) -> tuple[Recommendation, ...]:
    """What would have saved the most, in plain words, best first; `unused` are the
    never-called MCP servers `loremap xray trim` would deny."""
    equiv = totals.equiv or 1.0
    usd_per_equiv = totals.usd / equiv if totals.usd else None
    out: list[Recommendation] = []

    def add(saving: float, title: str, detail: str) -> None:
        out.append(Recommendation(title, round(saving, 1), round(saving / equiv, 4),
                                  saving * usd_per_equiv if usd_per_equiv else None, detail))

    row = replay.best_row
    if row is not None:
        add(row.saving, f"Compact at {row.threshold // 1000}k tokens",
            f"Compacting whenever the context passed {row.threshold:,} tokens and resuming "
            f"from an {replay.handoff_tokens:,}-token handoff would have cost "
            f"{percent(row.saving_share)} less ({row.compactions} compactions). "
            + _compaction_advice(row.threshold))
    per_1k = 100.0 * fixed.calls
    memory = sum(fixed.memory_files.values())
    if memory >= 1000:
        add(per_1k * memory / 2 / 1000, "Halve CLAUDE.md and the memory files",
            f"They hold about {memory:,} tokens that every call re-reads; moving the half that "
            "is rarely relevant into notes (recalled when a prompt needs them) saves that "
            "much on every call.")
    if unused:
        add(0.0, "Turn off MCP servers that were never called",
            f"Configured but never called in these sessions: {', '.join(unused)}. Their tool "
            f"definitions ride along on every call: each 1,000 tokens of them cost "
            f"{count(per_1k)} equivalents here. `loremap xray trim <project> --apply` denies "
            "them in the project's .claude/settings.local.json (undo with --undo).")
    if fixed.median:
        add(per_1k, "Every 1,000 tokens less of fixed context",
            f"Sessions start with a median of {fixed.median:,} tokens before the first "
            f"message; each 1,000 fewer saves about {count(per_1k)} equivalents over these "
            f"{fixed.calls:,} calls.")
    return tuple(sorted(out, key=lambda r: -r.saving_equiv))


def _compaction_advice(threshold: int) -> str:
    """How to get compaction at `threshold` from Claude Code, which compacts a fixed margin
    before its window and takes no window under 100k."""
    window = threshold + CLAUDE_COMPACT_MARGIN
    if window < CLAUDE_MIN_WINDOW:
        earliest = CLAUDE_MIN_WINDOW - CLAUDE_COMPACT_MARGIN
        return (f"The earliest Claude Code allows is `loremap compaction set "
                f"{CLAUDE_MIN_WINDOW}` (it compacts at ~{earliest:,}); save handoffs before "
                "compacting.")
    return (f"Set it with `loremap compaction set {window}` (Claude Code compacts ~"
            f"{CLAUDE_COMPACT_MARGIN // 1000}k before that window) and save handoffs before "
            "compacting.")
