"""What a push or a pull would move, decided from hashes alone (no I/O here).

Per note id: L is the hash of this vault's file (None: no file), B the hash of the last sync
(None: never synced, or gone on both sides since), R the database's doc (live with a hash, a
tombstone, or absent). Two facts fill in a missing base before the rules run:

- a base entry for a note the database has never heard of belongs to another life of the
  database (it was recreated): it is forgotten, and the note is new again;
- with no base, a file equal to the database's text (live, or the text a tombstone deleted) is
  taken as synced: a vault that got its notes through git is not a conflict with itself, and a
  stale copy of a deleted note is deleted by a pull instead of brought back by a push;
- with no base, a live text last written by this very writer (`user@host`: `remember` here
  writes the file and the database at once, and records no base) is this vault's own earlier
  state: a note remembered, then edited by hand before the first sync, is an update, not a
  conflict. (Two never-synced clones under one user on one host would thus see an update where
  there is a conflict; the replaced text is kept as a previous version either way.)

Push sends what changed here (L != B); pull brings what changed there (R != B). When both changed
and differ, the newer wins on both sides and the loser is kept as a previous version in the
database; an edit always beats a deletion (the edited note is kept, and the other side is told
how to bring it back).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from loremap.store.postgres.store import SharedDoc

# Operations on the database (`upload`, `tombstone`), on the files (`write`, `delete`), on both
# (`conflict`), or on the base alone (`record`).
UPLOAD, TOMBSTONE, WRITE, DELETE, CONFLICT, RECORD = (
    "upload", "tombstone", "write", "delete", "conflict", "record")
# A note erased on the database (`forget --erase`): erased here too, by a push or a pull.
ERASE = "erase"
LOCAL, DATABASE = "local", "database"
# Mass-delete guard: a sync deleting at least this many notes and more than this share of them.
GUARD_COUNT = 25
GUARD_SHARE = 0.10


class LocalNote(NamedTuple):
    """A note file of this vault: the hash of its bytes and its mtime."""

    hash: str
    mtime_ns: int


class Step(NamedTuple):
    """One thing a sync does to one note; `base` is the hash both sides hold once it is done
    (None: the note is gone from both)."""

    id: str
    op: str
    change: str  # new | updated | deleted | conflict | "" (the base alone)
    base: str | None
    winner: str = ""  # conflicts: local | database
    detail: str = ""


class Held(NamedTuple):
    """A note a sync leaves alone on purpose, and why (shown to the user)."""

    id: str
    reason: str


class Plan:
    def __init__(self, direction: str) -> None:
        self.direction = direction
        self.steps: list[Step] = []
        self.held: list[Held] = []

    def deletions(self) -> int:
        op = TOMBSTONE if self.direction == "push" else DELETE
        return sum(1 for s in self.steps if s.op == op)


def plan(direction: str, local: Mapping[str, LocalNote], base: Mapping[str, str],
         remote: Mapping[str, SharedDoc], skip: frozenset[str] = frozenset(),
         writer: str = "") -> Plan:
    """The plan of a `push` or a `pull`; ids in `skip` (unreadable files) are left alone;
    `writer` is who this machine writes to the database as."""
    out = Plan(direction)
    decide = _push if direction == "push" else _pull
    for note_id in sorted((set(local) | set(base) | set(remote)) - skip):
        here = local.get(note_id)
        doc = remote.get(note_id)
        stored = base.get(note_id)
        if doc is not None and doc.erased:
            _erased(out, note_id, here, stored)
            continue
        b = effective_base(here.hash if here else None, stored, doc, writer)
        decide(out, note_id, here, b, doc)
        if not any(s.id == note_id for s in out.steps[-1:]) and b != stored:
            out.steps.append(Step(note_id, RECORD, "", b))
    return out


def _erased(out: Plan, note_id: str, here: LocalNote | None, stored: str | None) -> None:
    """Trigger: the database's tombstone says the note was erased. Why: an erasure is of a
    leaked secret or personal data; a copy kept here, or pushed back, would undo it. Outcome:
    the file here is erased whatever its edits (its text is kept nowhere, not even as a
    version), in either direction; the base forgets the note."""
    if here is not None:
        out.steps.append(Step(note_id, ERASE, "deleted", None,
                              detail="erased on the database: erased here too"))
    elif stored is not None:
        out.steps.append(Step(note_id, RECORD, "", None))


def effective_base(lh: str | None, b: str | None, doc: SharedDoc | None, writer: str = ""
                   ) -> str | None:
    """The base as the rules read it (see the module's docstring)."""
    if doc is None:
        return None
    if b is None and lh is not None and lh == doc.hash:
        return lh
    if b is None and lh is not None and not doc.deleted and writer and doc.updated_by == writer:
        return doc.hash
    return b


def _live(doc: SharedDoc | None) -> str | None:
    return doc.hash if doc is not None and not doc.deleted else None


def _push(out: Plan, note_id: str, here: LocalNote | None, b: str | None,
          doc: SharedDoc | None) -> None:
    lh = here.hash if here else None
    rh = _live(doc)
    if lh == b:
        return  # nothing changed here (what changed there is pull's)
    if here is not None:
        if rh == lh:
            out.steps.append(Step(note_id, RECORD, "", lh))
        elif rh is None:
            back = doc is not None and b is not None
            out.steps.append(Step(note_id, UPLOAD, "new", lh, detail=(
                "brought back: it was deleted on the database" if back else "")))
        elif rh == b:
            out.steps.append(Step(note_id, UPLOAD, "updated", lh))
        else:
            assert doc is not None
            out.steps.append(_conflict(note_id, here, doc))
        return
    # deleted here since the last sync
    if rh == b:
        out.steps.append(Step(note_id, TOMBSTONE, "deleted", None))
    elif rh is None:
        out.steps.append(Step(note_id, RECORD, "", None))
    else:
        out.held.append(Held(note_id, "deleted here, edited on the database since: not deleted "
                                      "there; `loremap sync pull` brings it back"))


def _pull(out: Plan, note_id: str, here: LocalNote | None, b: str | None,
          doc: SharedDoc | None) -> None:
    lh = here.hash if here else None
    rh = _live(doc)
    if rh == b:
        if lh is None and b is not None:
            out.held.append(Held(note_id, "deleted here, not pushed yet: `loremap sync push` "
                                          "deletes it on the database"))
        return  # nothing changed there (what changed here is push's)
    if rh is not None:
        if lh == rh:
            out.steps.append(Step(note_id, RECORD, "", rh))
        elif lh == b:
            out.steps.append(Step(note_id, WRITE, "new" if lh is None else "updated", rh))
        elif here is None:
            out.steps.append(Step(note_id, WRITE, "new", rh, detail=(
                "restored: deleted here, but edited on the database since")))
        else:
            assert doc is not None
            out.steps.append(_conflict(note_id, here, doc))
        return
    # deleted on the database since the last sync
    if lh == b:
        out.steps.append(Step(note_id, DELETE, "deleted", None))
    elif here is None:
        out.steps.append(Step(note_id, RECORD, "", None))
    else:
        out.held.append(Held(note_id, "deleted on the database, edited here: kept; "
                                      "`loremap sync push` would bring it back"))


def _conflict(note_id: str, here: LocalNote, doc: SharedDoc) -> Step:
    """Both sides changed the note: the newer edit wins (a tie goes to the database)."""
    remote_ns = to_ns(doc.updated_at)
    if here.mtime_ns > remote_ns:
        return Step(note_id, CONFLICT, "conflict", here.hash, LOCAL,
                    "this vault's edit is newer and won; the database's text is kept")
    return Step(note_id, CONFLICT, "conflict", doc.hash, DATABASE,
                f"the database's text (by {doc.updated_by or 'another machine'}) is newer and "
                "won; this vault's text is kept")


def to_ns(iso: str) -> int:
    """An ISO 8601 UTC time (`...Z`) in nanoseconds since the epoch."""
    when = dt.datetime.fromisoformat(iso)
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    delta = when - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def guard(plan_: Plan, total: int) -> str | None:
    """The refusal of a sync that deletes too much (None when it may go ahead)."""
    n = plan_.deletions()
    if n < GUARD_COUNT or n <= GUARD_SHARE * total:
        return None
    where = "of this vault" if plan_.direction == "pull" else "on the database"
    return (f"refused: this {plan_.direction} would delete {n} of the {total} notes {where} "
            f"(at least {GUARD_COUNT} and more than {GUARD_SHARE:.0%}); run it again with "
            "--confirm if that is intended")
