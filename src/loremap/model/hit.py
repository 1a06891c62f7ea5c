"""A search result as the store returns it: enough to print a line and open the note."""

from __future__ import annotations

from typing import NamedTuple


class Hit(NamedTuple):
    """One ranked item; `score` is higher-is-better, `why` says why it is here."""

    id: str
    kind: str
    type: str
    title: str
    path: str
    status: str
    scope: str
    score: float
    snippet: str
    why: str = ""
