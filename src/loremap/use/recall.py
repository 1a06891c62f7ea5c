"""Recall: the one search that `loremap search`, the MCP `recall` tool and the prompt hook run.

`recall` turns a `Question` (what a front end was asked, already typed) into the engine's
`Request` — the only place one is built — after the freshness step the caller's policy asks for
and the embedding of what has no vector yet; `render_recall` is the one text of the answer.
`ranker` serves `loremap eval`: the same requests, ranked without a budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from loremap.errors import InvalidInput
from loremap.memory.paths import repo_prefix
from loremap.model import NodeKind, NoteType, Status
from loremap.use.fresh import Freshness, refresh

if TYPE_CHECKING:
    from loremap.app import App
    from loremap.search import Recall, Request, SearchConfig

class Question(NamedTuple):
    """A recall as a front end received it. `files` are paths as the user wrote them (relative
    to `cwd`, or to the repository root when `cwd` is None); `budget` None is the
    `search.budget` setting and 0 no limit; `limit` None is `search.limit`."""

    text: str
    terms: tuple[str, ...] = ()
    kinds: tuple[NodeKind, ...] = ()
    types: tuple[NoteType, ...] = ()
    statuses: tuple[Status, ...] = ()
    files: tuple[str, ...] = ()
    as_of: str | None = None
    history: bool = False
    budget: int | None = None
    limit: int | None = None
    cwd: Path | None = None
    session: str | None = None  # the agent's session: the question is logged for calibrate


class Recalled(NamedTuple):
    """What a recall found, and the warnings that belong with this answer."""

    found: Recall
    warnings: list[str]


def recall(app: App, question: Question, freshness: Freshness,
           config: SearchConfig | None = None) -> Recalled:
    """Search the project's memory (and the personal vault's) for `question`."""
    request = build_request(app, question)
    if question.session:
        logged(app, question.session, query=question.text)
    warnings = prepare(app, freshness)
    found = app.engine(config, hook=freshness is None).recall(request)
    return Recalled(found, warnings + app.embed_degraded())


def logged(app: App, session: str, query: str = "", opened: str = "") -> None:
    """Log a question of the agent's `session`, or a node it opened, for `loremap calibrate`
    (sessions/queries.py); with `search.log_queries` off, nothing is logged and a question
    deletes the log."""
    from loremap.sessions import queries

    if app.loremap_dir is None:
        return
    if not app.settings.get_bool("search.log_queries"):
        if query:
            queries.drop_log(app.loremap_dir)
    elif query:
        queries.log_query(app.loremap_dir, session, query)
    else:
        queries.log_open(app.loremap_dir, session, opened)


def ranker(app: App, scope: Question, config: SearchConfig | None = None
           ) -> Callable[[str, Sequence[str]], list[str]]:
    """A function ranking (query, terms) under `scope`'s filters: the node ids best first, no
    budget and no abstention (what `loremap eval` scores)."""
    base = build_request(app, scope)._replace(budget=None)
    engine = app.engine(config)

    def rank(query: str, terms: Sequence[str]) -> list[str]:
        request = base._replace(query=query, terms=tuple(terms))
        return [item.target for item in engine.rank(request, render_items=False)]
    return rank


def prepare(app: App, freshness: Freshness) -> list[str]:
    """The freshness step of a recall: reconcile, embed what has no vector yet, and say when
    the code map was never built. `NEVER` (the prompt hook) does none of it: it reads the
    index as it is and only takes the notices of opening it."""
    if freshness is None:
        return refresh(app, freshness)
    from loremap.use.embeddings import embed_for_recall

    app.embedder()  # loaded first: a model that cannot load says so in this answer's notices
    warnings = refresh(app, freshness)
    return warnings + embed_for_recall(app) + _empty_map(app)


def build_request(app: App, question: Question) -> Request:
    """The engine's request for `question`, its values checked and its paths normalised."""
    from loremap.search import Request

    settings = app.settings
    budget = (settings.get_int("search.budget") if question.budget is None
              else question.budget)
    limit = settings.get_int("search.limit") if question.limit is None else question.limit
    if budget < 0:
        raise InvalidInput(f"budget {budget}: give a number of tokens (0 for no limit)")
    if limit < 1:
        raise InvalidInput(f"limit {limit}: recall at least 1 item")
    return Request(
        question.text, tuple(question.terms),
        kinds=tuple(k.value for k in question.kinds),
        types=tuple(t.value for t in question.types),
        statuses=tuple(status.value for status in question.statuses),
        paths=_prefixes(app, question.files, question.cwd),
        as_of=check_date(question.as_of, "as_of"), history=question.history,
        budget=budget or None, limit=limit)


def _prefixes(app: App, files: Sequence[str], cwd: Path | None) -> tuple[str, ...]:
    if not files:
        return ()
    if app.root is None:
        raise InvalidInput("a files filter needs a project: run `loremap init` in the "
                           "repository")
    base = app.root if cwd is None else cwd
    return tuple(dict.fromkeys(repo_prefix(f, app.root, base) for f in files))


def check_date(value: str | None, name: str) -> str | None:
    """`value` as a YYYY-MM-DD date (None when empty), or a one-line error naming `name`."""
    import datetime as dt

    if not value:
        return None
    try:
        return dt.date.fromisoformat(value.strip()).isoformat()
    except ValueError:
        raise InvalidInput(f"{name} {value!r}: write a date as YYYY-MM-DD") from None


def _empty_map(app: App) -> list[str]:
    if app.root is not None and not app.store.source_file_count() and \
            app.store.meta("code.head") is None:
        return ["the code map is empty: run `loremap index` to search the code too"]
    return []


CLI_HINT = "Open one with `loremap show`; zoom into a module with `loremap map`."
TOOL_HINT = "Open one with the read tool; zoom into a module with map."


def render_recall(found: Recall, hint: str) -> list[str]:
    """The answer as the agent or the person reads it: the items and a closing line, or the
    one line that says nothing relevant is known, and why."""
    if found.abstained or not found.items:
        reason = found.reason or "nothing fits the budget"
        return [f"nothing relevant in memory ({reason})"]
    count = len(found.items)
    noun = "item" if count == 1 else "items"
    more = f", {found.left_out} more over the budget" if found.left_out else ""
    return [*(item.text for item in found.items),
            f"({count} {noun}, ~{found.tokens} tokens{more}. {hint})"]
