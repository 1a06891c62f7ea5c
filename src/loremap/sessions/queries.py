"""The questions asked of this clone's memory, and what the agent opened next: what
`loremap calibrate` fits the abstention threshold on when it is given no dataset.

`.loremap/cache/queries.jsonl` (ignored by git: this machine's history, not the project's
lore) holds one line per event of a session:
- `{"at", "session", "query"}`: a recall with a session (the prompt hook's, with the agent's
  session id; the MCP recall tool's, with one id per client session), its text redacted and
  cut to `MAX_QUERY` characters;
- `{"at", "session", "opened"}`: a note or file the agent opened (the pre-tool hook before a
  Read or an Edit, the MCP read tool), by its node id.

The recall side creates the log; the open side only appends to a log that exists, so a project
that turned logging off (`hooks.log_queries = false`, which also deletes the log at the next
recall) writes nothing on either side. A question counts as answered by the memory when the
agent opened, before its next question and within `WINDOW_S`, something the index holds:
`asked` pairs them. Nothing leaves the machine.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import NamedTuple

QUERIES_LOG = "cache/queries.jsonl"  # under .loremap/ (ignored by git)
MAX_LOG_BYTES = 2_000_000  # past this the older half of the log is dropped
MAX_QUERY = 1_000  # characters of a question kept
FOLLOW = 3  # opens after a question that count as what it led to
WINDOW_S = 1800.0  # an open later than this after its question is not its answer


class Asked(NamedTuple):
    """A logged question and the node ids the agent opened after it (at most `FOLLOW`)."""

    query: str
    opened: tuple[str, ...]


def log_query(loremap_dir: Path, session: str, text: str) -> None:
    """Log a question of `session` (redacted, cut). Never fails the recall."""
    from loremap.vault.secrets import redacted

    _append(loremap_dir, {"session": session, "query": redacted(text)[:MAX_QUERY]})


def log_open(loremap_dir: Path, session: str, node_id: str) -> None:
    """Log that `session` opened `node_id`, when the log exists (logging is on)."""
    if (loremap_dir / QUERIES_LOG).is_file():
        _append(loremap_dir, {"session": session, "opened": node_id})


def drop_log(loremap_dir: Path) -> None:
    """Delete the log (logging was turned off)."""
    from contextlib import suppress

    with suppress(OSError):
        (loremap_dir / QUERIES_LOG).unlink()


def _append(loremap_dir: Path, event: dict[str, str]) -> None:
    from loremap.errors import UserError
    from loremap.vault import fs

    line = json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **event},
                      ensure_ascii=False) + "\n"
    try:
        fs.append_capped(loremap_dir / QUERIES_LOG, line.encode("utf-8"), loremap_dir.parent,
                         MAX_LOG_BYTES)
    except (OSError, UserError):
        pass  # a log line is never worth failing the agent's call


def asked(loremap_dir: Path) -> list[Asked]:
    """The logged questions that led the agent to open something, oldest first; a question
    asked again keeps its latest occurrence. Unreadable lines are skipped."""
    from loremap.errors import UnsafePath
    from loremap.vault import fs

    try:
        data = fs.read_confined(loremap_dir / QUERIES_LOG, loremap_dir.parent)
    except (OSError, UnsafePath):
        return []
    open_question: dict[str, tuple[str, float, list[str]]] = {}
    found: dict[str, Asked] = {}

    def close(session: str) -> None:
        query, _, opened = open_question.pop(session, ("", 0.0, []))
        if opened:
            found.pop(query, None)  # the latest occurrence is kept, in its place
            found[query] = Asked(query, tuple(opened))

    for raw in data.splitlines():
        try:
            event = json.loads(raw)
            session, when = str(event["session"]), _seconds(str(event["at"]))
        except (ValueError, KeyError, TypeError):
            continue
        if isinstance(event.get("query"), str) and event["query"].strip():
            close(session)
            open_question[session] = (" ".join(event["query"].split()), when, [])
        elif isinstance(event.get("opened"), str) and session in open_question:
            _, start, opened = open_question[session]
            node = event["opened"]
            if when - start <= WINDOW_S and len(opened) < FOLLOW and node not in opened:
                opened.append(node)
    for session in list(open_question):
        close(session)
    return list(found.values())


def _seconds(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
