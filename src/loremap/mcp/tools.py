"""What each tool does: thin functions over the use cases the CLI and the hooks call too.

Each takes the project's `App` and the tool's typed arguments (`args.py`) and returns the text
the model reads; failures raise `UserError`s with an actionable message (the server turns them
into tool errors). They run on a worker thread under the project's lock (see `projects`). The
server reconciles hand edits of note files at most once a second (`SERVER` freshness).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from loremap.app import App
from loremap.errors import InvalidInput, NotFound
from loremap.mcp.args import (
    ForgetArgs,
    HandoffArgs,
    LockedArgs,
    MapArgs,
    OutcomeArgs,
    ReadArgs,
    RecallArgs,
    RelatedArgs,
    RememberArgs,
    StatsArgs,
    TimelineArgs,
)
from loremap.use import notes
from loremap.use.fresh import SERVER, refresh
from loremap.use.recall import TOOL_HINT, Question, render_recall

if TYPE_CHECKING:
    from loremap.use.verify import Verified


def _project(app: App) -> None:
    if app.loremap_dir is None or app.root is None:
        raise NotFound("no loremap project here: run `loremap init` in the repository (or set "
                       "LOREMAP_PROJECT_DIR for the server)")


def _noted(warnings: list[str], prefix: str = "note") -> list[str]:
    return [f"{prefix}: {w}" for w in warnings]


def recall(app: App, args: RecallArgs, session: str | None = None) -> str:
    from loremap.use.recall import recall as run

    done = run(app, Question(args.query, args.terms,
                             kinds=(args.kind,) if args.kind else (), types=args.types,
                             files=args.files, as_of=args.as_of, history=args.history,
                             budget=args.budget, session=session), SERVER)
    return "\n".join([*_noted(done.warnings), *render_recall(done.found, TOOL_HINT)])


def remember(app: App, args: RememberArgs) -> str:
    done = notes.remember(app, args.facts, SERVER, personal=args.personal)
    out: list[str] = []
    for note in done.notes:
        out.append(f"created {note.id} ({note.path})")
        if note.superseded:
            out.append(f"updated {note.superseded}: superseded by {note.id}")
    return "\n".join(out + _noted(done.warnings, "warning"))


def read(app: App, args: ReadArgs, session: str | None = None) -> str:
    done = notes.read(app, args.target, SERVER, session=session)
    return "\n".join([*_noted(done.warnings), *notes.render_page(done.page)])


def map_(app: App, args: MapArgs) -> str:
    from loremap.use.code import map_page

    done = map_page(app, args.module)
    return "\n".join([*_noted(done.warnings), done.page.text])


def handoff(app: App, args: HandoffArgs) -> str:
    from loremap.sessions.handoff import HandoffDraft, Handoffs

    _project(app)
    handoffs = Handoffs.for_project(app.loremap_dir, app.settings)
    if args.action == "load":
        return handoffs.render(handoffs.load(args.id))
    if not args.goal.strip():
        raise InvalidInput("handoff save needs a goal: what the session was trying to do")
    saved = handoffs.save(HandoffDraft(
        goal=args.goal, state=args.state, decisions=args.decisions,
        next_steps=args.next_steps, open_questions=args.open_questions, files=args.files,
        source="agent"))
    return (f"saved handoff {saved.id} (.loremap/handoffs/{saved.id}.md); the next session "
            "starts from it")


def forget(app: App, args: ForgetArgs) -> str:
    done = notes.forget(app, args.id, SERVER, reason=args.reason, purge=args.purge,
                        erase=args.erase)
    return "\n".join([f"{done.action} {done.id} ({done.path})",
                      *(f"quotes of it removed from {path}" for path in done.scrubbed),
                      *_noted(done.warnings, "warning")])


def outcome(app: App, args: OutcomeArgs) -> str:
    from loremap.search.track import record_text

    done = notes.outcome(app, args.id, args.result, SERVER, args.note)
    return "\n".join([f"{args.result} counted for {done.id}: "
                      f"{record_text(done.successes, done.failures)}",
                      *_noted(done.warnings, "warning")])


def related(app: App, args: RelatedArgs) -> str:
    from loremap.use.code import related as run

    done = run(app, args.target, SERVER)
    out = [*_noted(done.warnings), f"# {done.target}: {len(done.connections)} connections"]
    for c in done.connections[:args.limit]:
        label = f" — [{c.row.type or c.row.kind}] {c.row.title}" \
            if c.row and c.row.kind == "note" else ""
        out.append(f"- {c.rel if c.outgoing else f'{c.rel} (from)'} {c.node}{label}")
    if len(done.connections) > args.limit:
        out.append(f"... {len(done.connections) - args.limit} more (raise limit)")
    return "\n".join(out)


def timeline(app: App, args: TimelineArgs) -> str:
    from loremap.codemap.history import recent_changes
    from loremap.use.recall import check_date

    refresh(app, SERVER)
    since = check_date(args.since, "since")
    notes_ = [n for n in app.store.list_notes()
              if since is None or (n.recorded_at or "") >= since]
    out = [f"# Notes recorded{f' since {since}' if since else ''}: {len(notes_)}"]
    out += [f"- {n.recorded_at or '?'} [{n.type}] {n.title} ({n.id}, {n.status})"
            for n in notes_[:50]]
    if app.root is not None:
        changes = recent_changes(app.root, args.commits)
        out += ["", f"# Last {len(changes)} commits"]
        for subject, paths in changes:
            shown = ", ".join(paths[:8]) + (f" (+{len(paths) - 8})" if len(paths) > 8 else "")
            out.append(f"- {subject} — {shown}")
    return "\n".join(out)


def stats(app: App, args: StatsArgs) -> str:
    from collections import Counter

    refresh(app, SERVER)
    notes_ = app.store.list_notes()
    by_type = Counter(n.type for n in notes_)
    by_status = Counter(n.status for n in notes_)
    size = app.index_path.stat().st_size if not app.shared and app.index_path.exists() else 0
    where = (f"shared database {app.store.location}" if app.shared
             else f"{app.index_path} ({size / 1e6:.1f} MB)")
    return "\n".join([
        f"project: {app.root or '(none: personal notes only)'}",
        f"notes: {len(notes_)} — " + ", ".join(f"{t} {c}" for t, c in sorted(by_type.items())),
        "status: " + ", ".join(f"{s} {c}" for s, c in sorted(by_status.items())),
        f"code files: {app.store.source_file_count()}",
        f"index: {where}, code map at "
        f"{(app.store.meta('code.head') or 'never indexed')[:12]}",
    ])


def verified(done: Verified) -> str:
    """The text of a verification, judged or not (the server's sampling path too)."""
    from loremap.use.verify import render

    return "\n".join([*render(done), *_noted(done.warnings, "warning")])


def call(app: App, args: LockedArgs, session: str | None = None) -> str:
    """Run the tool whose arguments `args` are; `session` names the client's session in the
    log of questions and what they led to (sessions/queries.py)."""
    match args:
        case RecallArgs():
            return recall(app, args, session)
        case RememberArgs():
            return remember(app, args)
        case ReadArgs():
            return read(app, args, session)
        case MapArgs():
            return map_(app, args)
        case HandoffArgs():
            return handoff(app, args)
        case ForgetArgs():
            return forget(app, args)
        case OutcomeArgs():
            return outcome(app, args)
        case RelatedArgs():
            return related(app, args)
        case TimelineArgs():
            return timeline(app, args)
        case StatsArgs():
            return stats(app, args)
        case _:
            assert_never(args)
