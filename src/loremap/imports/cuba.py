"""cuba-memorys (MemoryIndustry) onto loremap's notes: a sync bundle or the live database.

cuba-memorys keeps a knowledge graph in PostgreSQL: entities with their observations,
episodes, errors (with the solution that resolved them), procedures with their success and
failure counts, relations between entities, and tombstones of deleted rows. `cuba-memorys sync
export` writes the same rows as a bundle of JSON files (`cuba_bundle.py` reads it);
`read_database` reads the tables themselves (`cuba_db.py`). Both give a `Graph` of typed
records, and this module maps it once:

- an entity is a concept note; its observations are the note's body, except those with a type
  of their own (a decision, a preference), a quarantined one, and any that would not fit, which
  become notes of their own linked to it (`part_of`, `about`);
- a decision recorded with `cuba_decreto` lives in the tool's `architecture_decisions` entity:
  it becomes a decision note, and the container itself no note;
- an error is an error note, its solution a procedure note named as its remedy;
- a procedure keeps its success and failure counts; a relation is a link; an episode is an
  episode note dated when it started; a tombstone is a `Deleted`.

Every origin is the tool's own row id (`entity:<uuid>`, `observation:<uuid>`, ...), stable
across re-exports, so a re-import updates the notes it wrote before.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

from loremap.imports.cuba_records import (
    Entity,
    Episode,
    ErrorRow,
    Observation,
    Procedure,
    RelationRow,
    Tombstone,
)
from loremap.imports.items import Deleted, Item, Skipped

TOOL = "cuba"
# One observation larger than this is not imported (with a line saying so); an entity's body
# holds its observations up to ENTITY_BODY_BYTES, the rest become notes of their own. Both stay
# well under the vault's default note limit (vault.max_note_bytes, 256 KiB).
MAX_OBSERVATION_BYTES = 64 * 1024
ENTITY_BODY_BYTES = 96 * 1024
TITLE_CHARS = 100
# cuba_decreto files every decision under this entity; it is a folder, not a concept.
DECISIONS_ENTITY = "architecture_decisions"
# Observation types that are notes of their own, with their loremap type.
OWN_NOTE = {"decision": "decision", "preference": "preference"}
RELATIONS = {"uses": "depends_on", "depends_on": "depends_on", "causes": "causes",
             "implements": "part_of", "part_of": "part_of", "fixes": "fixes",
             "affects": "affects", "related_to": "relates", "supersedes": "supersedes"}
TABLES = {"brain_entities": "entity", "brain_observations": "observation",
          "brain_episodes": "episode", "brain_errors": "error", "brain_procedures": "procedure"}
QUARANTINED = "quarantined"

Read = Iterator[Item | Skipped | Deleted]
T = TypeVar("T")


class Placed(NamedTuple, Generic[T]):
    """A record with where it was read (a bundle file or a table row), for messages."""

    record: T
    where: str


class Graph(NamedTuple):
    """Everything read from one bundle or database, before it is mapped."""

    entities: list[Placed[Entity]]
    relations: list[Placed[RelationRow]]
    episodes: list[Placed[Episode]]
    errors: list[Placed[ErrorRow]]
    procedures: list[Placed[Procedure]]
    tombstones: list[Placed[Tombstone]]
    skipped: list[Skipped]
    # `decisions/<id>.json` of older releases; each is also an observation of its entity.
    decisions: tuple[Placed[Observation], ...] = ()


def read_bundle(path: Path) -> Read:
    """The items of the cuba-memorys sync bundle in `path` (schema 1 or 2).

    The manifest is checked before anything is yielded: an unknown schema, or counts that do
    not match the files, raise `InvalidInput` and nothing is imported. A file that does not
    parse is one `Skipped` naming it; a symlink or `..` out of the bundle is refused.
    """
    from loremap.imports.cuba_bundle import read

    return items(read(path))


def read_database(url: str) -> Read:
    """The items of the live cuba-memorys PostgreSQL database at `url`, read with read-only
    queries (`StoreError` when it cannot be reached or is not a cuba-memorys database)."""
    from loremap.imports.cuba_db import read

    return items(read(url))


def items(graph: Graph) -> Read:
    """Map a read graph onto items, skips and deletions (the skips of reading first)."""
    yield from graph.skipped
    known = {placed.record.id for placed in graph.entities}
    links, skipped = _links(graph.relations, known)
    yield from skipped
    for placed in graph.entities:
        yield from _entity(placed, links.get(placed.record.id, ()))
    seen = {obs.id for placed in graph.entities for obs in placed.record.observations}
    container = Entity("", DECISIONS_ENTITY, "concept", None, ())
    for decision in graph.decisions:
        if decision.record.id not in seen:
            yield _observation(decision.record, container, "", decision.where)
    for episode in graph.episodes:
        yield _episode(episode, known)
    for error in graph.errors:
        yield from _error(error)
    for proc in graph.procedures:
        yield _procedure(proc)
    yield from _tombstones(graph.tombstones)


def origin(kind: str, row_id: str) -> str:
    return f"{kind}:{row_id}"


def _links(relations: Iterable[Placed[RelationRow]], known: set[str]
           ) -> tuple[dict[str, list[tuple[str, str]]], list[Skipped]]:
    links: dict[str, list[tuple[str, str]]] = {}
    skipped: list[Skipped] = []
    for placed in relations:
        rel = placed.record
        missing = [end for end in (rel.from_entity, rel.to_entity) if end not in known]
        if missing:
            skipped.append(Skipped(placed.where, f"relation {rel.type} {rel.id} points to "
                                   f"entity {missing[0]}, which is not in the source",
                                   origin("relation", rel.id)))
            continue
        kind = RELATIONS.get(rel.type, "relates")
        pairs = [(rel.from_entity, rel.to_entity)]
        if rel.bidirectional:
            pairs.append((rel.to_entity, rel.from_entity))
        for source, target in pairs:
            link = (kind, origin("entity", target))
            if link not in links.setdefault(source, []):
                links[source].append(link)
    return links, skipped


def _entity(placed: Placed[Entity], links: Iterable[tuple[str, str]]) -> Read:
    entity, where = placed
    me = origin("entity", entity.id)
    lines: list[str] = []
    size = 0
    for obs in entity.observations:
        content = obs.content.strip()
        if len(content.encode("utf-8")) > MAX_OBSERVATION_BYTES:
            yield Skipped(where, f"observation {obs.id} is {len(content.encode('utf-8')):,} "
                          f"bytes, over the {MAX_OBSERVATION_BYTES:,} an imported note takes "
                          "from one observation: not imported", origin("observation", obs.id))
            continue
        line = _bullet(obs)
        own = (obs.type in OWN_NOTE or obs.trust == QUARANTINED
               or size + len(line.encode("utf-8")) > ENTITY_BODY_BYTES)
        if own:
            yield _observation(obs, entity, me, where)
            continue
        lines.append(line)
        size += len(line.encode("utf-8")) + 1
    links = tuple(links)
    if entity.name == DECISIONS_ENTITY and not lines and not links:
        return
    tags = (entity.type.lower(),) if entity.type and entity.type != "concept" else ()
    yield Item(tool=TOOL, origin=me, type="concept", title=_title(entity.name),
               body="\n".join(lines), links=links, tags=tags, recorded_at=entity.created_at,
               where=where)


def _bullet(obs: Observation) -> str:
    label = "" if obs.type == "fact" else f"({obs.type.replace('_', ' ')}) "
    first, *rest = obs.content.strip().splitlines() or [""]
    return "\n".join([f"- {label}{first}", *(f"  {line}" for line in rest)])


def _observation(obs: Observation, entity: Entity, owner: str, where: str) -> Item:
    kind = OWN_NOTE.get(obs.type, "concept")
    title, body = _split_title(obs.content)
    # A decision filed under the container is about nothing in particular.
    links = () if entity.name == DECISIONS_ENTITY else (
        ("about" if kind in OWN_NOTE.values() else "part_of", owner),)
    return Item(tool=TOOL, origin=origin("observation", obs.id), type=kind, title=title,
                body=body, links=links,
                status=QUARANTINED if obs.trust == QUARANTINED else "active",
                recorded_at=obs.created_at, where=where)


def _split_title(content: str) -> tuple[str, str]:
    """A title from the first line (cuba_decreto writes `**Title**` there), the rest as body;
    a single line is both."""
    first, _, rest = content.strip().partition("\n")
    title = _title(first.strip().strip("*#").strip())
    return title, (rest.strip() if rest.strip() else content.strip())


def _title(text: str) -> str:
    text = " ".join(text.split()) or "untitled"
    return text if len(text) <= TITLE_CHARS else text[:TITLE_CHARS - 1].rstrip() + "…"


def _episode(placed: Placed[Episode], known: set[str]) -> Item:
    episode, where = placed
    body = [episode.content.strip()]
    if episode.actors:
        body.append("Actors: " + ", ".join(episode.actors))
    if episode.artifacts:
        body.append("Artifacts: " + ", ".join(episode.artifacts))
    links = ((("about", origin("entity", episode.entity_id)),)
             if episode.entity_id in known else ())
    return Item(tool=TOOL, origin=origin("episode", episode.id), type="episode",
                title=_title(episode.content.strip().partition("\n")[0]),
                body="\n\n".join(body), links=links, recorded_at=episode.started_at,
                status=QUARANTINED if episode.trust == QUARANTINED else "active", where=where)


def _error(placed: Placed[ErrorRow]) -> Read:
    error, where = placed
    me = origin("error", error.id)
    status = QUARANTINED if error.trust == QUARANTINED else "active"
    remedy = origin("remedy", error.id) if error.solution and error.resolved else None
    label = f"{error.error_type}: " if error.error_type else ""
    yield Item(tool=TOOL, origin=me, type="error",
               title=_title(label + error.message.strip().partition("\n")[0]),
               body=error.message.strip(), error=error.message.strip(), remedy=remedy,
               recorded_at=error.created_at, status=status,
               tags=(error.error_type.lower(),) if error.error_type else (), where=where)
    if remedy is not None and error.solution:
        yield Item(tool=TOOL, origin=remedy, type="procedure",
                   title=_title(error.solution.strip().partition("\n")[0]),
                   body=error.solution.strip(), links=(("fixes", me),),
                   recorded_at=error.created_at, status=status, where=where)


def _procedure(placed: Placed[Procedure]) -> Item:
    proc, where = placed
    parts = []
    if proc.trigger:
        parts.append(f"When: {proc.trigger}")
    if proc.preconditions:
        parts.append(f"Preconditions: {proc.preconditions}")
    steps = [f"{n}. {step.do}" + (f": `{step.run}`" if step.run else "")
             + (f" (expect: {step.expect})" if step.expect else "")
             for n, step in enumerate(proc.steps, 1)]
    if steps:
        parts.append("\n".join(steps))
    if proc.verification:
        parts.append(f"Verification: {proc.verification}")
    return Item(tool=TOOL, origin=origin("procedure", proc.id), type="procedure",
                title=_title(proc.name), body="\n\n".join(parts), successes=proc.successes,
                failures=proc.failures, recorded_at=proc.created_at, where=where)


def _tombstones(tombstones: Iterable[Placed[Tombstone]]) -> Read:
    for placed in tombstones:
        stone, where = placed
        kind = TABLES.get(stone.table)
        if kind is not None:
            yield Deleted(origin(kind, stone.row_id), where)
            if kind == "error":
                yield Deleted(origin("remedy", stone.row_id), where)
        elif stone.table != "brain_relations":
            # A deleted relation is honoured by its absence from the entity's links.
            yield Skipped(where, f"tombstone of {stone.table} {stone.row_id}: loremap "
                          "imports no such rows", origin(stone.table, stone.row_id))
