"""`loremap handoff save|show|list|close`: session handoffs in `.loremap/handoffs/`.

A handoff is what a session leaves the next one (goal, state, decisions, next steps, open
questions, files). Saving one closes the open one; `show` without an id prints the latest open
handoff, which is what a new or compacted session resumes from.
"""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import count, emit_json, lines, warn
from loremap.sessions.handoff import Handoff, HandoffDraft, Handoffs, as_dict


def run(args: argparse.Namespace) -> int:
    app = App.open()
    try:
        warn(app.notices)
        handoffs = Handoffs.for_project(app.loremap_dir, app.settings)
        if args.action == "save":
            return _save(handoffs, args)
        if args.action == "show":
            return _show(handoffs, args.id, args.json)
        if args.action == "list":
            return _list(handoffs, args.limit or None, args.json)
        return _close(handoffs, args.id, args.json)
    finally:
        app.close()


def _path(handoffs: Handoffs, handoff: Handoff) -> str:
    return handoffs.display(handoffs.path_for(handoff.id))


def _summary(handoff: Handoff) -> str:
    session = f", session {handoff.session}" if handoff.session else ""
    return (f"handoff {handoff.id} · {handoff.status} · saved "
            f"{as_dict(handoff)['created_at']} by {handoff.source}{session}")


def _save(handoffs: Handoffs, args: argparse.Namespace) -> int:
    draft = HandoffDraft(goal=args.goal, state=args.state, decisions=args.decisions,
                         next_steps=args.next_steps, open_questions=args.questions,
                         files=args.files, session=args.session, source=args.source)
    handoff = handoffs.save(draft)
    if args.json:
        emit_json({"handoff": as_dict(handoff), "path": _path(handoffs, handoff)})
        return 0
    lines([f"saved handoff {handoff.id} -> {_path(handoffs, handoff)}"])
    return 0


def _show(handoffs: Handoffs, handoff_id: str | None, as_json: bool) -> int:
    handoff = handoffs.load(handoff_id)
    text = handoffs.render(handoff)
    if as_json:
        emit_json({"handoff": as_dict(handoff), "path": _path(handoffs, handoff),
                   "text": text})
        return 0
    lines([f"<!-- {_summary(handoff)} -->", "", text.rstrip("\n")])
    return 0


def _list(handoffs: Handoffs, limit: int | None, as_json: bool) -> int:
    found, problems = handoffs.scan()
    shown = found[:limit]
    if as_json:
        emit_json({"handoffs": [as_dict(h) for h in shown], "warnings": problems})
        return 0
    warn(problems)
    if not shown:
        lines(["no handoffs (save one with `loremap handoff save --goal ...`)"])
        return 0
    width = max(len(h.id) for h in shown)
    for h in shown:
        lines([f"{h.id:<{width}}  {h.status:<6}  {h.goal.splitlines()[0]}"])
    more = f", {len(found) - len(shown)} older not shown" if len(found) > len(shown) else ""
    lines([f"({count(len(shown), 'handoff')}{more})"])
    return 0


def _close(handoffs: Handoffs, handoff_id: str | None, as_json: bool) -> int:
    handoff = handoffs.close(handoff_id)
    if as_json:
        emit_json({"handoff": as_dict(handoff), "path": _path(handoffs, handoff)})
        return 0
    lines([f"closed handoff {handoff.id} ({_path(handoffs, handoff)})"])
    return 0
