"""What both stores check before they keep or compare vectors, and say when they refuse.

A model's vectors all have one dimension, recorded the first time the model stores any: a
vector of another dimension would be compared with nothing meaningful (an endpoint swapped
for another model under the same name, a model switched mid-life), so it is refused with a
line that says how to start again (`loremap reembed`), and nothing is written. Here, in a
neutral module, so that SQLite and PostgreSQL refuse the same input with the same words.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence

from loremap.errors import InvalidInput

REEMBED = "run `loremap reembed` to embed every node again with one model"


def dimension_mismatch(model: str, recorded: int, dim: int) -> InvalidInput:
    return InvalidInput(f"the index holds {model} vectors of {recorded} dimensions, not {dim}: "
                        f"{REEMBED}")


def checked_rows(model: str, dim: int, recorded: int | None,
                 rows: Iterable[tuple[str, int, Sequence[float]]]
                 ) -> list[tuple[str, int, array[float]]]:
    """`rows` (node id, chunk, vector) with each vector as float32 (both stores keep
    float32), once every one is known good: the model's recorded dimension (None: not yet
    recorded) is `dim`, each vector has `dim` numbers, finite as float32, each chunk is a
    number >= 0. Raises `InvalidInput` otherwise."""
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
            values = array("f", vec)
        except (TypeError, ValueError, OverflowError):
            raise InvalidInput(f"the vector of {node_id} (chunk {chunk}) is not a list of "
                               "numbers") from None
        if len(values) != dim:
            raise InvalidInput(f"the vector of {node_id} (chunk {chunk}) has {len(values)} "
                               f"dimensions, not {dim}: {REEMBED}")
        # One sum, not a test per number (which would cost more than the rest of the write):
        # a NaN or an infinity, or a number beyond float32's range (it became infinite),
        # makes the sum NaN or infinite.
        if not math.isfinite(sum(values)):
            raise InvalidInput(f"the vector of {node_id} (chunk {chunk}) holds a number that "
                               "is not finite as a float32")
        out.append((node_id, chunk, values))
    return out
