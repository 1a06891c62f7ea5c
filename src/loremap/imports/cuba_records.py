"""The rows of cuba-memorys, parsed once into typed records, whichever way they were read.

A sync bundle (`cuba_bundle.py`) and the live PostgreSQL database (`cuba_db.py`) hold the same
rows: the bundle's JSON objects carry the columns of the tables they were exported from
(`brain_entities`, `brain_observations`, `brain_episodes`, `brain_errors`, `brain_relations`,
`brain_procedures`, `brain_tombstones`). Both readers turn a row into one of these records
through `from_row`, so the mapping onto loremap's notes (`cuba.py`) is written once. Schema 1
bundles lack the fields schema 2 added (`version`, `updated_at`, `trust`, ...): they default.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import NamedTuple

from loremap.errors import InvalidInput

Row = Mapping[str, object]


class Observation(NamedTuple):
    id: str
    entity_id: str
    content: str
    type: str  # fact, decision, lesson, preference, context, tool_usage, error, solution
    created_at: str | None
    trust: str  # trusted | quarantined | ... (schema 1: always trusted)
    source: str


class Entity(NamedTuple):
    id: str
    name: str
    type: str  # concept, project, technology, person, pattern, config
    created_at: str | None
    observations: tuple[Observation, ...]


class Episode(NamedTuple):
    id: str
    entity_id: str | None
    content: str
    actors: tuple[str, ...]
    artifacts: tuple[str, ...]
    started_at: str | None
    trust: str


class ErrorRow(NamedTuple):
    id: str
    error_type: str
    message: str
    solution: str | None
    resolved: bool
    created_at: str | None
    trust: str


class RelationRow(NamedTuple):
    id: str
    from_entity: str
    to_entity: str
    type: str  # uses, causes, implements, depends_on, related_to, ...
    bidirectional: bool


class Step(NamedTuple):
    do: str
    run: str
    expect: str


class Procedure(NamedTuple):
    id: str
    name: str
    trigger: str
    preconditions: str
    steps: tuple[Step, ...]
    verification: str
    successes: int
    failures: int
    created_at: str | None


class Tombstone(NamedTuple):
    table: str  # brain_entities, brain_observations, ...
    row_id: str


def text(row: Row, key: str, default: str = "") -> str:
    """`row[key]` as a string: absent or null gives `default`, anything else not a string is
    refused (a bundle is JSON anyone with push access could have written)."""
    value = row.get(key)
    if value is None:
        return default
    if isinstance(value, str):
        return value
    raise InvalidInput(f"field {key!r} must be a string, not {type(value).__name__}")


def required(row: Row, key: str) -> str:
    value = text(row, key)
    if not value:
        raise InvalidInput(f"field {key!r} is missing")
    return value


def optional(row: Row, key: str) -> str | None:
    return text(row, key) or None


def when(row: Row, key: str) -> str | None:
    """An ISO 8601 time, from a JSON string or a database `datetime`."""
    value = row.get(key)
    if isinstance(value, datetime):
        return value.isoformat()
    return optional(row, key)


def count(row: Row, key: str) -> int:
    value = row.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"field {key!r} must be a count, not {value!r}")
    return value


def flag(row: Row, key: str) -> bool:
    value = row.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidInput(f"field {key!r} must be true or false, not {value!r}")
    return value


def texts(row: Row, key: str) -> tuple[str, ...]:
    value = row.get(key)
    if value is None:
        return ()
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"field {key!r} must be a list of strings")
    return tuple(value)


def observation(row: Row, entity_id: str) -> Observation:
    return Observation(id=required(row, "id"), entity_id=text(row, "entity_id", entity_id),
                       content=text(row, "content"), type=text(row, "observation_type", "fact"),
                       created_at=when(row, "created_at"), trust=text(row, "trust", "trusted"),
                       source=text(row, "source", "agent"))


def decision(row: Row) -> Observation:
    """A `decisions/<id>.json` file of older releases: `{"id", "content"}`."""
    return Observation(id=required(row, "id"), entity_id="", content=text(row, "content"),
                       type="decision", created_at=when(row, "created_at"),
                       trust=text(row, "trust", "trusted"), source="agent")


def entity(row: Row, observations: tuple[Observation, ...]) -> Entity:
    return Entity(id=required(row, "id"), name=required(row, "name"),
                  type=text(row, "entity_type", "concept"), created_at=when(row, "created_at"),
                  observations=observations)


def episode(row: Row) -> Episode:
    return Episode(id=required(row, "id"), entity_id=optional(row, "entity_id"),
                   content=text(row, "content"), actors=texts(row, "actors"),
                   artifacts=texts(row, "artifacts"), started_at=when(row, "started_at"),
                   trust=text(row, "trust", "trusted"))


def error(row: Row) -> ErrorRow:
    return ErrorRow(id=required(row, "id"), error_type=text(row, "error_type"),
                    message=text(row, "error_message"), solution=optional(row, "solution"),
                    resolved=flag(row, "resolved"), created_at=when(row, "created_at"),
                    trust=text(row, "trust", "trusted"))


def relation(row: Row) -> RelationRow:
    return RelationRow(id=required(row, "id"), from_entity=required(row, "from_entity"),
                       to_entity=required(row, "to_entity"),
                       type=text(row, "relation_type", "related_to"),
                       bidirectional=flag(row, "bidirectional"))


def _step(value: object) -> Step:
    if isinstance(value, str):
        return Step(value, "", "")
    if not isinstance(value, Mapping):
        raise InvalidInput("a procedure step must be an object or a string")
    return Step(text(value, "do"), text(value, "run"), text(value, "expect"))


def procedure(row: Row) -> Procedure:
    steps = row.get("steps") or []
    if not isinstance(steps, list):
        raise InvalidInput("field 'steps' must be a list")
    return Procedure(id=required(row, "id"), name=required(row, "name"),
                     trigger=text(row, "trigger_context"),
                     preconditions=text(row, "preconditions"),
                     steps=tuple(_step(step) for step in steps),
                     verification=text(row, "verification"),
                     successes=count(row, "success_count"), failures=count(row, "failure_count"),
                     created_at=when(row, "created_at"))


def tombstone(row: Row) -> Tombstone:
    return Tombstone(table=required(row, "table_name"), row_id=required(row, "row_id"))
