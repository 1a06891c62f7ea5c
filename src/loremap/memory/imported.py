"""A note another tool held, ready to land in a vault (`loremap import`, `imports/run.py`).

The import path decides every id, link and supersession between the items of a source before
anything is locked; what reaches `Memory.import_notes` is an `Arrival` per note: a `Draft`
(the fields `remember` checks and writes: type, title, body, files, links, tags, an error's
keys, already checked and, for a secret, redacted) and what only an import gives a note
(its id, its status in the source, aliases, its times and commit, a procedure's track record,
where it came from and the digest of what was read). `imported_note` builds the note from
them with the same builder as a written one (`Memory._build`).
"""

from __future__ import annotations

from typing import NamedTuple

from loremap.memory.drafts import Draft
from loremap.model import Note, Source, Status


class Arrival(NamedTuple):
    """One imported note, as it will be written under `id`."""

    draft: Draft
    id: str
    tool: str
    origin: str
    digest: str  # of everything below and the draft: equal digest, nothing to write
    status: Status = Status.ACTIVE
    superseded_by: str | None = None
    aliases: tuple[str, ...] = ()
    recorded_at: str | None = None  # when the source recorded it (None: now)
    commit: str | None = None  # the source's commit (None: HEAD now)
    successes: int = 0
    failures: int = 0


class Gone(NamedTuple):
    """A note imported from an origin the source has deleted: archived by the import."""

    id: str
    tool: str
    origin: str


def imported_note(built: Note, arrival: Arrival, before: Note | None, today: str) -> Note:
    """`built` (the draft's note under the arrival's id) with what the source says of it;
    times the source does not give are kept from the note it replaces (`before`), so a
    re-import of a changed source leaves the unchanged ones as they were."""
    recorded = arrival.recorded_at or (before.recorded_at if before else None) \
        or built.recorded_at
    valid_to = None
    if arrival.status is Status.SUPERSEDED:
        valid_to = (before.valid_to if before is not None and before.valid_to else today)
    return built._replace(
        status=arrival.status, superseded_by=arrival.superseded_by, valid_to=valid_to,
        aliases=tuple(a for a in dict.fromkeys(arrival.aliases) if a != arrival.id),
        recorded_at=recorded, valid_from=(recorded or today)[:10],
        commit=arrival.commit or (before.commit if before else None) or built.commit,
        successes=arrival.successes, failures=arrival.failures, source=Source.IMPORT,
        origin_tool=arrival.tool, origin=arrival.origin, origin_digest=arrival.digest)
