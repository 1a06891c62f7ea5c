"""`loremap search QUERY`: the hybrid recall over notes and code, packed into a token budget.

Any text is safe: it is analysed, never parsed as query syntax.
"""

from __future__ import annotations

import argparse

from loremap.app import App
from loremap.cli.output import emit_json, lines, warn
from loremap.model import NoteType, Status
from loremap.search import Request
from loremap.search.render import Packed, closing_line


def request_scope(args: argparse.Namespace) -> dict[str, object]:
    """The filters shared by `search` and `eval`, validated."""
    return {"kinds": tuple(args.kinds), "types": tuple(NoteType.parse(t).value for t in args.types),
            "statuses": tuple(Status.parse(s).value for s in args.statuses),
            "paths": tuple(_prefix(p) for p in args.paths)}


def _prefix(path: str) -> str:
    """A --file path as a repository path prefix: `./src` is `src`, `.` is everything."""
    path = path.strip()
    while path.startswith("./"):
        path = path[2:]
    return "" if path == "." else path


def run(args: argparse.Namespace) -> int:
    from loremap.search import SearchConfig

    app = App.open(require_project=False)
    try:
        warnings = app.prepare_search()
        config = SearchConfig.parse(args.tuning) if args.tuning is not None else None
        engine = app.engine(config)
        s = app.settings
        budget = args.budget if args.budget is not None else s.get_int("search.budget")
        query = " ".join(args.query)
        request = Request(query, tuple(args.terms), as_of=args.as_of, history=args.history,
                          budget=budget or None,
                          limit=args.limit if args.limit is not None else s.get_int("search.limit"),
                          **request_scope(args))  # type: ignore[arg-type]
        found = engine.recall(request)
    finally:
        app.close()
    if args.json:
        emit_json({"query": query, "terms": list(found.terms), "abstained": found.abstained,
                   "reason": found.reason, "tokens": found.tokens, "left_out": found.left_out,
                   "items": [{**item._asdict(), "why": list(item.why),
                              "details": list(item.details), "stale": list(item.stale)}
                             for item in found.items],
                   "warnings": warnings})
        return 0
    warn(warnings)
    if found.abstained or not found.items:
        lines([f"nothing relevant in memory ({found.reason or 'nothing fits the budget'})"])
        return 0
    lines([item.text for item in found.items])
    lines([closing_line(Packed(found.items, found.tokens, found.left_out))])
    return 0
