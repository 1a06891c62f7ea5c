"""The note: one unit of project knowledge, as it lives in a markdown file of the vault.

A `Note` is parsed once at the vault boundary and stays immutable; changes make a new note with
`Note._replace`. Frontmatter keys this version does not know are carried in `extra` so a
round trip through loremap never loses what a person or another tool wrote.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, Self

from loremap.errors import InvalidInput


class _Choice(enum.StrEnum):
    """A closed set of words, parsed leniently (case, spaces, `-` for `_`) or refused clearly."""

    @classmethod
    def parse(cls, value: object) -> Self:
        try:
            return cls(str(value).strip().lower().replace("-", "_"))
        except ValueError:
            names = ", ".join(member.value for member in cls)
            label = _LABELS.get(cls.__name__, cls.__name__.lower())
            raise InvalidInput(f"unknown {label} {value!r}: use one of {names}") from None


class NoteType(_Choice):
    DECISION = "decision"
    BUG = "bug"
    GOTCHA = "gotcha"
    CONCEPT = "concept"
    PROCEDURE = "procedure"
    ERROR = "error"
    EPISODE = "episode"
    PREFERENCE = "preference"


class Status(_Choice):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"
    QUARANTINED = "quarantined"


class Relation(_Choice):
    ABOUT = "about"
    AFFECTS = "affects"
    SUPERSEDES = "supersedes"
    CAUSES = "causes"
    FIXES = "fixes"
    DEPENDS_ON = "depends_on"
    PART_OF = "part_of"
    RELATES = "relates"


class NodeKind(_Choice):
    """What a node of the index is: a note, a code file or a module (a folder)."""

    NOTE = "note"
    FILE = "file"
    MODULE = "module"


_LABELS = {"NoteType": "note type", "Status": "status", "Relation": "link relation",
           "NodeKind": "kind"}


class Source(enum.StrEnum):
    AGENT = "agent"
    HUMAN = "human"
    IMPORT = "import"
    AUTO = "auto"


IMPORT_TOOL = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
"""The name of a tool notes are imported from (`source: import:<tool>`)."""

MAX_ID_LENGTH = 80
# The shared default of the mapping fields: read-only, so no note can change another's.
_EMPTY: Mapping[str, Any] = MappingProxyType({})
ID_PATTERN = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,78}[a-z0-9])?")


def check_id(value: str) -> str:
    """Return `value` if it is a valid note id, else raise `InvalidInput`.

    Ids are file names inside the vault, so this is also the path-confinement check: `../x`,
    absolute paths, separators and NUL bytes can never pass.
    """
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value) or "--" in value:
        shown = repr(value) if isinstance(value, str) else type(value).__name__
        raise InvalidInput(
            f"invalid note id {shown}: ids are 1-{MAX_ID_LENGTH} lowercase letters, digits "
            "and single '-' (e.g. decision-use-jwt)"
        )
    return value


class Link(NamedTuple):
    """A typed edge from a note to another note id or to a repository path."""

    rel: Relation
    target: str


class Note(NamedTuple):
    """A knowledge node: the frontmatter keys of DESIGN.md section 3 plus the markdown body."""

    id: str
    type: NoteType
    title: str
    body: str = ""
    status: Status = Status.ACTIVE
    files: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    supersedes: str | None = None
    superseded_by: str | None = None
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    recorded_at: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    commit: str | None = None
    file_hashes: Mapping[str, str] = _EMPTY
    source: Source = Source.AGENT
    archived_reason: str | None = None
    # A procedure's track record: how often following it worked and failed (`loremap outcome`).
    successes: int = 0
    failures: int = 0
    # An error's signature (text/signature.py), the note that fixed it, and the command that
    # failed (an approach not to try again as it was).
    signature: str | None = None
    remedy: str | None = None
    command: str | None = None
    extra: Mapping[str, Any] = _EMPTY
    # An imported note (`loremap import`): the tool it came from (`source: import:<tool>`), its
    # id there, and the digest of what was imported (a re-import of the same writes nothing).
    origin_tool: str | None = None
    origin: str | None = None
    origin_digest: str | None = None

    def targets(self) -> list[tuple[str, str]]:
        """Every (relation, target) this note declares, supersedes included."""
        pairs = [(link.rel.value, link.target) for link in self.links]
        if self.supersedes and (Relation.SUPERSEDES.value, self.supersedes) not in pairs:
            pairs.append((Relation.SUPERSEDES.value, self.supersedes))
        return pairs
