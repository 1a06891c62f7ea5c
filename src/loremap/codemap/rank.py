"""PageRank over the file graph: which files the rest of the code leans on.

Plain power iteration over a weighted adjacency list, standard library only; a graph of a few
thousand files converges in well under a second, and a warm start from the previous ranks
(the index keeps them) makes a re-rank after a small change take a handful of iterations.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

DAMPING = 0.85


def pagerank(nodes: Iterable[str], edges: Iterable[tuple[str, str, float]],
             start: Mapping[str, float] | None = None, tolerance: float = 1e-8,
             max_iterations: int = 100) -> dict[str, float]:
    """Ranks summing to 1 for `nodes`, given weighted directed `edges` between them.

    Edges to or from unknown nodes and self-loops are ignored. Dangling nodes (no out-edges)
    spread their rank evenly, as in the usual formulation.
    """
    order = sorted(set(nodes))
    n = len(order)
    if n == 0:
        return {}
    index = {node: i for i, node in enumerate(order)}
    out_weight = [0.0] * n
    incoming: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for src, dst, weight in edges:
        i, j = index.get(src), index.get(dst)
        if i is None or j is None or i == j or weight <= 0:
            continue
        incoming[j].append((i, weight))
        out_weight[i] += weight
    links = [[(i, w / out_weight[i]) for i, w in incoming.get(j, ())] for j in range(n)]
    dangling = [i for i in range(n) if out_weight[i] == 0]
    rank = _initial(order, start)
    base = (1.0 - DAMPING) / n
    for _ in range(max_iterations):
        spill = DAMPING * sum(rank[i] for i in dangling) / n
        new = [base + spill + DAMPING * sum(rank[i] * share for i, share in links[j])
               for j in range(n)]
        delta = sum(abs(a - b) for a, b in zip(new, rank, strict=True))
        rank = new
        if delta < tolerance:
            break
    return {node: rank[i] for i, node in enumerate(order)}


def _initial(order: list[str], start: Mapping[str, float] | None) -> list[float]:
    n = len(order)
    if not start:
        return [1.0 / n] * n
    values = [max(start.get(node, 0.0), 0.0) or 1.0 / n for node in order]
    total = sum(values)
    return [v / total for v in values]
