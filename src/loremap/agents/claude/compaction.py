"""`loremap compaction set|show|--undo`: early compaction, through Claude Code's own setting.

A long session pays for its whole context on every call; compacting earlier (and resuming from
a handoff) is what the X-ray's replay prices. `set` writes `autoCompactWindow` (what
`/autocompact` writes) in the user's settings or the project's local settings, keeping a backup
of the file and, in loremap's state folder, the value it replaced; `--undo` puts that value
back, but only while the setting still holds what loremap wrote (a value the user changed
since is theirs).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loremap import jsonc
from loremap.agents.claude.install import Change
from loremap.agents.claude.settings import (
    ENV_WINDOW,
    KEY,
    parse_window,
    read_settings,
    user_settings,
)
from loremap.agents.files import read_text_or_none, write_with_backup
from loremap.config import UserPaths
from loremap.errors import InvalidInput, NotFound

_ABSENT = "(not set)"


def settings_file(scope: str, root: Path | None, environ: Mapping[str, str]) -> Path:
    if scope == "user":
        return user_settings(environ)
    if root is None:
        raise NotFound("--project needs a repository: run it inside one (or use --user)")
    return root / ".claude" / "settings.local.json"


def _record_file(environ: Mapping[str, str]) -> Path:
    return UserPaths.from_env(environ).state / "claude-compaction.json"


def _records(environ: Mapping[str, str]) -> dict[str, Any]:
    try:
        data = json.loads(_record_file(environ).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_records(records: dict[str, Any], environ: Mapping[str, str]) -> None:
    path = _record_file(environ)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(records, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)


def plan_set(value: str, path: Path) -> tuple[Change, object]:
    """The change that sets the window to `value`, and the value it replaces."""
    tokens = parse_window(value)
    new_value: object = "auto" if tokens is None else tokens
    old = read_text_or_none(path)
    previous = read_settings(path).get(KEY, _ABSENT)
    new = jsonc.set_value(old or "{}\n", [KEY], new_value, str(path))
    return Change(path, old, new), previous


def read_value(change: Change) -> object:
    """The window `change` writes."""
    assert change.new is not None
    return jsonc.loads(change.new, str(change.path)).get(KEY)


def remember_previous(path: Path, previous: object, new_value: object,
                      environ: Mapping[str, str]) -> None:
    """Keep what `set` replaced, for `--undo`: the first value replaced, across repeated sets."""
    records = _records(environ)
    record = records.get(str(path))
    kept = record["previous"] if isinstance(record, dict) and "previous" in record else previous
    records[str(path)] = {"previous": kept, "set": new_value}
    _save_records(records, environ)


def plan_undo(path: Path, environ: Mapping[str, str]) -> Change:
    """The change that restores the value `set` replaced; `InvalidInput` when there is none or
    the setting changed since."""
    record = _records(environ).get(str(path))
    if not isinstance(record, dict):
        raise InvalidInput(f"loremap has not set {KEY} in {path}: nothing to undo")
    old = read_text_or_none(path) or "{}\n"
    current = read_settings(path).get(KEY, _ABSENT)
    if current != record.get("set"):
        raise InvalidInput(f"{KEY} in {path} is now {current!r}, not the {record.get('set')!r} "
                           "loremap set: it was changed since, and is left alone")
    previous = record.get("previous", _ABSENT)
    new = (jsonc.remove(old, [KEY], str(path)) if previous == _ABSENT
           else jsonc.set_value(old, [KEY], previous, str(path)))
    return Change(path, old, new)


def forget_record(path: Path, environ: Mapping[str, str]) -> None:
    records = _records(environ)
    records.pop(str(path), None)
    _save_records(records, environ)


def write(change: Change) -> Path | None:
    assert change.new is not None
    return write_with_backup(change.path, change.new)


def describe(root: Path | None, environ: Mapping[str, str]) -> dict[str, Any]:
    """The window in force, where it comes from, the compaction point, and what undo would do."""
    from loremap.agents.claude.settings import current_window

    window = current_window(root, environ)
    records = _records(environ)
    mine = {p: r for p, r in records.items() if isinstance(r, dict)}
    return {"window": window.tokens, "source": window.source, "compact_at": window.compact_at,
            "env_override": environ.get(ENV_WINDOW) or None,
            "set_by_loremap": [{"file": p, "set": r.get("set"), "previous": r.get("previous")}
                               for p, r in sorted(mine.items())]}
