"""The memory's health in one answer (the dashboard's health page): the notes whose files
changed since they were written, the quarantined notes, broken links, what `loremap doctor`
finds (repairing nothing) and the index's status.

Staleness is the recall's own check (`memory/stale.py`: the file's blob hash against the one
the note recorded, then `git rev-list --count` for the commits since), run here over every
active note that recorded its files, with a checker of its own so a file changed a moment ago
is seen now.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from loremap.model import Status
from loremap.use.fresh import Freshness, refresh

if TYPE_CHECKING:
    from loremap.app import App
    from loremap.memory.doctor import Finding

MAX_LISTED = 500  # stale and quarantined notes listed at most (the counts are exact)


class StaleNote(NamedTuple):
    id: str
    type: str
    title: str
    path: str
    changes: tuple[str, ...]  # "<file> changed since this note (N commits)", as recall says


class Listed(NamedTuple):
    id: str
    type: str
    title: str
    path: str


class IndexStatus(NamedTuple):
    location: str  # the index file, or the shared database
    shared: bool
    bytes: int  # the index file's size (0 on a shared database)
    notes: dict[str, int]  # notes by status
    types: dict[str, int]  # active notes by type
    files: int  # code files in the map
    head: str | None  # the commit the code map was built at (None: never indexed)


class Health(NamedTuple):
    stale: list[StaleNote]
    stale_count: int
    quarantined: list[Listed]
    quarantined_count: int
    links: list[Finding]  # doctor's broken links
    findings: list[Finding]  # every other doctor finding
    status: IndexStatus
    warnings: list[str]


def health(app: App, freshness: Freshness, environ: Mapping[str, str]) -> Health:
    """The health of the project's memory; `environ` is the caller's (the daemon's status)."""
    from loremap.memory.doctor import diagnose
    from loremap.store.sqlite import fts5_available
    from loremap.use.calibrate import in_force
    from loremap.use.daemon import health as daemon_health

    warnings = refresh(app, freshness)
    stale = _stale(app)
    quarantined = [Listed(n.id, n.type, n.title, n.path) for n in
                   app.list_notes(statuses=[Status.QUARANTINED.value])]
    found = diagnose(app.memory, app.loremap_dir, fts5_available(), fix=False, repo=app.root)
    if app.loremap_dir is not None:
        found.append(in_force(app))
    found += daemon_health(environ)
    return Health(stale[:MAX_LISTED], len(stale), quarantined[:MAX_LISTED], len(quarantined),
                  [f for f in found if f.check == "links"],
                  [f for f in found if f.check != "links"], _index(app), warnings)


def _stale(app: App) -> list[StaleNote]:
    """The active notes whose recorded files changed since, newest first."""
    if app.root is None:
        return []
    from loremap.memory.stale import staleness

    check = staleness(app.root)
    listed = app.list_notes(statuses=[Status.ACTIVE.value])
    rows = app.store.nodes([n.id for n in listed])
    out = []
    for note in listed:
        row = rows.get(note.id)
        if row is None or not row.file_hashes:
            continue
        changes = check(row)
        if changes:
            out.append(StaleNote(note.id, note.type, note.title, note.path, tuple(changes)))
    return out


def _index(app: App) -> IndexStatus:
    notes = app.list_notes()
    size = 0
    if not app.shared:
        try:
            size = app.index_path.stat().st_size
        except OSError:
            size = 0
    return IndexStatus(str(app.store.location), app.shared, size,
                       dict(sorted(Counter(n.status for n in notes).items())),
                       dict(sorted(Counter(n.type for n in notes
                                           if n.status == Status.ACTIVE.value).items())),
                       app.store.source_file_count(), app.store.meta("code.head"))
