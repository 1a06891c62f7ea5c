"""Freshness: how recently the index must agree with the note files before a use case reads.

Three policies, one per kind of caller:

- `ALWAYS` (0): every CLI command reconciles first (one `stat` per note file; a hand edit or a
  `git pull` is seen by the very next command);
- `SERVER` (1 s): a long-running MCP server reconciles at most once a second (writes through
  loremap, ours or another process's, update the index themselves; only hand edits wait);
- `NEVER` (None): the prompt hook does not reconcile at all (it runs on every message; the
  session-start hook and every tool call reconcile).

`refresh` is the one entry point: it also collects the notices of opening the index (a rebuilt
index, changed analyzer languages) so that each answer carries its own warnings, never the
next one's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loremap.app import App

Freshness = float | None
ALWAYS: Freshness = 0.0
SERVER: Freshness = 1.0
NEVER: Freshness = None


def refresh(app: App, freshness: Freshness) -> list[str]:
    """Bring the index in line with the note files (project and personal) as `freshness`
    asks; return the warnings to show with this answer (the notices of opening included)."""
    warnings = app.take_notices()
    if freshness is not None:
        warnings += app.reconcile(freshness)
    return warnings
