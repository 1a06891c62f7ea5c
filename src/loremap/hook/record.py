"""Before compaction: the session record, written without any model call.

Compaction replaces the session's history with a model-written summary. Before that happens
this hook writes down, from the transcript alone, what the session touched: the user's last
requests, the files edited and read, the commands run and the errors seen. The session-start
hook after the compaction injects it next to the latest handoff, so the compacted context
knows the facts even when the summary drops them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from loremap.hook.context import locate
from loremap.sessions.transcript import Activity, activity


def render_record(session_id: str, trigger: str, done: Activity, now: dt.datetime) -> str:
    """The session record as markdown (stable order, most recent last in each list)."""
    stamp = now.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# Session record {session_id}",
             f"Written by loremap before compaction ({trigger}, {stamp}) from the transcript, "
             f"without a model call; {done.compactions} earlier compaction(s)."]

    def section(title: str, items: tuple[str, ...], code: bool = False) -> None:
        if items:
            lines.extend(["", f"## {title}"])
            lines.extend(f"- `{i}`" if code else f"- {i}" for i in items)

    section("Last requests", done.requests)
    section("Files edited", done.edits)
    section("Files read", done.reads)
    section("Commands run", done.commands, code=True)
    section("Errors seen", done.errors)
    return "\n".join(lines) + "\n"


def pre_compact(payload: Mapping[str, object], environ: Mapping[str, str]) -> str:
    project = locate(payload, environ)
    if project is None or project.session_id is None or project.transcript is None:
        return ""
    from loremap.sessions.state import SessionState

    state = SessionState(project.loremap_dir, project.session_id)
    trigger = payload.get("trigger")
    # Requests, commands and errors may hold a key or a token; the record is a new copy on
    # disk that goes back into the context after compaction. Each field is redacted as it
    # was typed (a key keeps its line breaks, a token its tail before the 200-character
    # cut), then the whole record once more.
    from loremap.vault.secrets import redacted

    done = activity(project.transcript, project.root, clean=redacted)
    text = render_record(project.session_id, trigger if isinstance(trigger, str) else "auto",
                         done, dt.datetime.now(dt.UTC))
    state.write_record(redacted(text))
    state.next_epoch()
    state.save()
    return ""
