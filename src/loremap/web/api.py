"""The dashboard's JSON: each answer of `/api/...` from one use case, formatted and bounded.

Nothing here reads the index or the vault itself: the graph, the recall, a page, the health and
the timeline are `loremap.use`'s, the same the CLI and the MCP tools call; this module only
turns their records into JSON objects and checks the query's values (one line each when wrong,
as the CLI's). Every string is data: the page inserts it with `textContent`, never as markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from loremap.errors import InvalidInput
from loremap.use.fresh import SERVER

if TYPE_CHECKING:
    from loremap.app import App
    from loremap.search.render import Item
    from loremap.use.notes import Page

Json = dict[str, Any]

# Characters of a search: enough for a pasted issue with its traceback; the question travels in
# the URL, which uvicorn bounds at 16 KiB with its escapes.
MAX_QUERY = 4000
BUDGET = (100, 8000)  # a search's token budget, as the MCP recall tool bounds it
MAX_TEXT = 200_000  # characters of a page's text sent at most


def number(query: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """An integer query parameter within [low, high], or one line saying what to write."""
    raw = query.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise InvalidInput(f"{name} {raw!r}: write a whole number from {low} to {high}")
    return value


def graph(app: App, query: Mapping[str, str]) -> Json:
    from loremap.use.graph import FILES, MAX_FILES, MAX_NOTES, NOTES
    from loremap.use.graph import graph as build

    files = number(query, "files", FILES, 0, MAX_FILES)
    notes = number(query, "notes", NOTES, 0, MAX_NOTES)
    found = build(app, SERVER, files=files, notes=notes)
    return {
        "nodes": [node._asdict() for node in found.nodes],
        "edges": [edge._asdict() for edge in found.edges],
        "counts": {"files": found.files, "files_shown": found.shown("file"),
                   "modules": found.modules, "modules_shown": found.shown("module"),
                   "notes": found.notes, "notes_shown": found.shown("note")},
        "files_cap": files, "notes_cap": notes, "hint": found.hint,
        "warnings": found.warnings,
    }


def search(app: App, query: Mapping[str, str]) -> Json:
    from loremap.use.recall import TOOL_HINT, Question, recall, render_recall

    text = query.get("q", "").strip()
    if not text:
        raise InvalidInput("search what? write a question, words, a path or an identifier")
    if len(text) > MAX_QUERY:
        raise InvalidInput(f"the question is {len(text)} characters: at most {MAX_QUERY}")
    budget = number(query, "budget", app.settings.get_int("search.budget"), *BUDGET)
    done = recall(app, Question(text, budget=budget), SERVER)
    found = done.found
    return {
        "query": text, "terms": list(found.terms), "budget": budget,
        "abstained": found.abstained, "reason": found.reason, "tokens": found.tokens,
        "left_out": found.left_out, "seconds": round(found.seconds, 4),
        "items": [_item(item) for item in found.items],
        "closing": render_recall(found, TOOL_HINT)[-1], "warnings": done.warnings,
    }


def _item(item: Item) -> Json:
    return {"id": item.id, "kind": item.kind, "type": item.type, "title": item.title,
            "path": item.path, "status": item.status, "scope": item.scope,
            "score": round(item.score, 6), "why": list(item.why), "snippet": item.snippet,
            "details": list(item.details), "stale": list(item.stale), "tokens": item.tokens,
            "lists": [{"list": name, "rank": rank} for name, rank in item.lists],
            "text": item.text}


def node(app: App, query: Mapping[str, str]) -> Json:
    from loremap.use.notes import read

    target = query.get("id", "").strip()
    if not target or len(target) > 1000:
        raise InvalidInput("open what? give a node's id: a note id, a file or a module path")
    done = read(app, target, SERVER)
    return {**_page(done.page), "warnings": done.warnings}


def _page(page: Page) -> Json:
    from loremap.use.notes import FilePage, NotePage, render_page

    text = "\n".join(render_page(page))[:MAX_TEXT]
    if isinstance(page, NotePage):
        note = page.note
        links = [{"id": target, "rel": rel, "out": True} for rel, target in note.targets()]
        links += [{"id": path, "rel": "about", "out": True} for path in note.files]
        links += [{"id": e.src, "rel": e.rel, "out": False} for e in page.linked_from]
        return {"kind": "note", "id": note.id, "title": note.title, "type": note.type.value,
                "status": note.status.value, "path": page.path, "text": text, "links": links}
    if isinstance(page, FilePage):
        view = page.view
        links = [{"id": p, "rel": "imports", "out": True} for p in view.imports]
        links += [{"id": p, "rel": "imports", "out": False} for p in view.imported_by]
        links += [{"id": i, "rel": "about", "out": False} for i, _, _ in view.notes]
        return {"kind": "file", "id": view.path, "title": view.path, "type": "",
                "status": "active", "path": view.path, "text": text, "links": links[:500]}
    module = (page.module or ".") + "/"
    return {"kind": "module", "id": module, "title": module, "type": "", "status": "active",
            "path": page.path, "text": text, "links": []}


# --- writes (`loremap dashboard --writes`) -----------------------------------------------------

MAX_REASON = 2000  # characters of a reason or an outcome's note


def _text_field(body: Mapping[str, Any], name: str, required: bool = False) -> str | None:
    value = body.get(name)
    if value is None or (isinstance(value, str) and not value.strip() and not required):
        if required:
            raise InvalidInput(f"{name}: required")
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{name}: write a non-empty string")
    if len(value) > MAX_REASON:
        raise InvalidInput(f"{name} is {len(value)} characters: at most {MAX_REASON}")
    return value.strip()


def forget(app: App, body: Mapping[str, Any]) -> Json:
    """Forget (archive) a note, as `loremap forget ID [--reason]` and the MCP `forget` do."""
    from loremap.use.notes import forget as run

    note_id = _text_field(body, "id", required=True)
    assert note_id is not None
    done = run(app, note_id, SERVER, reason=_text_field(body, "reason"))
    return {"action": done.action, "id": done.id, "path": done.path, "warnings": done.warnings}


def outcome(app: App, body: Mapping[str, Any]) -> Json:
    """Count a procedure's success or failure, as `loremap outcome` and the MCP `outcome` do."""
    from loremap.use.notes import OUTCOMES
    from loremap.use.notes import outcome as run

    note_id = _text_field(body, "id", required=True)
    result = body.get("result")
    if note_id is None or result not in OUTCOMES:
        raise InvalidInput(f"result: write one of {', '.join(OUTCOMES)}")
    done = run(app, note_id, str(result), SERVER, _text_field(body, "note"))
    return {"id": done.id, "path": done.path, "successes": done.successes,
            "failures": done.failures, "lower_bound": round(done.lower_bound, 4),
            "warnings": done.warnings}


def health(app: App, environ: Mapping[str, str]) -> Json:
    from loremap.use.health import health as check

    found = check(app, SERVER, environ)
    return {
        "stale": [s._asdict() for s in found.stale], "stale_count": found.stale_count,
        "quarantined": [q._asdict() for q in found.quarantined],
        "quarantined_count": found.quarantined_count,
        "links": [f._asdict() for f in found.links],
        "findings": [f._asdict() for f in found.findings],
        "index": found.status._asdict(), "warnings": found.warnings,
    }


def timeline(app: App, query: Mapping[str, str]) -> Json:
    from loremap.use.timeline import EVENTS
    from loremap.use.timeline import timeline as build

    found = build(app, SERVER, number(query, "limit", EVENTS, 1, EVENTS))
    return {"days": [{"day": day, "events": [e._asdict() for e in events]}
                     for day, events in found.days()],
            "total": found.total, "shown": len(found.events), "warnings": found.warnings}


def tokens(app: App, query: Mapping[str, str]) -> Json:
    """The X-ray of this project's Claude Code sessions, as its own one-file HTML page."""
    from loremap.use.xray import report
    from loremap.xray.html import render_html

    days = number(query, "days", 30, 0, 3650)
    found = report(app.root, days)
    return {"sessions": len(found.sessions), "files": found.files, "days": days,
            "html": render_html(found)}
