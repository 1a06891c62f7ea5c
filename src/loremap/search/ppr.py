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
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple, Protocol

from loremap.model.search import Neighbor

# How much an edge of each origin carries, before its own weight: a link someone declared says
# more than a shared name does. Reference weights (sums over shared names) are log-damped.
# A declared link is walked both ways, but not alike: a note links back to notes that existed
# when it was written, so the notes linking *to* a seed came after it and hold what followed
# (the reply to a turn, the outcome of an episode, the fix of a bug). "follow-up" is a declared
# link walked from its target to the note declaring it (LoCoMo dev R@10 75.8 -> 77.1, paired
# +1.3 [+0.3, +2.5]; docs/search.md).
ORIGIN_WEIGHTS: Mapping[str, float] = {
    "declared": 2.0, "follow-up": 8.0, "files": 2.0, "import": 1.0, "cochange": 1.0,
    "reference": 0.5,
}
FOLLOW_UP = "follow-up"


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
    origin = FOLLOW_UP if edge.origin == "declared" and not edge.outgoing else edge.origin
    base = origins.get(origin, origins.get(edge.origin, 0.5))
    weight = math.log1p(edge.weight) if edge.origin == "reference" else edge.weight
    return base * max(weight, 0.0)


class Graph(Protocol):
    """The edges the walk reads (the search store's). `edge_batch`: how many nodes' edges one
    read should fetch; 1 where a read is a local call (SQLite), more where each is a round
    trip to a server (PostgreSQL)."""

    edge_batch: int

    def neighborhoods(self, nodes: Sequence[str], cap: int
                      ) -> Mapping[str, list[Neighbor] | None]:
        """Every node of `nodes` -> its edges seen from it, heaviest first; None for a node
        with more than `cap` edges, whose edges are not read."""
        ...

    def neighbors(self, node_id: str, limit: int = 256) -> list[Neighbor]: ...

    def degree_over(self, node_id: str, limit: int) -> bool: ...


CAP = 256  # the edges read of a node: a hub's thousands would cost more than the whole walk
BATCH = 8  # nodes whose edges are read together, by default (see `Graph.edge_batch`)


def push(graph: Graph, seeds: Mapping[str, float], alpha: float = 0.3, max_pushes: int = 40,
         epsilon: float = 1e-4, origins: Mapping[str, float] = ORIGIN_WEIGHTS,
         batch: int = BATCH) -> tuple[dict[str, float], dict[str, Via], dict[str, int]]:
    """Approximate PPR scores from `seeds` (node -> weight), the best `Via` of each reached
    node, and the degree of every node whose edges were read.

    A node is pushed while its residual is at least `epsilon` times its degree (the rule of
    Andersen, Chung and Lang): a hub is only walked through when much mass reaches it, which
    keeps the work small where the graph is dense. A hub's edges are never read to learn
    that: `neighborhoods` counts at most `CAP` + 1 of them, and `degree_over(node, n)` answers
    for larger n. At most `max_pushes` pushes, and twice as many degree checks.

    Edges are read `batch` nodes at a time: the node the walk needs and the nodes holding the
    most residual mass, which it is likely to need next. The walk is the same whatever
    `batch`; only the number of reads changes.
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

    def upcoming() -> list[str]:
        """The nodes holding the most residual mass, which the walk may push next."""
        return [node for neg, node in heapq.nsmallest(2 * batch, heap)
                if node not in hubs and -neg == residual.get(node) and -neg >= epsilon]

    reader = _Reader(graph, batch, upcoming)
    while heap and pushes < max_pushes and checks < 2 * max_pushes:
        neg, node = heapq.heappop(heap)
        mass = residual.get(node, 0.0)
        if mass < epsilon or -neg != mass or node in hubs:
            continue  # stale heap entry, too little to matter, or a hub already refused
        if node not in seeds and node not in degrees:
            checks += 1
            if reader.degree_over(node, int(mass / epsilon)):
                hubs.add(node)  # kept as residual: pushing it would spread mass thin
                continue
        pushes += 1
        edges = reader.edges(node)
        degrees[node] = len(edges)
        residual[node] = 0.0
        score[node] = score.get(node, 0.0) + alpha * mass
        joined = _joined(node, edges, origins)
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
    return score, via, {**reader.degrees(), **degrees}


def _joined(node: str, edges: list[Neighbor], origins: Mapping[str, float]
            ) -> dict[str, tuple[float, Neighbor]]:
    """Each neighbour of `node` -> the weight of its edges and the edge shown for it. Parallel
    edges (an import and a reference between the same two files) add up; the one that
    explains the link best is kept for `via`."""
    joined: dict[str, tuple[float, Neighbor]] = {}
    for edge in edges:
        weight = edge_weight(edge, origins)
        if weight <= 0 or edge.node == node:
            continue
        total_w, shown = joined.get(edge.node, (0.0, edge))
        if _EXPLAINS.get(edge.origin, 9) < _EXPLAINS.get(shown.origin, 9):
            shown = edge
        joined[edge.node] = (total_w + weight, shown)
    return joined


class _Reader:
    """The edges of the nodes the walk looks at, read `batch` nodes at a time: the node it
    needs and those `upcoming` names."""

    def __init__(self, graph: Graph, batch: int, upcoming: Callable[[], list[str]]) -> None:
        self.graph, self.batch, self.upcoming = graph, batch, upcoming
        self.known: dict[str, list[Neighbor] | None] = {}

    def _read(self, node: str) -> list[Neighbor] | None:
        if node not in self.known:
            wanted = [node]
            for other in self.upcoming() if self.batch > 1 else ():
                if len(wanted) >= self.batch:
                    break
                if other not in self.known and other not in wanted:
                    wanted.append(other)
            found = self.graph.neighborhoods(wanted, CAP)
            for other in wanted:
                self.known[other] = found.get(other, [])
        return self.known[node]

    def degree_over(self, node: str, limit: int) -> bool:
        edges = self._read(node)
        if edges is not None:
            return len(edges) > limit
        return limit <= CAP or self.graph.degree_over(node, limit)  # a hub: over CAP edges

    def edges(self, node: str) -> list[Neighbor]:
        """The node's edges; a hub's heaviest `CAP` when much mass walks through it."""
        edges = self._read(node)
        return edges if edges is not None else self.graph.neighbors(node, CAP)

    def degrees(self) -> dict[str, int]:
        """The degree of every node whose edges were all read."""
        return {node: len(edges) for node, edges in self.known.items() if edges is not None}


def discounted(score: Mapping[str, float], degree: Callable[[str], int]) -> dict[str, float]:
    """Scores divided by 1 + ln(1 + degree): hubs reached from everywhere rank lower."""
    return {node: value / (1.0 + math.log1p(degree(node))) for node, value in score.items()}
