"""Note ids: `<type>-<slug of the title>`, at most 80 characters, unique within the vault.

The id is also the file name, so everything here errs on the side of refusing: a title with a
NUL byte, or one with no letter or digit to build a slug from, is an error rather than a guess.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from loremap.errors import InvalidInput
from loremap.model import MAX_ID_LENGTH, NoteType, check_id

_NON_SLUG = re.compile(r"[^a-z0-9]+")
_MAX_SUFFIX = 100_000


def check_title(title: str) -> str:
    """The title with its spaces collapsed (as a note file reads back), or `InvalidInput` when
    it is empty, multi-line or has control characters."""
    stripped = title.strip()
    if not stripped:
        raise InvalidInput("the title is empty")
    if "\x00" in stripped:
        raise InvalidInput("the title contains a NUL byte")
    if any(unicodedata.category(ch) == "Cc" for ch in stripped):
        raise InvalidInput("the title must be one line without control characters")
    if len(stripped) > 300:
        raise InvalidInput(f"the title is {len(stripped)} characters long; keep it under 300")
    return " ".join(stripped.split())


def slugify(text: str) -> str:
    """Lowercase ASCII words joined by '-': accents folded, everything else dropped."""
    folded = unicodedata.normalize("NFKD", text)
    ascii_text = folded.encode("ascii", "ignore").decode("ascii").lower()
    return _NON_SLUG.sub("-", ascii_text).strip("-")


def _truncate(slug: str, limit: int) -> str:
    if len(slug) <= limit:
        return slug
    cut = slug[:limit]
    if slug[limit] != "-" and "-" in cut:
        cut = cut.rsplit("-", 1)[0]
    return cut.strip("-")


def new_id(note_type: NoteType, title: str, taken: Callable[[str], bool]) -> str:
    """A fresh id for a note of `note_type` titled `title`; `taken(id)` says what is in use."""
    slug = slugify(check_title(title))
    if not slug:
        raise InvalidInput(
            f"the title {title.strip()!r} has no letters or digits to build a note id from"
        )
    prefix = f"{note_type.value}-"
    base = prefix + _truncate(slug, MAX_ID_LENGTH - len(prefix))
    if not taken(base):
        return check_id(base)
    for n in range(2, _MAX_SUFFIX):
        suffix = f"-{n}"
        candidate = prefix + _truncate(slug, MAX_ID_LENGTH - len(prefix) - len(suffix)) + suffix
        if not taken(candidate):
            return check_id(candidate)
    raise InvalidInput(f"too many notes titled {title!r}")
