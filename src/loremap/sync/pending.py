"""What this project's vault holds that its shared database lacks, for a command to point at.

A project with notes that is pointed at a shared database (`LOREMAP_DATABASE_URL`) reads the
database's notes, which start empty: `list` and `search` find nothing until `loremap sync push`.
`unpushed` counts those note files cheaply (one folder listing and one query of ids, no file
read) so a command can say so instead of a bare "no notes".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from loremap.errors import InvalidInput
from loremap.model import check_id

if TYPE_CHECKING:
    from loremap.memory.service import Memory


class Unpushed(NamedTuple):
    """Note files here whose id the shared database has no note for."""

    project: str  # this side's project key in the database
    location: str  # the database, without its password
    ids: tuple[str, ...]

    def hint(self) -> str:
        """One line for a person: how many, under which key, and the command that sends them
        ("" when there are none)."""
        if not self.ids:
            return ""
        files = "1 note file here is" if len(self.ids) == 1 else \
            f"{len(self.ids)} note files here are"
        return (f"{files} not in the shared database yet (project key '{self.project}'): "
                "`loremap sync push` sends them")


def unpushed(memory: Memory) -> Unpushed | None:
    """On a shared database, the project's note files it has no note for (ids sorted); None on
    this vault's own index (which reconciles with the files itself) or outside a project."""
    if not memory.store.shared or memory.project is None:
        return None
    from loremap.store.postgres.store import PostgresStore

    store = memory.store
    assert isinstance(store, PostgresStore)
    known = set(store.iter_note_ids())
    ids = []
    for file in memory.project.scan():
        try:
            check_id(file.id)
        except InvalidInput:
            continue  # not a note's name; `sync` warns about it
        if file.id not in known:
            ids.append(file.id)
    return Unpushed(store.project, store.location, tuple(sorted(ids)))
