"""`slim --apply`: check every note first, then write the notes, the backup and the slimmer file.

The instruction file belongs to the user, so the order is chosen for what a failure leaves:
every draft is checked (secrets, size, title) before anything is written, so a refusal changes
nothing; then the notes land one by one through `Memory.remember`; last `agents.files` copies
the old file to `<FILE>.loremap-backup` (never over an older backup) and replaces it atomically.
A failure after the first note leaves the file as it was, and the next run points at the notes
already written (same title) instead of writing them twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from loremap.agents.files import read_text_or_none, write_with_backup
from loremap.agents.slim import Plan, body_lines
from loremap.errors import Conflict, InvalidInput, SecretFound, UserError
from loremap.memory.service import Memory
from loremap.text import estimate_tokens


class Applied(NamedTuple):
    """What `apply_plan` wrote: `(id, path)` of new notes, ids pointed at, the backup's path."""

    written: list[tuple[str, str]]
    reused: list[str]
    backup: Path
    tokens_after: int


def check_moves(plan: Plan, memory: Memory, max_body_bytes: int) -> list[UserError]:
    """Why each note to write would be refused (a secret, an over-size body), section named."""
    from loremap.vault.secrets import scan

    problems: list[UserError] = []
    for row in plan.moves:
        if row.existing or row.draft is None:
            continue
        where = f"{plan.source.path.name}:{row.line}"
        try:
            memory.check(row.draft, "note", max_body_bytes)
        except SecretFound as exc:
            found = scan(row.draft.body)
            if not found:
                problems.append(SecretFound(f"section {row.heading!r} ({where}): {exc}"))
                continue
            line = body_lines(plan.doc, row.start, row.end)[found[0].line - 1] + 1
            problems.append(SecretFound(
                f"refused: {found[0].kind} in section {row.heading!r} "
                f"({plan.source.path.name}:{line}); remove it from the file first (secrets "
                "never land in the vault)"))
        except InvalidInput as exc:
            problems.append(InvalidInput(f"section {row.heading!r} ({where}) cannot become a "
                                         f"note: {exc}"))
    return problems


def apply_plan(plan: Plan, memory: Memory, max_body_bytes: int) -> Applied | None:
    """Write the notes, back up the file and replace it by the slimmer text; None (nothing
    written, no backup) when nothing is to move.

    Refuses (writing nothing) when a draft fails its check or the file changed since it was
    read."""
    if not plan.moves:
        return None
    problems = check_moves(plan, memory, max_body_bytes)
    if problems:
        raise problems[0]
    _unchanged(plan)
    ids: dict[int, str] = {}
    written: list[tuple[str, str]] = []
    reused: list[str] = []
    for row in plan.moves:
        assert row.draft is not None and row.note_id is not None
        if row.existing:
            ids[row.start] = row.note_id
            reused.append(row.note_id)
            continue
        outcome = memory.remember(row.draft)
        ids[row.start] = outcome.ids[0]
        written.append((outcome.ids[0], outcome.paths[0]))
    text = plan.render(ids)
    _unchanged(plan)
    backup = write_with_backup(plan.source.path, text)
    assert backup is not None  # the file exists: it was just read
    return Applied(written, reused, backup, estimate_tokens(text))


def _unchanged(plan: Plan) -> None:
    """Trigger: the file differs from what was planned on. Why: an editor or another agent
    saved it meanwhile; writing would drop that change. Outcome: refuse; a rerun replans."""
    if read_text_or_none(plan.source.path) != plan.source.raw:
        raise Conflict(f"{plan.source.path} changed while slim ran; run it again")
