"""Claude Code's settings as loremap reads them: where the files are, and when a session
compacts.

Claude Code reads `autoCompactWindow` (100k-1M tokens, or "auto" for the model's window) from
its settings files, local over project over user, and `CLAUDE_CODE_AUTO_COMPACT_WINDOW` beats
them all. It compacts about 33k tokens before that window: 20k are kept for the answer and
13k more as a buffer (observed with 2.1.328: a 100k window compacted above ~67k).
`CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` can only bring that point earlier. The meter hook reads this
on every tool call, so it stays on the standard library.

Claude Code reads its settings as strict JSON: a file with a comment or a trailing comma is
ignored whole, without a word (seen with 2.1.328). So loremap reads them strictly too, and
refuses to edit such a file, saying why, rather than add hooks that would never run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from loremap.config import CLAUDE_COMPACT_MARGIN as COMPACT_MARGIN
from loremap.config import CLAUDE_MIN_WINDOW as MIN_WINDOW
from loremap.errors import InvalidInput

DEFAULT_WINDOW = 200_000
MAX_WINDOW = 1_000_000
KEY = "autoCompactWindow"
ENV_WINDOW = "CLAUDE_CODE_AUTO_COMPACT_WINDOW"
ENV_PCT = "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"


def config_dir(environ: Mapping[str, str]) -> Path:
    """Claude Code's per-user folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    configured = environ.get("CLAUDE_CONFIG_DIR", "")
    if configured:
        return Path(configured).expanduser()
    return Path(environ.get("HOME") or Path.home()).expanduser() / ".claude"


def user_settings(environ: Mapping[str, str]) -> Path:
    return config_dir(environ) / "settings.json"


def user_state(environ: Mapping[str, str]) -> Path:
    """`~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`): where user MCP servers live."""
    configured = environ.get("CLAUDE_CONFIG_DIR", "")
    if configured:
        return Path(configured).expanduser() / ".claude.json"
    return Path(environ.get("HOME") or Path.home()).expanduser() / ".claude.json"


def settings_files(root: Path | None, environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    """(label, path) of the settings files Claude Code reads, highest precedence first."""
    files = []
    if root is not None:
        files += [(".claude/settings.local.json", root / ".claude" / "settings.local.json"),
                  (".claude/settings.json", root / ".claude" / "settings.json")]
    files.append(("~/.claude/settings.json", user_settings(environ)))
    return files


def parse_settings(text: str, path: Path) -> dict[str, Any]:
    """A Claude Code JSON file's object ({} for an empty file); `InvalidInput` naming the file
    and the problem when Claude Code could not read it either."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        from loremap.jsonc import loads

        loads(text, str(path))  # raises for a syntax error, naming line and column
        raise InvalidInput(f"{path} has comments or trailing commas, and Claude Code ignores "
                           f"such a file whole ({exc}); remove them first. Nothing was "
                           "changed") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: expected a JSON object, found {type(data).__name__}; "
                           "nothing was changed")
    return data


def read_settings(path: Path) -> dict[str, Any]:
    """The settings object in `path` ({} when there is no file); see `parse_settings`."""
    from loremap.agents.files import read_text_or_none

    text = read_text_or_none(path)
    return {} if text is None else parse_settings(text, path)


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kKmM]?)")


def parse_window(text: str) -> int | None:
    """A window as Claude Code accepts it: `auto` (None), 150000, `150k`, `1M`, or a bare
    100-1000 meaning thousands; `InvalidInput` for anything else or out of 100k-1M."""
    value = text.strip()
    if value.lower() == "auto":
        return None
    match = _SIZE.fullmatch(value.replace("_", "").replace(",", ""))
    if match is None:
        raise InvalidInput(f"{text!r} is not a window: write tokens (150000, 150k, 1M) or auto")
    number, unit = float(match.group(1)), match.group(2).lower()
    tokens = int(number * {"k": 1_000, "m": 1_000_000}.get(unit, 1))
    if not unit and 100 <= tokens <= 1000:
        tokens *= 1000
    if not MIN_WINDOW <= tokens <= MAX_WINDOW:
        raise InvalidInput(f"{text!r}: Claude Code takes a window of 100k to 1M tokens "
                           f"(it compacts ~{COMPACT_MARGIN // 1000}k before it)")
    return tokens


class Window(NamedTuple):
    tokens: int         # the window in force
    source: str         # where it comes from: an environment variable, a file, or "default"
    compact_at: int     # the context size at which a session compacts (an estimate)


def _window_value(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return min(max(value, MIN_WINDOW), MAX_WINDOW)
    return None  # "auto" or something Claude Code would not take either


def current_window(root: Path | None, environ: Mapping[str, str]) -> Window:
    """The compaction window a Claude Code session in `root` runs with, and where it is set.

    Unreadable settings files are skipped here (the meter must not fail on them); the
    commands that edit them report the problem instead.
    """
    tokens, source = DEFAULT_WINDOW, "default (the model's window)"
    raw = environ.get(ENV_WINDOW, "").strip()
    if raw.isdigit():
        tokens, source = min(max(int(raw), MIN_WINDOW), MAX_WINDOW), ENV_WINDOW
    else:
        for label, path in settings_files(root, environ):
            try:
                value = _window_value(read_settings(path).get(KEY))
            except (InvalidInput, OSError):
                continue
            if value is not None:
                tokens, source = value, label
                break
    return Window(tokens, source, compact_point(tokens, environ))


def compact_point(window: int, environ: Mapping[str, str]) -> int:
    """Where a session with this window compacts (see the module's docstring)."""
    point = window - COMPACT_MARGIN
    try:
        pct = float(environ.get(ENV_PCT, "") or 0)
    except ValueError:
        pct = 0
    if 0 < pct <= 100:
        point = min(point, int(window * pct / 100))
    return point
