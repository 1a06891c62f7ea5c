"""Session start: the level-0 map, and where the last session left off.

On startup, resume and clear the code map is brought up to date first (incremental: nothing
is parsed when nothing changed; in the daemon, right after the answer, which then carries the
map of the last index) and the open handoff is pointed at. After a compaction the
context has just lost the session's detail, so the latest handoff comes in whole, with the
session record the pre-compact hook wrote, before the map.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from loremap.hook import log
from loremap.hook.context import (
    PREAMBLE,
    Project,
    additional_context,
    cut,
    fence,
    later,
    locate,
    open_app,
)

if TYPE_CHECKING:
    from loremap.sessions.handoff import Handoffs

HANDOFF_CHARS = 4_000
RECORD_CHARS = 2_500


def session_start(payload: Mapping[str, object], environ: Mapping[str, str]) -> str:
    project = locate(payload, environ)
    if project is None:
        log(f"session-start: no loremap project at {payload.get('cwd')!r}; nothing injected",
            environ)
        return ""
    compacted = payload.get("source") == "compact"
    parts = [PREAMBLE]
    if compacted:
        parts += _after_compaction(project, environ)
    else:
        if (project.loremap_dir / "map.md").is_file():
            # Trigger: a map exists. Why: bringing the index up to date takes most of this
            # hook's time (~120 ms at 10k nodes), and the agent waits for the answer. Outcome:
            # where a process outlives the answer (the daemon), the map injected is the one of
            # the last index and the index is refreshed right after; a hook process of its own
            # refreshes first, as before.
            later(lambda: _refresh(project, environ))
        else:
            _refresh(project, environ)
        pointer = _handoff_pointer(project, environ)
        if pointer:
            parts.append(pointer)
        from loremap.sessions.state import prune

        later(lambda: prune(project.loremap_dir))
    parts.append(_map(project))
    return additional_context("SessionStart", fence("session-start", "\n\n".join(parts)))


def _refresh(project: Project, environ: Mapping[str, str]) -> None:
    """Bring the index and the map pages in line with the code and the notes.

    Trigger: indexing fails (a locked index, an unreadable file, ...). Why: a stale map is
    still worth injecting. Outcome: log one line and go on with the map as it is.
    """
    try:
        with open_app(project.root, environ) as app:
            try:
                app.index_code()
                for notice in app.take_notices():
                    log(f"session-start: {notice}", environ)
            except Exception as exc:  # noqa: BLE001
                log(f"session-start: indexing failed ({type(exc).__name__}: {exc})", environ)
    except Exception as exc:  # noqa: BLE001
        log(f"session-start: the index could not be opened ({type(exc).__name__}: {exc})",
            environ)


def _handoffs(project: Project, environ: Mapping[str, str]) -> Handoffs:
    from loremap.hook.context import settings
    from loremap.sessions.handoff import Handoffs

    return Handoffs.for_project(project.loremap_dir, settings(project, environ))


def _handoff_pointer(project: Project, environ: Mapping[str, str]) -> str:
    latest = _handoffs(project, environ).latest()
    if latest is None:
        return ""
    saved = latest.created_at.strftime("%Y-%m-%d %H:%M UTC")
    return (f"Open handoff {latest.id} (saved {saved} by {latest.source}): {latest.goal}\n"
            "It is what the last session left for this one: load it with the handoff tool "
            "(action load) or `loremap handoff show`.")


def _after_compaction(project: Project, environ: Mapping[str, str]) -> list[str]:
    from loremap.sessions.state import SessionState

    parts = []
    handoffs = _handoffs(project, environ)
    latest = handoffs.latest()
    if latest is not None:
        saved = latest.created_at.strftime("%Y-%m-%d %H:%M UTC")
        parts.append(f"Latest handoff {latest.id} (saved {saved} by {latest.source}):\n\n"
                     + cut(handoffs.render(latest).strip(), HANDOFF_CHARS))
    if project.session_id is not None:
        record = SessionState(project.loremap_dir, project.session_id).read_record()
        if record:
            parts.append(cut(record.strip(), RECORD_CHARS))
    return parts


def _map(project: Project) -> str:
    from loremap.errors import UnsafePath
    from loremap.vault.fs import read_confined

    try:  # never through a symlink: the map goes into the agent's context
        data = read_confined(project.loremap_dir / "map.md", project.loremap_dir.parent)
        return data.decode("utf-8", errors="replace").strip()
    except UnsafePath as exc:
        return f"(map not shown: {exc})"
    except OSError:
        return "(no map yet: run `loremap index`)"
