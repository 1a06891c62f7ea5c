"""What an importer reads from another tool, before loremap writes it: the contract between
the readers (`imports/rubi.py`, `imports/cuba.py`, `imports/basic_memory.py`) and the one
import path that writes notes (`imports/run.py`).

A reader only parses and maps: it yields `Item`s (a note to write), `Skipped`s (something it
could not map, and why) and `Deleted`s (a tombstone of the source). It never touches the vault,
the index or the network beyond what it was pointed at, and it never follows a path out of the
folder it was given. Everything about ids, idempotence, secrets, quarantine, the audit and the
progress bar happens once, in the writer.
"""

from __future__ import annotations

from typing import NamedTuple


class Item(NamedTuple):
    """One note read from another tool, mapped onto loremap's vocabulary."""

    tool: str  # "rubi" | "cuba" | "basic-memory"
    origin: str  # the note's id in the source tool: stable across re-imports, unique per tool
    type: str  # a loremap note type: decision, bug, gotcha, concept, procedure, error, ...
    title: str
    body: str = ""
    status: str = "active"  # active | superseded | archived | quarantined
    files: tuple[str, ...] = ()  # repository paths the note is about
    # (loremap relation, target): the target is another item's origin id of the same tool, or a
    # repository path. The writer resolves origin ids to loremap ids.
    links: tuple[tuple[str, str], ...] = ()
    supersedes: str | None = None  # the origin id this item replaces
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # other names the note is found by (e.g. a title in the source)
    recorded_at: str | None = None  # ISO 8601, when the source recorded it
    commit: str | None = None
    successes: int = 0  # a procedure's track record, kept for the ranking
    failures: int = 0
    error: str = ""  # an error note's error text (its signature is computed by the writer)
    remedy: str | None = None  # the origin id (or loremap id) of the note that fixed the error
    slug: str | None = None  # the loremap id the item would like (Rubi keeps its slugs)
    where: str = ""  # the source file or row, for messages ("conhecimento/x.md", "errors/3.json")
    personal: bool = False  # belongs in the personal vault (Rubi's `_pessoal`)


class Skipped(NamedTuple):
    """Something a reader found but could not map, said in one line."""

    where: str
    reason: str
    origin: str = ""


class Deleted(NamedTuple):
    """A tombstone in the source: the note imported from `origin` is forgotten on import."""

    origin: str
    where: str = ""
