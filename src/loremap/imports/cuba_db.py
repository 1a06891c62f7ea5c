"""The live cuba-memorys PostgreSQL database, read with read-only queries.

The same rows a sync bundle holds, taken from the tables themselves (`brain_entities`,
`brain_observations`, `brain_relations`, `brain_episodes`, `brain_errors`, `brain_procedures`,
`brain_tombstones`), in one read-only transaction so the graph is one consistent state. Columns
later releases added (`trust` on episodes and errors, ...) are read when the table has them and
default otherwise, as a schema 1 bundle's fields do. Nothing is ever written: the session is
`read only` before the first query. Rows the database's row-level security hides from the role
connected are not seen; the table owner (the role cuba-memorys migrates with) sees them all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from loremap.errors import InvalidInput, StoreError
from loremap.imports import cuba_records as rec
from loremap.imports.cuba import Graph, Placed
from loremap.imports.items import Skipped

if TYPE_CHECKING:
    import psycopg

T = TypeVar("T")
# table: the columns the records read, with the SQL that yields each one as the bundle has it.
COLUMNS: Mapping[str, Mapping[str, str]] = {
    "brain_entities": {"id": "id::text", "name": "name", "entity_type": "entity_type",
                       "created_at": "created_at"},
    "brain_observations": {"id": "id::text", "entity_id": "entity_id::text",
                           "content": "content", "observation_type": "observation_type",
                           "created_at": "created_at", "trust": "trust", "source": "source"},
    "brain_relations": {"id": "id::text", "from_entity": "from_entity::text",
                        "to_entity": "to_entity::text", "relation_type": "relation_type",
                        "bidirectional": "bidirectional"},
    "brain_episodes": {"id": "id::text", "entity_id": "entity_id::text", "content": "content",
                       "actors": "actors", "artifacts": "artifacts",
                       "started_at": "started_at", "trust": "trust"},
    "brain_errors": {"id": "id::text", "error_type": "error_type",
                     "error_message": "error_message", "solution": "solution",
                     "resolved": "resolved", "created_at": "created_at", "trust": "trust"},
    "brain_procedures": {"id": "id::text", "name": "name", "trigger_context": "trigger_context",
                         "preconditions": "preconditions", "steps": "steps",
                         "verification": "verification", "success_count": "success_count",
                         "failure_count": "failure_count", "created_at": "created_at"},
    "brain_tombstones": {"table_name": "table_name", "row_id": "row_id::text"},
}
# Tables every release with a graph has; the others (procedures, tombstones) came later.
REQUIRED = ("brain_entities", "brain_observations", "brain_relations")
# The order rows are read in: creation, then id, so a re-read is the same list.
ORDER = {"brain_relations": "created_at, id", "brain_tombstones": "deleted_at, row_id"}


def read(url: str) -> Graph:
    """The graph of the cuba-memorys database at `url` (`StoreError` when it cannot be read)."""
    try:
        import psycopg
        from psycopg.rows import dict_row
    except ImportError:
        from loremap.store.postgres import INSTALL_HINT

        raise StoreError(f"reading a cuba-memorys database needs psycopg: {INSTALL_HINT}"
                         ) from None
    try:
        with psycopg.connect(url, row_factory=dict_row, connect_timeout=10) as conn:
            conn.read_only = True
            with conn.transaction():
                return _graph(conn)
    except psycopg.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise StoreError(f"cannot read the cuba-memorys database: {first}") from None


def _graph(conn: psycopg.Connection[dict[str, object]]) -> Graph:
    present = _columns(conn)
    missing = [table for table in REQUIRED if table not in present]
    if missing:
        raise StoreError(f"the database is not a cuba-memorys one: it has no table "
                         f"{missing[0]} (is DATABASE_URL the one cuba-memorys uses?)")
    skipped: list[Skipped] = []

    def rows(table: str, parse: Callable[[rec.Row], T]) -> list[Placed[T]]:
        return _rows(conn, table, present.get(table, set()), parse, skipped)

    observations: dict[str, list[rec.Observation]] = {}
    for placed in rows("brain_observations", lambda row: rec.observation(row, "")):
        observations.setdefault(placed.record.entity_id, []).append(placed.record)
    entities = rows("brain_entities", lambda row: rec.entity(
        row, tuple(observations.get(str(row.get("id")), ()))))
    return Graph(entities=entities, relations=rows("brain_relations", rec.relation),
                 episodes=rows("brain_episodes", rec.episode),
                 errors=rows("brain_errors", rec.error),
                 procedures=rows("brain_procedures", rec.procedure),
                 tombstones=rows("brain_tombstones", rec.tombstone), skipped=skipped)


def _columns(conn: psycopg.Connection[dict[str, object]]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for row in conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = ANY(%s)",
            [list(COLUMNS)]):
        found.setdefault(str(row["table_name"]), set()).add(str(row["column_name"]))
    return found


def _rows(conn: psycopg.Connection[dict[str, object]], table: str, present: set[str],
          parse: Callable[[rec.Row], T], skipped: list[Skipped]) -> list[Placed[T]]:
    if not present:
        return []
    wanted = COLUMNS[table]
    # Fixed identifiers from COLUMNS only: no value of the database reaches the SQL text.
    select = ", ".join(f"{sql} AS {name}" if sql.split("::")[0] in present
                       else f"NULL AS {name}" for name, sql in wanted.items())
    order = ORDER.get(table, "created_at, id")
    if not all(column.strip().split()[0] in present for column in order.split(",")):
        order = "1"
    placed: list[Placed[T]] = []
    for row in conn.execute(f"SELECT {select} FROM {table} ORDER BY {order}"):  # noqa: S608
        where = f"{table} {row.get('id') or row.get('row_id') or ''}".strip()
        try:
            placed.append(Placed(parse(row), where))
        except InvalidInput as exc:
            skipped.append(Skipped(where, f"{exc}: not imported"))
    return placed
