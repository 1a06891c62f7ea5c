"""What an import did, or with `--dry-run` would do: the one report every front end shows."""

from __future__ import annotations

from typing import NamedTuple

from loremap.imports.items import Skipped

FIRST = 5  # notes a dry run shows


class Planned(NamedTuple):
    """One note an import writes (or would): its id, type, title, and new or updated."""

    id: str
    type: str
    title: str
    change: str  # new | updated | archived
    personal: bool = False


class Report(NamedTuple):
    """What an import did, or with `dry_run` would do."""

    tool: str
    dry_run: bool
    notes: list[Planned]  # every note written (or to be), in the source's order
    unchanged: int
    skipped: list[Skipped]
    warnings: list[str]

    def counts(self) -> dict[str, int]:
        """new, updated, archived, unchanged, skipped, and new notes by type."""
        out = {"new": 0, "updated": 0, "archived": 0}
        for note in self.notes:
            out[note.change] += 1
        by_type: dict[str, int] = {}
        for note in self.notes:
            if note.change != "archived":
                by_type[note.type] = by_type.get(note.type, 0) + 1
        return {**out, "unchanged": self.unchanged, "skipped": len(self.skipped),
                **{f"type:{t}": n for t, n in sorted(by_type.items())}}

    def as_dict(self) -> dict[str, object]:
        return {"tool": self.tool, "dry_run": self.dry_run, "counts": self.counts(),
                "notes": [n._asdict() for n in (self.notes[:FIRST] if self.dry_run
                                                else self.notes)],
                "skipped": [s._asdict() for s in self.skipped], "warnings": self.warnings}
