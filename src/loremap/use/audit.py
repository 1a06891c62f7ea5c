"""`loremap audit log` and `loremap audit verify`: what a chain recorded, and whether it is whole.

The chain read is the project's (the shared database's on a shared index) or, with `personal`
or outside a project, the personal vault's. Reading it changes nothing and needs no fresh
index: the chain is not derived from the notes.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, NamedTuple

from loremap.audit.chain import Record, Verdict, verify
from loremap.errors import InvalidInput
from loremap.model import check_id

if TYPE_CHECKING:
    from loremap.app import App
    from loremap.store import AuditLog


class Logged(NamedTuple):
    scope: str  # project | personal
    location: str
    records: list[Record]


class Checked(NamedTuple):
    scope: str
    location: str
    verdict: Verdict


def _chain(app: App, personal: bool) -> tuple[str, AuditLog]:
    memory = app.memory
    vault = memory.personal if personal or memory.project is None else memory.project
    log = memory.audit_log(vault)
    assert log is not None  # App always wires the chains
    return vault.scope, log


def log(app: App, note: str | None = None, since: str | None = None,
        personal: bool = False) -> Logged:
    """The records of the chain, oldest first: only those of `note`, or from the day (or
    time, ISO 8601 UTC) `since` on, when given."""
    if note is not None:
        note = check_id(note.strip())
    if since is not None:
        try:
            dt.datetime.fromisoformat(since)
        except ValueError:
            raise InvalidInput(f"--since {since!r} is not a date (YYYY-MM-DD)") from None
    scope, chain = _chain(app, personal)
    return Logged(scope, chain.location, list(chain.records(note, since)))


def parse_anchor(text: str) -> tuple[int, str]:
    """`SEQ:HASH` (a record's number and its whole hash, as `verify` prints the head)."""
    seq, _, digest = text.strip().partition(":")
    if not seq.isdigit() or int(seq) < 1 or len(digest) != 64 or not all(
            c in "0123456789abcdef" for c in digest):
        raise InvalidInput(f"--anchor {text!r} is not SEQ:HASH (a record's number and its "
                           "64-digit hash, as `loremap audit verify` prints the head)")
    return int(seq), digest


def check(app: App, personal: bool = False, anchor: str | None = None) -> Checked:
    """Walk the chain and name its first broken link (with `anchor`, also whether the chain
    still holds the record it names)."""
    anchored = parse_anchor(anchor) if anchor is not None else None
    scope, chain = _chain(app, personal)
    return Checked(scope, chain.location, verify(chain.records(), anchored))


def acted_by(record: Record) -> str:
    """Who made a record's change, in words: `agent claude-code session 42 ana@laptop`."""
    parts = [record.actor, record.client, f"session {record.session}" if record.session else "",
             f"token {record.token}" if record.token else "", record.who]
    return " ".join(p for p in parts if p)


def payload(record: Record) -> tuple[str, str]:
    """A record's title and detail ("" when it has none, or they were erased)."""
    if record.payload is None:
        return "", ""
    kept = json.loads(record.payload)
    return str(kept.get("title", "")), str(kept.get("detail", ""))
