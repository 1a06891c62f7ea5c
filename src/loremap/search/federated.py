"""Recall over a shared database and the personal notes' own index at once.

Personal notes never enter a shared database (teammates would read them), so on a shared
store they keep a local index of their own. Each index is searched by its own engine, with
its own abstention: a personal note comes in only when it holds enough of the question. The
two answers are merged by fused score (both engines fuse the same lists with the same RRF
weights, so a score says how strongly the lists agree on an item) and packed again into the
request's budget.
"""

from __future__ import annotations

import time

from loremap.search.engine import Engine, Recall, Request, Signal
from loremap.search.render import Item, pack


class Federated:
    """`Engine`'s `recall` and `rank` over the project's engine and the personal one."""

    def __init__(self, project: Engine, personal: Engine) -> None:
        self.project = project
        self.personal = personal
        self.store = project.store  # what callers inspect: the project's store and tuning
        self.config = project.config

    def recall(self, request: Request) -> Recall:
        started = time.perf_counter()
        found = self.project.recall(request)
        if not self.personal.store.node_count():
            return found
        mine = self.personal.recall(request)
        if mine.abstained or not mine.items:
            return found
        if found.abstained or not found.items:
            return mine._replace(seconds=time.perf_counter() - started)
        packed = pack(_by_score(found.items, mine.items), request.budget, request.limit)
        return Recall(packed.items, packed.tokens,
                      found.left_out + mine.left_out + packed.left_out, False, "",
                      found.terms, time.perf_counter() - started)

    def abstention(self, request: Request) -> Signal:
        """The signal `recall` abstains on: the better of the two indexes' (it answers when
        either does)."""
        mine = self.project.abstention(request)
        if not self.personal.store.node_count():
            return mine
        found = [s for s in (mine, self.personal.abstention(request)) if not s.always]
        return max(found, key=lambda s: s.coverage) if found else mine

    def rank(self, request: Request, render_items: bool = True) -> list[Item]:
        ranked = self.project.rank(request, render_items)
        if self.personal.store.node_count():
            ranked = _by_score(ranked, self.personal.rank(request, render_items))
        return ranked[: request.limit]


def _by_score(project: list[Item], personal: list[Item]) -> list[Item]:
    """Both lists by fused score, the project's first on a tie; an id both hold (a project
    note wins over a personal one of the same id) is kept once."""
    seen = {item.id for item in project}
    merged = [*project, *(item for item in personal if item.id not in seen)]
    return sorted(merged, key=lambda item: -item.score)
