"""`loremap errors`: the tool-call failures this clone's hooks logged, by signature, with the
error notes that record them and their remedies."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from loremap.store.rows import ErrorRow
from loremap.use.fresh import Freshness, refresh

if TYPE_CHECKING:
    from loremap.app import App


class ErrorSeen(NamedTuple):
    signature: str
    times: int
    first: str  # UTC times, ISO 8601
    last: str
    tool: str  # of the last failure
    command: str  # the last failing shell command ("" for another tool)
    notes: list[ErrorRow]  # the active error notes recording the signature


class Errors(NamedTuple):
    seen: list[ErrorSeen]  # the most frequent first
    warnings: list[str]


def errors(app: App, freshness: Freshness) -> Errors:
    from loremap.sessions.failures import read_log

    warnings = refresh(app, freshness)
    groups: dict[str, list[dict[str, str]]] = {}
    for entry in read_log(app.loremap_dir) if app.loremap_dir is not None else []:
        groups.setdefault(entry["signature"], []).append(entry)
    seen = []
    for key, entries in groups.items():
        last = entries[-1]
        seen.append(ErrorSeen(key, len(entries), entries[0].get("at", ""), last.get("at", ""),
                              last.get("tool", ""), last.get("command", ""),
                              app.store.error_notes(key)))
    seen.sort(key=lambda e: (-e.times, e.signature))
    return Errors(seen, warnings)
