"""`loremap search QUERY`: the hybrid recall over notes and code, packed into a token budget.

Any text is safe: it is analysed, never parsed as query syntax.
"""

from __future__ import annotations

import argparse

from loremap.cli import context
from loremap.cli.output import emit_json, lines, warn
from loremap.model import NodeKind, NoteType, Status
from loremap.use.fresh import ALWAYS
from loremap.use.recall import CLI_HINT, Question, recall, render_recall


def question(args: argparse.Namespace, text: str = "") -> Question:
    """The question of `search` (and the filters `eval` shares), from the parsed options."""
    return Question(
        text, tuple(getattr(args, "terms", ())),
        kinds=tuple(NodeKind.parse(k) for k in args.kinds),
        types=tuple(NoteType.parse(t) for t in args.types),
        statuses=tuple(Status.parse(s) for s in args.statuses),
        files=tuple(args.paths), as_of=getattr(args, "as_of", None),
        history=bool(getattr(args, "history", False)), budget=getattr(args, "budget", None),
        limit=getattr(args, "limit", None), cwd=context.cwd())


def run(args: argparse.Namespace) -> int:
    from loremap.search import SearchConfig

    config = SearchConfig.parse(args.tuning) if args.tuning is not None else None
    asked = question(args, " ".join(args.query))
    with context.open_app(require_project=False) as app:
        done = recall(app, asked, ALWAYS, config)
    found = done.found
    if args.json:
        emit_json({"query": asked.text, "terms": list(found.terms),
                   "abstained": found.abstained, "reason": found.reason,
                   "tokens": found.tokens, "left_out": found.left_out,
                   "items": [{**item._asdict(), "why": list(item.why),
                              "details": list(item.details), "stale": list(item.stale)}
                             for item in found.items],
                   "warnings": done.warnings})
        return 0
    warn(done.warnings)
    lines(render_recall(found, CLI_HINT))
    return 0
