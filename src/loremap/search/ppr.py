"""Personalized PageRank by local forward push (Andersen, Chung and Lang, 2006).

From a few seed nodes, probability mass spreads along the graph's edges (note links, notes'
files, imports, references, co-change). Each push settles a share `alpha` of a node's residual
mass on it and hands the rest to its neighbours in proportion to the edge weights. Only nodes
holding enough residual are pushed, and at most `max_pushes` of them, so the work depends on
the seeds' neighbourhood and never on the size of the graph. A hub (a file everything imports)
collects mass from everywhere, so the final score is discounted by the log of its degree.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping
from typing import NamedTuple

from loremap.model.search import Neighbor

# How much an edge of each origin carries, before its own weight: a link someone declared says
# more than a shared name does. Reference weights (sums over shared names) are log-damped.
ORIGIN_WEIGHTS: Mapping[str, float] = {
    "declared": 2.0, "files": 2.0, "import": 1.0, "cochange": 1.0, "reference": 0.5,
}


# Which of several edges between two nodes names their relation best (lower first).
_EXPLAINS: Mapping[str, int] = {"declared": 0, "files": 1, "import": 2, "cochange": 3,
                                "reference": 4}


class Via(NamedTuple):
    """The edge that brought a node the most mass: from `node`, `outgoing` seen from `node`."""

    node: str
    rel: str
    origin: str
    outgoing: bool


def edge_weight(edge: Neighbor, origins: Mapping[str, float] = ORIGIN_WEIGHTS) -> float:
    base = origins.get(edge.origin, 0.5)
    weight = math.log1p(edge.weight) if edge.origin == "reference" else edge.weight
    return base * max(weight, 0.0)


def push(neighbors: Callable[[str], list[Neighbor]], seeds: Mapping[str, float],
         alpha: float = 0.3, max_pushes: int = 40, epsilon: float = 1e-4,
         degree_over: Callable[[str, int], bool] | None = None,
         origins: Mapping[str, float] = ORIGIN_WEIGHTS
         ) -> tuple[dict[str, float], dict[str, Via], dict[str, int]]:
    """Approximate PPR scores from `seeds` (node -> weight), the best `Via` of each reached
    node, and the degree of every node looked at.

    A node is pushed while its residual is at least `epsilon` times its degree (the rule of
    Andersen, Chung and Lang): a hub is only walked through when much mass reaches it, which
    keeps the work small where the graph is dense. `degree_over(node, n)` answers whether a
    node has more than n edges without reading them (a hub's thousands of edges would cost more
    than the whole walk). At most `max_pushes` pushes, and twice as many degree checks.
    """
    total = sum(seeds.values())
    if total <= 0:
        return {}, {}, {}
    residual = {node: weight / total for node, weight in seeds.items() if weight > 0}
    score: dict[str, float] = {}
    via: dict[str, Via] = {}
    best_share: dict[str, float] = {}
    degrees: dict[str, int] = {}
    heap = [(-mass, node) for node, mass in residual.items()]
    heapq.heapify(heap)
    pushes = checks = 0
    hubs: set[str] = set()
    while heap and pushes < max_pushes and checks < 2 * max_pushes:
        neg, node = heapq.heappop(heap)
        mass = residual.get(node, 0.0)
        if mass < epsilon or -neg != mass or node in hubs:
            continue  # stale heap entry, too little to matter, or a hub already refused
        if degree_over is not None and node not in seeds and node not in degrees:
            checks += 1
            if degree_over(node, int(mass / epsilon)):
                hubs.add(node)  # kept as residual: pushing it would spread mass thin
                continue
        pushes += 1
        edges = neighbors(node)
        degrees[node] = len(edges)
        residual[node] = 0.0
        score[node] = score.get(node, 0.0) + alpha * mass
        # Parallel edges (an import and a reference between the same two files) add up; the
        # one that explains the link best is kept for `via`.
        joined: dict[str, tuple[float, Neighbor]] = {}
        for edge in edges:
            weight = edge_weight(edge, origins)
            if weight <= 0 or edge.node == node:
                continue
            total_w, shown = joined.get(edge.node, (0.0, edge))
            if _EXPLAINS.get(edge.origin, 9) < _EXPLAINS.get(shown.origin, 9):
                shown = edge
            joined[edge.node] = (total_w + weight, shown)
        weight_sum = sum(w for w, _ in joined.values())
        if weight_sum <= 0:
            continue
        spread = (1 - alpha) * mass / weight_sum
        for other, (weight, edge) in joined.items():
            share = spread * weight
            residual[other] = residual.get(other, 0.0) + share
            if share > best_share.get(other, 0.0):
                best_share[other] = share
                via[other] = Via(node, edge.rel, edge.origin, not edge.outgoing)
            heapq.heappush(heap, (-residual[other], other))
    for node, mass in residual.items():  # what was never pushed still counts, a little
        if mass > 0:
            score[node] = score.get(node, 0.0) + alpha * mass
    return score, via, degrees


def discounted(score: Mapping[str, float], degree: Callable[[str], int]) -> dict[str, float]:
    """Scores divided by 1 + ln(1 + degree): hubs reached from everywhere rank lower."""
    return {node: value / (1.0 + math.log1p(degree(node))) for node, value in score.items()}
