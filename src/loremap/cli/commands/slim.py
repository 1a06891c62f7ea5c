"""`loremap slim FILE`: propose moving the long reference sections of CLAUDE.md / AGENTS.md /
GEMINI.md into notes; `--apply` writes the notes and the slimmer file (the old one backed up)."""

from __future__ import annotations

import argparse
from pathlib import Path

from loremap.agents.slim import DEFAULT_MIN_TOKENS, Plan, make_plan, read_instructions
from loremap.agents.slim.apply import Applied, apply_plan, check_moves
from loremap.app import App
from loremap.cli.output import count, emit_json, lines, warn
from loremap.use.fresh import ALWAYS, refresh

_SECTION_WIDTH = 40
_LISTED = 8  # note ids named in the closing line (the table names them all)


def run(args: argparse.Namespace) -> int:
    source = read_instructions(Path(args.file))
    min_tokens = DEFAULT_MIN_TOKENS if args.min_tokens is None else args.min_tokens
    app = App.open()
    try:
        warnings = refresh(app, ALWAYS)
        plan = make_plan(source, app.memory, min_tokens)
        max_bytes = app.settings.get_int("vault.max_note_bytes")
        applied = None
        if args.apply:
            applied = apply_plan(plan, app.memory, max_bytes)
        else:
            warnings += [f"--apply would refuse: {p}" for p in check_moves(plan, app.memory,
                                                                             max_bytes)]
    finally:
        app.close()
    if args.json:
        emit_json(_as_json(plan, applied, warnings))
        return 0
    warn(warnings)
    lines(_table(plan))
    lines([""])
    lines(_summary(args.file, plan, applied))
    return 0


def _as_json(plan: Plan, applied: Applied | None, warnings: list[str]) -> dict[str, object]:
    after = applied.tokens_after if applied else plan.tokens_after
    return {
        "file": str(plan.source.path),
        "tokens_before": plan.tokens_before,
        "tokens_after": after,
        "saving_percent": _saving(plan.tokens_before, after),
        "sections": [{"heading": r.heading, "line": r.line, "depth": r.depth,
                      "tokens": r.tokens, "action": r.action, "reason": r.reason,
                      "type": r.note_type, "title": r.title, "note_id": r.note_id,
                      "existing": r.existing, "files": list(r.files)} for r in plan.rows],
        "applied": applied is not None,
        "written": [{"id": i, "path": p} for i, p in applied.written] if applied else [],
        "reused": applied.reused if applied else [],
        "backup": str(applied.backup) if applied else None,
        "warnings": warnings,
    }


def _table(plan: Plan) -> list[str]:
    out = [f"{'section':<{_SECTION_WIDTH}}  {'tokens':>6}  plan  {'type':<9}  reason"]
    for row in plan.rows:
        name = "  " * row.depth + row.heading
        if len(name) > _SECTION_WIDTH:
            name = name[:_SECTION_WIDTH - 1] + "…"
        reason = row.reason if row.action == "keep" else f"{row.reason} -> {row.note_id}"
        out.append(f"{name:<{_SECTION_WIDTH}}  {row.tokens:>6,}  {row.action}  "
                   f"{row.note_type or '':<9}  {reason}")
    return out


def _summary(name: str, plan: Plan, applied: Applied | None) -> list[str]:
    if not plan.moves:
        return [f"nothing to move: {plan.tokens_before:,} tokens in every message; every "
                "section is short, mostly rules or already in project memory"]
    if applied is None:
        new = [r.note_id or "" for r in plan.moves if not r.existing]
        shown = ", ".join(new[:_LISTED]) + (f" and {len(new) - _LISTED} more"
                                            if len(new) > _LISTED else "")
        return [_tokens_line(plan.tokens_before, plan.tokens_after),
                f"would write {count(len(new), 'note')}" + (f": {shown}" if new else ""),
                f"run `loremap slim {name} --apply` to write them and the slimmer file (the old "
                "one is kept as a .loremap-backup beside it)"]
    out = [f"wrote {note_id} -> {path}" for note_id, path in applied.written]
    out += [f"pointed at the existing note {note_id}" for note_id in applied.reused]
    out += [f"slimmed {name}: {_tokens_line(plan.tokens_before, applied.tokens_after)}",
            f"backup: {applied.backup.name}"]
    return out


def _tokens_line(before: int, after: int) -> str:
    return f"{before:,} → {after:,} tokens in every message (−{_saving(before, after)} %)"


def _saving(before: int, after: int) -> int:
    return round((before - after) * 100 / before) if before else 0
