"""What the memory recorded, superseded and forgot, day by day (the dashboard's timeline).

The audit chain (`loremap/audit/`, docs/audit.md) is the record: each of
its records of the project's chain (and of the personal chain, for the personal notes listed
here) is an event at its exact time, with who acted. The chain is this clone's own, though: it
is not committed, so a note recorded in another clone and pulled through git, or one written
before the chain existed, has no record here. Those events are read from the notes themselves,
once per note and kind the chain does not hold: `recorded_at` is the day a note was recorded; a
superseded note's `valid_to` (else the day its successor was recorded) the day it was
superseded; a forgotten (archived) note records no date of its own, so its day is the day its
file was last written, marked `approximate` (a clone or a checkout moves it too).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING, NamedTuple

from loremap.model import Status
from loremap.use.fresh import Freshness, refresh

if TYPE_CHECKING:
    from loremap.app import App
    from loremap.audit.chain import Record
    from loremap.model import IndexedNote
    from loremap.model.search import NodeRow

EVENTS = 1000  # events returned at most, newest first (the total is exact)
# The chain's operations, as the timeline says them; `push`, `pull` and `refused` change no
# note's knowledge here (a pull's new note is also a file `recorded_at` dates) and are left out.
VERBS = {"remember": "recorded", "supersede": "superseded", "archive": "forgotten",
         "purge": "purged", "erase": "erased", "quarantine": "quarantined",
         "outcome": "outcome", "merge": "merged", "import": "imported"}
ORDER = {verb: n for n, verb in enumerate(dict.fromkeys(VERBS.values()))}
_BY = re.compile(r"superseded by ([a-z0-9-]+)")


class Event(NamedTuple):
    day: str  # YYYY-MM-DD
    what: str  # recorded, superseded, forgotten, purged, erased, quarantined, outcome, merged
    id: str
    type: str
    title: str
    by: str | None = None  # the note that superseded it
    approximate: bool = False  # the day is the file's time, not a date the note records
    at: str | None = None  # the audit record's time (ISO 8601 UTC), None when not from the chain
    actor: str | None = None  # who acted, from the audit record
    seq: int | None = None  # the audit record's number in its chain


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
    """Every change the audit chain recorded, and the recordings, supersessions and
    forgettings of the notes it holds no record of, newest first."""
    warnings = refresh(app, freshness)
    listed = app.list_notes()
    notes = {n.id: n for n in listed}
    events = _audited(app, notes)
    chained = {(e.what, e.id) for e in events}
    rows = app.store.nodes([n.id for n in listed if n.status == Status.SUPERSEDED.value
                            and ("superseded", n.id) not in chained])
    recorded = {n.id: (n.recorded_at or "")[:10] for n in listed}
    for note in listed:
        if note.recorded_at and ("recorded", note.id) not in chained:
            events.append(Event(note.recorded_at[:10], "recorded", note.id, note.type,
                                note.title))
        if note.status == Status.SUPERSEDED.value and ("superseded", note.id) not in chained:
            events += _superseded(note, rows.get(note.id), recorded)
        elif note.status == Status.ARCHIVED.value and ("forgotten", note.id) not in chained:
            day = _written(app, note.id)
            if day:
                events.append(Event(day, "forgotten", note.id, note.type, note.title,
                                    approximate=True))
    events.sort(key=lambda e: (ORDER[e.what], e.id))
    events.sort(key=lambda e: (e.day, e.at or ""), reverse=True)  # stable within a time
    return Timeline(events[:max(0, limit)], len(events), warnings)


def _audited(app: App, notes: dict[str, IndexedNote]) -> list[Event]:
    """The events of the project's chain, and of the personal chain for the personal notes
    listed (its other records are other projects')."""
    from loremap.use.audit import acted_by

    memory = app.memory
    events = []
    for vault in memory.vaults:
        chain = memory.audit_log(vault)
        if chain is None:
            continue
        personal = vault is memory.personal and memory.project is not None
        for record in chain.records():
            what = VERBS.get(record.op)
            if what is None or (personal and record.note not in notes):
                continue
            events.append(_event(record, what, notes.get(record.note), acted_by(record)))
    return events


def _event(record: Record, what: str, note: IndexedNote | None, actor: str) -> Event:
    from loremap.use.audit import payload

    title, detail = payload(record)
    if record.payload is None and record.payload_hash:
        title = "(title erased)"
    by = _BY.search(detail) if what == "superseded" else None
    return Event(record.at[:10], what, record.note, note.type if note is not None else "",
                 title or (note.title if note is not None else ""),
                 by.group(1) if by else None, at=record.at, actor=actor, seq=record.seq)


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
