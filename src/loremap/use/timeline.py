"""What the memory recorded, superseded and forgot, day by day (the dashboard's timeline).

Read from the notes themselves: `recorded_at` is the day a note was recorded; a superseded
note's `valid_to` (else the day its successor was recorded) the day it was superseded. A
forgotten (archived) note records no date of its own, so its day is the day its file was last
written, marked `approximate` (a clone or a checkout moves it too); the audit chain, once it
lands, will give the exact one.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, NamedTuple

from loremap.model import Status
from loremap.use.fresh import Freshness, refresh

if TYPE_CHECKING:
    from loremap.app import App
    from loremap.model import IndexedNote
    from loremap.model.search import NodeRow

EVENTS = 1000  # events returned at most, newest first (the total is exact)


class Event(NamedTuple):
    day: str  # YYYY-MM-DD
    what: str  # recorded, superseded, forgotten
    id: str
    type: str
    title: str
    by: str | None = None  # the note that superseded it
    approximate: bool = False  # the day is the file's time, not a date the note records


class Timeline(NamedTuple):
    events: list[Event]  # newest day first
    total: int
    warnings: list[str]

    def days(self) -> list[tuple[str, list[Event]]]:
        """The events grouped by day, newest day first."""
        out: dict[str, list[Event]] = {}
        for event in self.events:
            out.setdefault(event.day, []).append(event)
        return list(out.items())


def timeline(app: App, freshness: Freshness, limit: int = EVENTS) -> Timeline:
    """Every recording, supersession and forgetting of the project's notes, newest first."""
    warnings = refresh(app, freshness)
    listed = app.list_notes()
    rows = app.store.nodes([n.id for n in listed if n.status == Status.SUPERSEDED.value])
    recorded = {n.id: (n.recorded_at or "")[:10] for n in listed}
    events = []
    for note in listed:
        if note.recorded_at:
            events.append(Event(note.recorded_at[:10], "recorded", note.id, note.type,
                                note.title))
        if note.status == Status.SUPERSEDED.value:
            events += _superseded(note, rows.get(note.id), recorded)
        elif note.status == Status.ARCHIVED.value:
            day = _written(app, note.id)
            if day:
                events.append(Event(day, "forgotten", note.id, note.type, note.title,
                                    approximate=True))
    order = {"recorded": 0, "superseded": 1, "forgotten": 2}
    events.sort(key=lambda e: (order[e.what], e.id))
    events.sort(key=lambda e: e.day, reverse=True)  # stable: a day keeps the order above
    return Timeline(events[:max(0, limit)], len(events), warnings)


def _written(app: App, note_id: str) -> str:
    """The day (UTC) the note's file was last written, "" when it cannot be read (the index's
    own stamp is 0 for a file written in the last two seconds: `Memory.reconcile`)."""
    from loremap.errors import LoremapError

    try:
        stamp = app.memory.vault_of(note_id).path_for(note_id).lstat().st_mtime
    except (OSError, LoremapError):
        return ""
    return dt.datetime.fromtimestamp(stamp, dt.UTC).date().isoformat()


def _superseded(note: IndexedNote, row: NodeRow | None, recorded: dict[str, str]
                ) -> list[Event]:
    by = row.superseded_by if row is not None else None
    day = (row.valid_to if row is not None and row.valid_to else "") or recorded.get(by or "", "")
    if not day:
        return []
    return [Event(day[:10], "superseded", note.id, note.type, note.title, by)]
