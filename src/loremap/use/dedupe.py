"""`loremap dedupe`: notes that say the same thing, merged only where that is provable.

Agents record the same lesson in several sessions, under titles that differ. Two active notes
of the same type and vault are **the same** when their bodies are identical once case, accents
and separators are normalised away (`normal`): that is provable, and `--apply` folds the newer
into the older (`Memory.merge`: the newer's title becomes an alias, its files, tags and links
join, it is superseded). Notes that only resemble each other — titles or bodies sharing at
least half their words (Jaccard of the analysed words, as `search/similar.py` warns at write
time) — are **near**: listed with their score for a person or an agent to judge one by one,
never merged.

The near pairs are found through the words notes share: only words held by at most
`_COMMON` notes of a type propose pairs, so the work grows with the pairs that share a rare
word, not with the square of the vault.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from loremap.errors import MalformedNote
from loremap.model import Note, Status
from loremap.use.fresh import Freshness, refresh

if TYPE_CHECKING:
    from loremap.app import App

NEAR = 0.5  # Jaccard of titles or bodies from which two notes are listed as near
_COMMON = 50  # a word in more notes of a type than this proposes no pair
MAX_NEAR = 200  # near pairs listed at most


class Same(NamedTuple):
    keep: str  # the older note, kept
    copy: str  # folded into it and superseded
    alias: str  # the copy's title, an alias of the kept note from now on


class Near(NamedTuple):
    a: str
    b: str
    score: float
    why: str  # "titles" or "bodies"


class Duplicates(NamedTuple):
    same: list[Same]
    near: list[Near]
    applied: bool
    warnings: list[str]


def normal(text: str) -> str:
    """`text` without case, accents or separators: the words in order, one space apart."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    kept = "".join(c if c.isalnum() else " " for c in folded if not unicodedata.combining(c))
    return " ".join(kept.split())


def dedupe(app: App, freshness: Freshness, apply: bool = False) -> Duplicates:
    """The provable duplicates and the near ones; with `apply`, the provable ones merged."""
    warnings = refresh(app, freshness)
    same: list[Same] = []
    near: list[Near] = []
    for vault in app.memory.vaults:
        notes = []
        for file in vault.scan():
            try:
                note = vault.load(file).note
            except (MalformedNote, OSError):
                continue  # reconcile said so already
            if note.status is Status.ACTIVE:
                notes.append(note)
        by_type: dict[str, list[Note]] = {}
        for note in notes:
            by_type.setdefault(note.type.value, []).append(note)
        for group in by_type.values():
            found = _same(group)
            same += found
            copies = {s.copy for s in found}
            near += _near([n for n in group if n.id not in copies], app.memory.analyzer.terms,
                          {frozenset((s.keep, s.copy)) for s in found})
    near.sort(key=lambda n: (-n.score, n.a, n.b))
    if apply:
        for pair in same:
            app.memory.merge(pair.keep, pair.copy)
    return Duplicates(same, near[:MAX_NEAR], apply, warnings)


def _age(note: Note) -> tuple[str, str]:
    return (note.recorded_at or "", note.id)


def _same(notes: Sequence[Note]) -> list[Same]:
    groups: dict[str, list[Note]] = {}
    for note in notes:
        key = normal(note.body)
        if key:
            groups.setdefault(key, []).append(note)
    out = []
    for group in groups.values():
        if len(group) < 2:
            continue
        keep, *copies = sorted(group, key=_age)
        out += [Same(keep.id, copy.id, copy.title) for copy in copies]
    return out


def _near(notes: Sequence[Note], terms: Callable[[str], Sequence[str]],
          skip: set[frozenset[str]]) -> list[Near]:
    analysed = {n.id: (set(terms(n.title)), set(terms(n.body))) for n in notes}
    postings: dict[str, list[str]] = {}
    for note_id, (title, body) in analysed.items():
        for word in title | body:
            postings.setdefault(word, []).append(note_id)
    pairs: set[tuple[str, str]] = set()
    for ids in postings.values():
        if 2 <= len(ids) <= _COMMON:
            pairs.update((a, b) for i, a in enumerate(ids) for b in ids[i + 1:])
    out = []
    for a, b in pairs:
        if frozenset((a, b)) in skip:
            continue
        scores = [(_jaccard(analysed[a][0], analysed[b][0]), "titles"),
                  (_jaccard(analysed[a][1], analysed[b][1]), "bodies")]
        score, why = max(scores)
        if score >= NEAR:
            first, second = sorted((a, b))
            out.append(Near(first, second, round(score, 3), why))
    return out


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0
