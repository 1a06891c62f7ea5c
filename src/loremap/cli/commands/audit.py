"""`loremap audit log|verify`: the records of the audit chain, and whether it is whole (exit 1
when it is broken)."""

from __future__ import annotations

import argparse
from typing import Any

from loremap.audit.chain import Record
from loremap.cli.context import open_app
from loremap.cli.output import count, emit_json, lines
from loremap.use.audit import Checked, Logged, acted_by, check, log, payload


def run(args: argparse.Namespace) -> int:
    with open_app(require_project=False) as app:
        if args.action == "log":
            done = log(app, args.note, args.since, args.personal)
        else:
            checked = check(app, args.personal, args.anchor)
    as_json = getattr(args, "json", False)
    if args.action == "log":
        return _log(done, as_json, args.note is not None or args.since is not None)
    return _verified(checked, as_json)


def record_json(record: Record) -> dict[str, Any]:
    title, detail = payload(record)
    erased = record.payload is None and bool(record.payload_hash)
    return {"seq": record.seq, "at": record.at, "actor": record.actor,
            "session": record.session, "client": record.client, "token": record.token,
            "who": record.who, "project": record.project, "op": record.op,
            "note": record.note, "before": record.before, "after": record.after,
            "title": None if erased else title, "detail": None if erased else detail,
            "erased": erased, "prev": record.prev, "hash": record.hash}


def _log(done: Logged, as_json: bool, filtered: bool) -> int:
    if as_json:
        emit_json({"chain": done.location, "scope": done.scope,
                   "records": [record_json(r) for r in done.records]})
        return 0
    for record in done.records:
        title, detail = payload(record)
        said = " ".join(p for p in (f'"{title}"' if title else "", detail) if p)
        if record.payload is None and record.payload_hash:
            said = "(title and detail erased)"
        lines([f"{record.seq:>5}  {record.at[:19]}Z  {record.op:<10} {record.note}  "
               f"{record.before[:8] or '-'} -> {record.after[:8] or '-'}  by {acted_by(record)}"
               + (f"  {said}" if said else "")])
    what = "matching records" if filtered else "records"
    lines([f"{count(len(done.records), 'record')} in the {done.scope} chain ({done.location})"
           if done.records else f"no {what} in the {done.scope} chain ({done.location})"])
    return 0


def _verified(done: Checked, as_json: bool) -> int:
    verdict = done.verdict
    broken = verdict.broken
    if as_json:
        emit_json({"ok": verdict.ok, "chain": done.location, "scope": done.scope,
                   "records": verdict.records,
                   "head": {"seq": verdict.head_seq, "hash": verdict.head_hash}
                   if verdict.head_seq else None,
                   "erased": verdict.erased,
                   "broken": None if broken is None else broken._asdict()})
        return 0 if verdict.ok else 1
    where = f"the {done.scope} chain ({done.location})"
    if broken is not None:
        lines([f"{where}: broken at record {broken.seq}: {broken.message}"])
        return 1
    if not verdict.records:
        lines([f"{where}: no records yet"])
        return 0
    erased = f", {verdict.erased} erased payload{'s' * (verdict.erased != 1)}" \
        if verdict.erased else ""
    lines([f"{where}: unbroken, {count(verdict.records, 'record')}{erased}",
           f"head: record {verdict.head_seq} {verdict.head_hash}",
           "(keep the head where the chain's writers cannot change it: `loremap audit verify "
           f"--anchor {verdict.head_seq}:HASH` then checks that nothing up to it was "
           "rewritten)"])
    return 0
