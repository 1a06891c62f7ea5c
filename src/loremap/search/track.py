"""A procedure's track record in the ranking: how often following it worked and failed.

`loremap outcome ID success|failure` (and the MCP `outcome` tool) count into the procedure's
frontmatter; the recall multiplies the procedure's fused score by

    (1 + L(successes, n)) / (1 + L(failures, n))

where L is the Wilson score interval's lower bound (z = 1.96) of a proportion out of n =
successes + failures reports. Evidence of success lifts a procedure up to twice its score,
evidence of failure cuts it down to half, and a procedure with no report, or as many of each,
keeps its score. The lower bound is what makes a few lucky reports weigh little: one success of
one scores L = 0.21 (×1.21), 47 of 50 scores L = 0.84 (×1.80), so a lucky 1/1 never outranks
47/50 at the same relevance; five failures of five give ×0.64. Being read or recalled counts
nothing: only a reported outcome moves a procedure.

The factor multiplies the procedure's BM25 score, the relevance the text lists measure, before
the lists are ranked and fused: the bm25 list, the notes list and the walk's seeds (both read
from it) then agree on the order, so two procedures equally relevant to the question are
ordered by their records in every list. Multiplied on the fused score instead, the order of
equally relevant procedures followed their tie-broken places in four lists (ranks 1 to 12 of
twelve identical texts spread the fused score 2.5 times): on the generated set of
tests/test_track_record.py the rank correlation with the true success rate was 0.20. A
procedure no text list found is not brought in by its record.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from loremap.model.search import NodeRow

Z = 1.96  # the normal quantile of a 95 % interval


def wilson(hits: int, misses: int, z: float = Z) -> tuple[float, float]:
    """The Wilson score interval of hits / (hits + misses) ((0, 1) with none)."""
    n = hits + misses
    if n <= 0:
        return 0.0, 1.0
    p = hits / n
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    middle, scale = p + z * z / (2 * n), 1 + z * z / n
    return max(0.0, (middle - spread) / scale), min(1.0, (middle + spread) / scale)


def lower_bound(hits: int, misses: int, z: float = Z) -> float:
    """The Wilson score interval's lower bound of hits / (hits + misses) (0 with none)."""
    return wilson(hits, misses, z)[0] if hits + misses > 0 else 0.0


def factor(successes: int, failures: int, weight: float = 1.0) -> float:
    """What a track record multiplies a score by (1 without one); `weight` 0 turns it off."""
    if weight <= 0 or successes + failures <= 0:
        return 1.0
    ratio = (1 + lower_bound(successes, failures)) / (1 + lower_bound(failures, successes))
    return float(ratio ** weight)


def record_text(successes: int, failures: int) -> str:
    """A track record as every front end says it."""
    return f"worked {successes} of {successes + failures} times reported"


def reason(row: NodeRow) -> str:
    """The item's "why" for its record."""
    moved = factor(row.successes, row.failures)
    way = "ranked up" if moved > 1 else "ranked down" if moved < 1 else "no effect"
    return f"{record_text(row.successes, row.failures)} ({way})"


def rescore(ranked: list[tuple[str, float]], rows: Mapping[str, NodeRow], weight: float
            ) -> tuple[list[tuple[str, float]], list[str]]:
    """A text list's (id, score) with each procedure's score multiplied by its record's
    factor, best first, and the ids whose record was reported. Rows not in `rows` keep their
    score."""
    if weight <= 0:
        return ranked, []
    out: list[tuple[str, float]] = []
    moved: list[str] = []
    for node_id, score in ranked:
        row = rows.get(node_id)
        if row is not None and row.type == "procedure" and row.successes + row.failures > 0:
            score *= factor(row.successes, row.failures, weight)
            moved.append(node_id)
        out.append((node_id, score))
    if moved:
        out.sort(key=lambda pair: -pair[1])
    return out, moved
