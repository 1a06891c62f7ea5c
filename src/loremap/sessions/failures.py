"""The failures of the agents' tool calls in this clone: one line each, for the hooks and
`loremap errors`.

`.loremap/cache/errors.jsonl` (ignored by git: it is this machine's history, not the project's
lore) holds, per failure, when, the error's signature (`text/signature.py`), the tool, and for a
shell command the command (credentials redacted, cut to `MAX_COMMAND` characters). The hook of
a failed tool call appends to it; what fixed an error is lore, and lives in an `error` note.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

ERRORS_LOG = "cache/errors.jsonl"  # under .loremap/ (ignored by git)
MAX_LOG_BYTES = 1_000_000  # past this the older half of the log is dropped
MAX_COMMAND = 300  # characters of a command kept in the log


def record(loremap_dir: Path, key: str, tool: str, command: str) -> int:
    """Append one failure to the log; how many times `key` is in it now (this one included).
    The command is kept redacted and cut; past `MAX_LOG_BYTES` the older half is dropped."""
    from loremap.errors import UserError
    from loremap.vault import fs

    if command:
        from loremap.vault.secrets import redacted

        command = redacted(command)[:MAX_COMMAND]
    line = json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "signature": key, "tool": tool, "command": command},
                      ensure_ascii=False) + "\n"
    try:
        fs.append_capped(loremap_dir / ERRORS_LOG, line.encode("utf-8"), loremap_dir.parent,
                         MAX_LOG_BYTES)
        data = fs.read_confined(loremap_dir / ERRORS_LOG, loremap_dir.parent)
    except (OSError, UserError):
        return 1  # not logged: the lookup goes on
    # Counted in the bytes, not parsed line by line (up to MAX_LOG_BYTES on a failed tool
    # call): the key as json.dumps wrote it, between the two keys around it, stands nowhere
    # else (a quote inside a value is escaped).
    return max(1, data.count(b'"signature": ' + json.dumps(key, ensure_ascii=False)
                             .encode("utf-8") + b', "tool": '))


def read_log(loremap_dir: Path) -> list[dict[str, str]]:
    """The failures logged in this clone, oldest first (unreadable lines skipped)."""
    from loremap.errors import UnsafePath
    from loremap.vault import fs

    try:
        data = fs.read_confined(loremap_dir / ERRORS_LOG, loremap_dir.parent)
    except (OSError, UnsafePath):
        return []
    return _entries(data)


def _entries(data: bytes) -> list[dict[str, str]]:
    """The log's readable lines: objects with a signature, their values as text."""
    out = []
    for raw in data.splitlines():
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("signature"), str):
            out.append({k: str(v) for k, v in entry.items()})
    return out
