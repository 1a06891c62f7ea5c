"""What both stores check before they keep or compare vectors, and say when they refuse.

A model's vectors all have one dimension, recorded the first time the model stores any: a
vector of another dimension would be compared with nothing meaningful (an endpoint swapped
for another model under the same name, a model switched mid-life), so it is refused with a
line that says how to start again (`loremap reembed`), and nothing is written. Here, in a
neutral module, so that SQLite and PostgreSQL refuse the same input with the same words.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from loremap.errors import InvalidInput

FLOAT32_MAX = 3.4028234663852886e38
REEMBED = "run `loremap reembed` to embed every node again with one model"


def dimension_mismatch(model: str, recorded: int, dim: int) -> InvalidInput:
    return InvalidInput(f"the index holds {model} vectors of {recorded} dimensions, not {dim}: "
                        f"{REEMBED}")


def checked_rows(model: str, dim: int, recorded: int | None,
                 rows: Iterable[tuple[str, int, Sequence[float]]]
                 ) -> list[tuple[str, int, list[float]]]:
    """`rows` (node id, chunk, vector) as lists of floats, once every one is known good: the
    model's recorded dimension (None: not yet recorded) is `dim`, each vector has `dim`
    finite numbers, each chunk is a number >= 0. Raises `InvalidInput` otherwise."""
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise InvalidInput(f"a vector dimension must be a positive integer, not {dim!r}")
    if recorded is not None and recorded != dim:
        raise dimension_mismatch(model, recorded, dim)
    out = []
    for node_id, chunk, vec in rows:
        if not isinstance(node_id, str) or not node_id:
            raise InvalidInput(f"a vector's node id must be a non-empty string, not {node_id!r}")
        if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 0:
            raise InvalidInput(f"chunk {chunk!r} of {node_id}: a chunk is a number >= 0")
        try:
            values = [float(x) for x in vec]
        except (TypeError, ValueError):
            raise InvalidInput(f"the vector of {node_id} (chunk {chunk}) is not a list of "
                               "numbers") from None
        if len(values) != dim:
            raise InvalidInput(f"the vector of {node_id} (chunk {chunk}) has {len(values)} "
                               f"dimensions, not {dim}: {REEMBED}")
        if not _float32(values):
            raise InvalidInput(f"the vector of {node_id} (chunk {chunk}) holds a number that "
                               "is not a finite float32")
        out.append((node_id, chunk, values))
    return out


def _float32(values: Sequence[float]) -> bool:
    """Whether every number is finite and within float32's range, in three passes of C (a
    test per number costs more than the rest of a write): a NaN or an infinity makes the sum
    NaN or infinite; a number out of range shows in the minimum or the maximum."""
    return (math.isfinite(sum(values)) and max(values) <= FLOAT32_MAX
            and min(values) >= -FLOAT32_MAX)
