"""Audit records, how they are chained, and how a chain is verified (no I/O here).

A record's hash is SHA-256 over its fields as one canonical JSON array (`FORMAT` first), its
previous record's hash among them, so changing, removing or inserting a record breaks the link
after it. Its title and detail (`payload`) are not hashed as text: the record holds
`payload_hash`, SHA-256 of a random salt and the payload, and the payload and salt are stored
beside it. Erasing a note (`forget --erase`) deletes the payloads of its
records, salt included, and the chain still verifies: what is hashed (ids, content hashes,
times, actors, the payload's salted hash) stays, and without the salt the hash left behind
cannot be used to confirm a guess of the erased text. A payload may be missing only where a
later `erase` record of the same note says why (`verify`), and the stores refuse to delete it
otherwise.

`before` and `after` are SHA-256 of the note file's bytes before and after the change (what
`vault.layout.content_hash` gives and the shared database's `note_docs.hash` holds; "" when
there is no file).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable
from typing import NamedTuple

from loremap.audit.actor import Actor, current_actor

FORMAT = "loremap-audit-1"  # the first element of every hashed array: a new layout, a new name
ERASE = "erase"  # the operation whose record allows the payloads of a note's records to go
SHORT = 12  # hex digits of a hash shown in messages


class Entry(NamedTuple):
    """One change, as the path that makes it describes it."""

    op: str  # remember | supersede | archive | purge | quarantine | outcome | merge | push | pull
    note: str
    before: str  # SHA-256 of the note file's bytes before ("": none)
    after: str
    title: str = ""  # erasable, with `detail`: never hashed as text
    detail: str = ""


class Stamp(NamedTuple):
    """When (UTC, to the microsecond) and by whom a batch of entries is recorded."""

    at: str
    actor: Actor


class Record(NamedTuple):
    """A record of the chain, as stored. The fields up to `prev` are hashed into `hash`."""

    seq: int
    at: str
    actor: str
    session: str
    client: str
    token: str
    who: str  # user@host
    project: str
    op: str
    note: str
    before: str
    after: str
    payload_hash: str
    prev: str  # the previous record's hash ("" for the first)
    hash: str
    payload: str | None = None  # canonical JSON of title and detail; None: none, or erased
    salt: str | None = None


COLUMNS = Record._fields[:15]  # the stored record, payload apart
HASHED = Record._fields[:14]


class Break(NamedTuple):
    """The first broken link of a chain: the record, what kind of break, and what was expected
    against what was found there."""

    seq: int
    kind: str  # missing | edited | forged | payload | anchor
    expected: str
    found: str
    message: str


class Verdict(NamedTuple):
    records: int
    head_seq: int  # 0: no records
    head_hash: str
    erased: int  # payloads deleted by an erasure (allowed)
    broken: Break | None

    @property
    def ok(self) -> bool:
        return self.broken is None


def stamp(now: dt.datetime) -> Stamp:
    """Now, by the actor of this call (`acting_as`)."""
    return Stamp(now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), current_actor())


def digest(fields: Iterable[object]) -> str:
    """The hash of a record's hashed fields."""
    import hashlib  # when records are written or read: not on the path of every hook

    text = json.dumps([FORMAT, *fields], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def payload_digest(salt: str, payload: str) -> str:
    import hashlib

    return hashlib.sha256(bytes.fromhex(salt) + payload.encode("utf-8")).hexdigest()


def _payload(entry: Entry) -> str | None:
    kept = {key: value for key, value in (("title", entry.title), ("detail", entry.detail))
            if value}
    return json.dumps(kept, ensure_ascii=False, sort_keys=True) if kept else None


def seal(entries: Iterable[Entry], head: tuple[int, str] | None, when: Stamp, who: str,
         project: str) -> list[Record]:
    """The records of `entries`, chained after `head` (the last record's number and hash;
    None for an empty chain)."""
    seq, prev = head or (0, "")
    out = []
    actor = when.actor
    for entry in entries:
        seq += 1
        payload = _payload(entry)
        salt = os.urandom(16).hex() if payload is not None else None
        hashed = (seq, when.at, actor.kind, actor.session, actor.client, actor.token, who,
                  project, entry.op, entry.note, entry.before, entry.after,
                  "" if payload is None or salt is None else payload_digest(salt, payload), prev)
        prev = digest(hashed)
        out.append(Record(*hashed, prev, payload, salt))
    return out


def _link(record: Record, expected: int, prev: str) -> Break | None:
    """What is wrong with `record` as the one after (`expected` - 1, `prev`), if anything."""
    seq = record.seq
    if seq != expected:
        return Break(expected, "missing", str(expected), str(seq),
                     f"record {expected} is missing: the chain goes from record {expected - 1} "
                     f"to record {seq} (deleted)" if expected > 1 else
                     f"records 1 to {seq - 1} are missing: the chain starts at record {seq} "
                     "(deleted)")
    computed = digest(record[:len(HASHED)])
    if computed != record.hash:
        return Break(seq, "edited", computed, record.hash,
                     f"record {seq} was changed after it was written: its fields hash to "
                     f"{computed[:SHORT]}, it says {record.hash[:SHORT]}")
    if record.prev != prev:
        before = f"record {seq - 1}'s hash {prev[:SHORT]}" if prev else "none (the first)"
        return Break(seq, "forged", prev, record.prev,
                     f"record {seq} does not follow record {seq - 1}: its previous hash is "
                     f"{record.prev[:SHORT] or 'empty'}, expected {before} (a record inserted "
                     f"with a forged previous hash, or record {seq - 1} rewritten)")
    return None


def _payload_break(record: Record) -> Break | None:
    if record.payload is None:
        return None  # none, or erased: told apart by `verify`
    found = "" if record.salt is None else payload_digest(record.salt, record.payload)
    if found == record.payload_hash:
        return None
    return Break(record.seq, "payload", record.payload_hash, found,
                 f"record {record.seq}'s title or detail was changed after it was written")


def verify(records: Iterable[Record], anchor: tuple[int, str] | None = None) -> Verdict:
    """Walk a chain (oldest first) and name its first broken link; with `anchor` (a record's
    number and hash noted earlier), also that the chain still holds that record."""
    count, erased = 0, 0
    prev, last = "", 0
    found: list[Break] = []
    gone: dict[str, list[int]] = {}  # note -> records whose payload is missing, not yet erased
    anchored = ""
    for record in records:
        count += 1
        broken = _link(record, last + 1, prev) or _payload_break(record)
        if broken is not None and not found:
            found.append(broken)
        if record.payload is None and record.payload_hash:
            gone.setdefault(record.note, []).append(record.seq)
        if record.op == ERASE:
            erased += len(gone.pop(record.note, []))
        if anchor is not None and record.seq == anchor[0]:
            anchored = record.hash
        prev, last = record.hash, record.seq
    for note, seqs in gone.items():
        found.append(Break(seqs[0], "payload", "an erase record", "none",
                           f"record {seqs[0]}'s title and detail are gone, and note {note} was "
                           "never erased"))
    if anchor is not None and anchored != anchor[1]:
        found.append(_anchor_break(anchor, anchored, last))
    first = min(found, key=lambda b: b.seq) if found else None
    return Verdict(count, last, prev, erased, first)


def _anchor_break(anchor: tuple[int, str], anchored: str, last: int) -> Break:
    seq, wanted = anchor
    if not anchored:
        return Break(seq, "anchor", wanted, "",
                     f"the chain ends at record {last}, before the anchored record {seq} "
                     "(records deleted from its end)" if seq > last else
                     f"the chain has no record {seq}, which the anchor names (deleted)")
    return Break(seq, "anchor", wanted, anchored,
                 f"record {seq} is not the one anchored: its hash is {anchored[:SHORT]}, the "
                 f"anchor says {wanted[:SHORT]} (the chain was rewritten)")
