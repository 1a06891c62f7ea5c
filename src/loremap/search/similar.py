"""Notes that already say what a new note is about to say.

Agents record the same lesson in several sessions. Before a note is written, its title is
compared with the titles of the active notes of the same type: the candidates come from the
title column of the full-text index (cheap, whatever the vault's size), and one counts as
similar when the analysed title words overlap by at least half (Jaccard). The caller warns;
it does not refuse: two notes may share words and still differ.
"""

from __future__ import annotations

from typing import Protocol

from loremap.model.search import Filters, NodeRow, TextQuery
from loremap.text import Analyzer

JACCARD = 0.5
_CANDIDATES = 8
# bm25 column weights: the title alone (title, body, tags, symbols, path, content).
_TITLE_ONLY = (1.0, 0.0, 0.0, 0.0, 0.0, 0.0)


class TitleStore(Protocol):
    def text_search(self, query: TextQuery, limit: int, filters: Filters,
                    weights: tuple[float, ...]) -> list[tuple[str, float]]: ...

    def nodes(self, ids: list[str], filters: Filters | None = None) -> dict[str, NodeRow]: ...


def similar_notes(store: TitleStore, analyzer: Analyzer, note_type: str, title: str
                  ) -> list[tuple[str, str]]:
    """(id, title) of active notes of `note_type` whose title overlaps `title`, best first."""
    words = set(analyzer.terms(title))
    if not words:
        return []
    terms = tuple(sorted(words))
    query = TextQuery(terms, (1,) * len(terms), columns=(0,))
    filters = Filters(kinds=("note",), types=(note_type,))
    hits = store.text_search(query, _CANDIDATES, filters, _TITLE_ONLY)
    rows = store.nodes([node_id for node_id, _ in hits])
    found = []
    for node_id, _ in hits:
        row = rows.get(node_id)
        if row is None:
            continue
        other = set(analyzer.terms(row.title))
        if len(words & other) / len(words | other) >= JACCARD:
            found.append((node_id, row.title))
    return found


def similar_warning(note_id: str, title: str) -> str:
    return (f"a similar note exists: {note_id} ({title}); if it says the same, forget one or "
            "supersede it")
