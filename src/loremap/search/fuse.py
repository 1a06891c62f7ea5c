"""Fusion of ranked lists (Reciprocal Rank Fusion) and diversification (MMR)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence


def rrf(lists: Mapping[str, Sequence[str]], weights: Mapping[str, float], k: int = 60
        ) -> list[tuple[str, float]]:
    """Ids by the sum over lists of weight / (k + rank), rank 1-based; ties by first seen.

    RRF needs no score calibration between lists (a BM25 score and a PPR probability are not
    comparable), and an item high in two lists beats one top in a single list.
    """
    scores: dict[str, float] = {}
    for name, ids in lists.items():
        weight = weights.get(name, 1.0)
        if weight <= 0:
            continue
        for rank, node_id in enumerate(ids, start=1):
            scores[node_id] = scores.get(node_id, 0.0) + weight / (k + rank)
    order = {node_id: i for i, node_id in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))


def mmr(ranked: Sequence[tuple[str, float]], similarity: Callable[[str, str], float],
        trade_off: float, top: int) -> list[tuple[str, float]]:
    """The first `top` of `ranked` reordered by Maximal Marginal Relevance: each pick maximises
    trade_off * relevance - (1 - trade_off) * (highest similarity to what is already picked),
    relevance being the score scaled to the best one. The rest follow in their order."""
    if not ranked or trade_off <= 0 or trade_off >= 1:
        return list(ranked)
    best = ranked[0][1] or 1.0
    pool = list(ranked[:top])
    picked: list[tuple[str, float]] = []
    while pool:
        def value(pair: tuple[str, float]) -> float:
            penalty = max((similarity(pair[0], p[0]) for p in picked), default=0.0)
            return trade_off * pair[1] / best - (1 - trade_off) * penalty

        choice = max(pool, key=value)
        pool.remove(choice)
        picked.append(choice)
    return picked + list(ranked[top:])
