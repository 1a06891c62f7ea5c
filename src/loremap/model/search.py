"""Records of search: what may be returned (filters) and what the index holds of a node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple


class Filters(NamedTuple):
    """Which nodes a search may return; empty tuples mean "any".

    `types` keeps notes of those types (and so no code); `paths` keeps code under one of the
    path prefixes and notes whose files or path links lie under one; `as_of` (YYYY-MM-DD) keeps
    what was valid that day: recorded by then, valid from then or earlier, not yet ended.
    """

    kinds: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ("active",)
    paths: tuple[str, ...] = ()
    as_of: str | None = None


class NodeRow(NamedTuple):
    """A node of the index as search shows it (notes, code files, modules)."""

    id: str
    kind: str
    scope: str
    type: str
    title: str
    body: str
    path: str
    status: str
    recorded_at: str | None
    valid_from: str | None
    valid_to: str | None
    superseded_by: str | None
    commit: str | None
    files: tuple[str, ...]
    file_hashes: Mapping[str, str]
    aliases: tuple[str, ...]
    rank: float
    successes: int = 0  # a procedure's track record (0 and 0 for every other node)
    failures: int = 0


class Neighbor(NamedTuple):
    """An edge seen from one end: `outgoing` when the node is its source."""

    node: str
    rel: str
    origin: str
    weight: float
    outgoing: bool


class SymbolRow(NamedTuple):
    """A definition found by name."""

    name: str
    file: str
    kind: str
    line: int


class TextQuery(NamedTuple):
    """A full-text query as analyzer tokens: each term with how many times it counts (a term
    the question repeats weighs that many times), any of them (`all_of` False) or all;
    `columns` (indexes of the text columns: 0 title, 1 body, 2 tags, 3 symbols, 4 path,
    5 content) restricts the match to those columns. `common` scores a term held by more
    than half the nodes too (IDF ln(1 + (N - n + 0.5) / (n + 0.5)), Lucene's); without it
    the score is FTS5's `bm25()`, whose IDF ln((N - n + 0.5) / (n + 0.5)) is floored at 1e-6,
    so in a small project a question's common words count for nothing. An `all_of`
    query keeps FTS5's score (its terms are all common, so they weigh alike either way)."""

    terms: tuple[str, ...]
    repeats: tuple[int, ...]
    all_of: bool = False
    columns: tuple[int, ...] = ()
    common: bool = False
