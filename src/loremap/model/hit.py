"""A search result as the store returns it: enough to print a line and open the note."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Hit:
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
