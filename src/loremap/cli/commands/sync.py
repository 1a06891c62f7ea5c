"""`loremap sync push|pull|status|versions ID`: this vault against the shared database."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from loremap.app import App
from loremap.cli.output import count, emit_json, lines, progress, warn
from loremap.errors import InvalidInput

if TYPE_CHECKING:
    from loremap.sync import Report, Sync


def run(args: argparse.Namespace) -> int:
    if args.action == "versions" and not args.id:
        raise InvalidInput("sync versions needs a note id: loremap sync versions ID")
    if args.action != "versions" and args.id:
        raise InvalidInput(f"sync {args.action} takes no id (only `sync versions ID` does)")
    from loremap.app import project_key_rule
    from loremap.sync import Sync

    app = App.open()
    try:
        sync = Sync.of(app.memory, app.user.state)
        assert app.root is not None
        rule = project_key_rule(app.settings, app.root)[1]
        if args.action == "versions":
            return _versions(sync, args.id, args.json)
        if args.action == "status":
            push, pull = sync.status()
            if args.json:
                emit_json({"action": "status", "database": push.location,
                           "project": push.project, "project_rule": rule,
                           "push": push.as_dict(), "pull": pull.as_dict()})
                return 0
            warn(dict.fromkeys(push.warnings + pull.warnings))
            for report in (push, pull):
                lines([f"{report.direction}:"])
                lines(f"  {line}" for line in _report_lines(report, rule))
            return 0
        report = sync.run(args.action, dry_run=args.dry_run, confirm=args.confirm,
                          bars=lambda label: progress(args, label))
    finally:
        app.close()
    if args.json:
        emit_json({**report.as_dict(), "project_rule": rule})
        return 0
    warn(report.warnings)
    lines(_report_lines(report, rule))
    return 0


def _report_lines(report: Report, rule: str) -> list[str]:
    """The changes, then one closing line; `rule` is where this side's project key comes
    from (`project_key_rule`)."""
    from loremap.sync.run import SYMBOLS

    out = []
    for step in report.changes:
        if step.change == "conflict":
            out.append(f"! {step.id}  conflict: {step.detail} (`loremap sync versions "
                       f"{step.id}`)")
        else:
            out.append(f"{SYMBOLS[step.change]} {step.id}" + (f"  ({step.detail})"
                                                              if step.detail else ""))
    out += [f"? {held.id}  {held.reason}" for held in report.held]
    c = report.counts()
    done = (f"{c['new']} new, {c['updated']} updated, {c['deleted']} deleted, "
            f"{count(c['conflict'], 'conflict')}")
    if report.direction == "push":
        verb, where = ("would push" if report.dry_run else "pushed"), "to"
    else:
        verb, where = ("would pull" if report.dry_run else "pulled"), "from"
    if not report.changes:
        verb = "nothing to push" if report.direction == "push" else "nothing to pull"
        out.append(f"{verb} ({where} {report.location})")
        if report.direction == "pull" and not report.shared_notes:
            out.append(_no_shared_notes(report, rule))
    else:
        out.append(f"{verb} {done} {where} {report.location}")
    if report.refusal:
        out.append(f"(without --confirm it would be {report.refusal})")
    return out


def _no_shared_notes(report: Report, rule: str) -> str:
    """Trigger: a pull finds no note at all under this side's key. Why: the usual cause is
    two sides computing different keys (a remote on one, none on the other). Outcome: say
    where this key comes from and how to make both sides agree."""
    return (f"the database has no notes under project key '{report.project}' (from {rule}); "
            "if another machine pushed notes, it uses another key: set store.project "
            "(LOREMAP_PROJECT_KEY, or [store] project in .loremap/config.toml) to one value on "
            "both sides")


def _versions(sync: Sync, note_id: str, as_json: bool) -> int:
    doc, kept = sync.versions(note_id)
    if as_json:
        emit_json({
            "id": note_id,
            "current": None if doc is None else {
                "version": doc.version, "deleted": doc.deleted, "updated_at": doc.updated_at,
                "updated_by": doc.updated_by, "hash": doc.hash, "text": doc.text},
            "versions": [v._asdict() for v in kept]})
        return 0
    if doc is not None:
        state = "deleted" if doc.deleted else "current"
        lines([f"{note_id}: v{doc.version} ({state}), {doc.updated_at[:19]}Z by "
               f"{doc.updated_by or '?'}, hash {doc.hash[:12]}"])
    if not kept:
        lines(["no previous versions"])
        return 0
    lines([f"{count(len(kept), 'previous version')}, newest first:"])
    lines(f"  v{v.version}  {v.updated_at}  by {v.updated_by or '?'}  {v.reason}  "
          f"{'(deleted) ' if v.deleted else ''}hash {v.hash[:12]}" for v in kept)
    lines([f"(the texts: `loremap sync versions {note_id} --json`)"])
    return 0
