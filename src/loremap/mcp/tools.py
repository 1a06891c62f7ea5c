"""What each tool does: thin functions over the same services the CLI calls.

Each takes the project's `App` and the validated arguments and returns the text the model
reads; failures raise `UserError`s with an actionable message (the server turns them into
tool errors). They run on a worker thread under the project's lock (see `projects`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from loremap.app import App
from loremap.errors import InvalidInput, NotFound
from loremap.memory.paths import is_path_target
from loremap.memory.service import Draft
from loremap.model import NoteType, check_id

Args = Mapping[str, Any]
# How stale the index may be against hand edits of note files (see `App.reconcile`).
FRESH_S = 1.0


def _project(app: App) -> None:
    if app.loremap_dir is None or app.root is None:
        raise NotFound("no loremap project here: run `loremap init` in the repository (or set "
                       "LOREMAP_PROJECT_DIR for the server)")


def recall(app: App, args: Args) -> str:
    from loremap.search import Request
    from loremap.search.render import TOOL_HINT, Packed, closing_line

    warnings = app.prepare_search(FRESH_S)
    budget = args.get("budget") or app.settings.get_int("search.budget")
    request = Request(
        args["query"], tuple(args.get("terms", ())),
        kinds=(args["kind"],) if args.get("kind") else (),
        types=tuple(args.get("types", ())),
        paths=tuple(p.strip().removeprefix("./").strip("/") for p in args.get("files", ())),
        as_of=_date(args.get("as_of"), "as_of"), history=bool(args.get("history")),
        budget=budget, limit=app.settings.get_int("search.limit"))
    found = app.engine().recall(request)
    out = [f"note: {w}" for w in warnings]
    if found.abstained or not found.items:
        return "\n".join([*out, f"nothing relevant in memory "
                                f"({found.reason or 'nothing fits the budget'})"])
    out += [item.text for item in found.items]
    out.append(closing_line(Packed(found.items, found.tokens, found.left_out), TOOL_HINT))
    return "\n".join(out)


def _date(value: str | None, name: str) -> str | None:
    if not value:
        return None
    try:
        return dt.date.fromisoformat(value).isoformat()
    except ValueError:
        raise InvalidInput(f"{name} {value!r}: write a date as YYYY-MM-DD") from None


def remember(app: App, args: Args) -> str:
    from loremap.search.similar import similar_notes, similar_warning

    personal = bool(args.get("personal"))
    if not personal:
        _project(app)
    app.reconcile(FRESH_S)
    max_bytes = app.settings.get_int("vault.max_note_bytes")
    drafts = [_draft(fact) for fact in args["facts"]]
    for i, draft in enumerate(drafts):  # every fact is checked before the first is written
        app.memory.check(draft, f"facts[{i}]", max_bytes)
    out: list[str] = []
    for draft in drafts:
        similar = [] if draft.supersedes else similar_notes(
            app.store, app.memory.analyzer, NoteType.parse(draft.type).value, draft.title)
        outcome = app.memory.remember(draft, personal=personal)
        note_id = outcome.ids[0]
        out.append(f"created {note_id} ({outcome.paths[0]})")
        if outcome.counts.get("superseded"):
            out.append(f"updated {draft.supersedes}: superseded by {note_id}")
        out += [f"warning: {w}" for w in outcome.warnings]
        out += [f"warning: {similar_warning(other, title)}" for other, title in similar]
    return "\n".join(out)


def _draft(fact: Args) -> Draft:
    return Draft(type=fact["type"], title=fact["title"], body=fact.get("body", ""),
                 files=tuple(fact.get("files", ())),
                 links=tuple((link["rel"], link["target"]) for link in fact.get("links", ())),
                 supersedes=fact.get("supersedes") or None, tags=tuple(fact.get("tags", ())),
                 source="agent")


def read(app: App, args: Args) -> str:
    target = args["target"].strip()
    app.reconcile(FRESH_S)
    if not is_path_target(target):
        try:
            check_id(target)
        except InvalidInput:
            pass
        else:
            if any(v.exists(target) for v in app.memory.vaults):
                return "\n".join(app.memory.page(target))
    path = target.removeprefix("./").strip("/")
    if app.root is not None:
        from loremap.codemap.views import describe_file, file_lines

        view = describe_file(app.store, path)
        if view is not None:
            return "\n".join(file_lines(view))
        page = _module_page(app, path)
        if page is not None:
            return page
    raise NotFound(f"nothing named {target!r}: not a note id, a file of the code map or a "
                   "module (try recall, or map for the modules)")


def _module_page(app: App, module: str) -> str | None:
    from loremap.codemap.render import MODULES_DIR, module_slug

    assert app.loremap_dir is not None
    path = app.loremap_dir / MODULES_DIR / f"{module_slug(module)}.md"
    return path.read_text(encoding="utf-8") if path.is_file() else None


def map_(app: App, args: Args) -> str:
    from loremap.codemap.render import module_label

    _project(app)
    app.index_code()
    assert app.loremap_dir is not None
    module = (args.get("module") or "").strip().removeprefix("./").strip("/")
    if module in ("", "."):
        return (app.loremap_dir / "map.md").read_text(encoding="utf-8")
    page = _module_page(app, module)
    if page is None:
        raise NotFound(f"no module {module_label(module)} in the code map (modules are folders "
                       "with source files; call map without a module to list them)")
    return page


def handoff(app: App, args: Args) -> str:
    from loremap.sessions.handoff import HandoffDraft, Handoffs

    _project(app)
    handoffs = Handoffs.for_project(app.loremap_dir, app.settings)
    if args["action"] == "load":
        return handoffs.render(handoffs.load(args.get("id") or None))
    if not args.get("goal", "").strip():
        raise InvalidInput("handoff save needs a goal: what the session was trying to do")
    saved = handoffs.save(HandoffDraft(
        goal=args["goal"], state=args.get("state", ""),
        decisions=tuple(args.get("decisions", ())), next_steps=tuple(args.get("next_steps", ())),
        open_questions=tuple(args.get("open_questions", ())),
        files=tuple(args.get("files", ())), source="agent"))
    return (f"saved handoff {saved.id} (.loremap/handoffs/{saved.id}.md); the next session "
            "starts from it")


def forget(app: App, args: Args) -> str:
    app.reconcile(FRESH_S)
    outcome = app.memory.forget(args["id"], reason=args.get("reason"),
                                purge=bool(args.get("purge")))
    verb = "purged" if outcome.counts.get("purged") else "archived"
    return "\n".join([f"{verb} {args['id']} ({outcome.paths[0]})",
                      *(f"warning: {w}" for w in outcome.warnings)])


def related(app: App, args: Args) -> str:
    target = args["target"].strip().removeprefix("./")
    limit = int(args.get("limit") or 50)
    app.reconcile(FRESH_S)
    edges = app.store.edges(target)
    if not edges:
        raise NotFound(f"{target!r} has no links: not a note id or a file of the code map, or "
                       "nothing is connected to it yet")
    others = [(e.dst if e.src == target else e.src, e.rel, e.src == target, e.weight)
              for e in edges]
    others.sort(key=lambda o: (-o[3], o[0]))
    rows = app.store.nodes([o[0] for o in others])
    out = [f"# {target}: {len(others)} connections"]
    for other, rel, outgoing, _ in others[:limit]:
        row = rows.get(other)
        label = f" — [{row.type or row.kind}] {row.title}" if row and row.kind == "note" else ""
        out.append(f"- {rel if outgoing else f'{rel} (from)'} {other}{label}")
    if len(others) > limit:
        out.append(f"... {len(others) - limit} more (raise limit)")
    return "\n".join(out)


def timeline(app: App, args: Args) -> str:
    from loremap.codemap.history import recent_changes

    app.reconcile(FRESH_S)
    since = _date(args.get("since"), "since")
    commits = int(args.get("commits") or 10)
    notes = [n for n in app.store.list_notes()
             if since is None or (n.recorded_at or "") >= since]
    out = [f"# Notes recorded{f' since {since}' if since else ''}: {len(notes)}"]
    out += [f"- {n.recorded_at or '?'} [{n.type}] {n.title} ({n.id}, {n.status})"
            for n in notes[:50]]
    if app.root is not None:
        changes = recent_changes(app.root, commits)
        out += ["", f"# Last {len(changes)} commits"]
        for subject, paths in changes:
            shown = ", ".join(paths[:8]) + (f" (+{len(paths) - 8})" if len(paths) > 8 else "")
            out.append(f"- {subject} — {shown}")
    return "\n".join(out)


def stats(app: App, args: Args) -> str:
    from collections import Counter

    app.reconcile(FRESH_S)
    notes = app.store.list_notes()
    by_type = Counter(n.type for n in notes)
    by_status = Counter(n.status for n in notes)
    size = app.index_path.stat().st_size if not app.shared and app.index_path.exists() else 0
    where = (f"shared database {app.store.location}" if app.shared
             else f"{app.index_path} ({size / 1e6:.1f} MB)")
    return "\n".join([
        f"project: {app.root or '(none: personal notes only)'}",
        f"notes: {len(notes)} — " + ", ".join(f"{t} {c}" for t, c in sorted(by_type.items())),
        "status: " + ", ".join(f"{s} {c}" for s, c in sorted(by_status.items())),
        f"code files: {app.store.source_file_count()}",
        f"index: {where}, code map at "
        f"{(app.store.meta('code.head') or 'never indexed')[:12]}",
    ])


HANDLERS: dict[str, Callable[[App, Args], str]] = {
    "recall": recall, "remember": remember, "read": read, "map": map_, "handoff": handoff,
    "forget": forget, "related": related, "timeline": timeline, "stats": stats,
}
