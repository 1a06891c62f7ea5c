"""The cuba-memorys readers, on what the real tool wrote: its sync bundles (schema 2 from the
current release, schema 1 from an older one) and its live PostgreSQL database.

The tool is installed from PyPI (tests/cuba_tool.py), driven through its MCP tools as an agent
would, and exported with `cuba-memorys sync export`; the readers' items are then checked. The
bad-input tests edit a copy of that real bundle.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import pytest

from loremap.errors import InvalidInput, StoreError, UnsafePath
from loremap.imports.cuba import MAX_OBSERVATION_BYTES, read_bundle, read_database
from loremap.imports.items import Deleted, Item, Skipped

pytestmark = pytest.mark.postgres
# A credential-shaped string (not a real token): the reader passes it on, the writer scans it.
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


class Made(NamedTuple):
    bundle: Path
    database: str
    ids: dict[str, str]


def _by_origin(found: list[Item | Skipped | Deleted]) -> dict[str, Item]:
    return {x.origin: x for x in found if isinstance(x, Item)}


async def _fill_v2(cuba: object) -> dict[str, str]:
    from cuba_tool import Cuba

    assert isinstance(cuba, Cuba)
    ids: dict[str, str] = {}
    async with cuba.session() as call:
        for name, kind in (("Payments API", "technology"), ("Ledger", "concept"),
                           ("Old cache", "concept")):
            made = await call("cuba_alma", action="create", name=name, entity_type=kind)
            ids[name] = str(made["entity"]["id"])  # type: ignore[index]
        obs = [("Payments API", "Every endpoint of the payments API is async and idempotent.",
                "fact"),
               ("Ledger", "The ledger is append-only; corrections are new entries.", "lesson"),
               ("Ledger", "Amounts are integers in cents, never floats.", "preference"),
               ("Ledger", f"The staging ledger token is {SECRET}", "context"),
               ("Ledger", "The ledger was once replicated to a spreadsheet nightly.", "fact"),
               ("Payments API", "Retries of the payments API used a fixed two second sleep.",
                "fact"),
               ("Old cache", "The old cache kept sessions in memcached.", "fact")]
        for entity, content, kind in obs:
            made = await call("cuba_cronica", action="add", entity_name=entity, content=content,
                              observation_type=kind, allow_secret=True)
            ids[content[:20]] = str(made["id"])
        await call("cuba_puente", action="create", from_entity="Payments API",
                   to_entity="Ledger", relation_type="depends_on")
        decision = await call("cuba_decreto", action="record",
                              title="Use PostgreSQL for the ledger",
                              context="The ledger needs transactions", chosen="PostgreSQL",
                              alternatives=["MongoDB", "SQLite"], rationale="ACID, row locks")
        ids["decision"] = str(decision["id"])
        error = await call("cuba_alarma", error_type="ConnectionError",
                           error_message="psycopg.OperationalError: connection refused on 5433")
        ids["error"] = str(error["error_id"])
        await call("cuba_remedio", error_id=ids["error"],
                   solution="Start the database with `docker compose up -d db` first")
        await call("cuba_receta", action="add", name="run the test suite",
                   trigger="before a commit", verification="pytest exits 0",
                   steps=[{"do": "start the database", "run": "docker compose up -d db"},
                          {"do": "run the tests", "run": "pytest -q"}])
        for success in (True, True, False):
            made = await call("cuba_receta", action="outcome", name="run the test suite",
                              success=success)
        ids["procedure"] = str(made["id"])
        episode = await call("cuba_cronica", action="episode_add", entity_name="Payments API",
                             content="Deployed payments v2 to staging; the rollback was tested.",
                             actors=["ana"], artifacts=["deploy.sh"])
        ids["episode"] = str(episode["id"])
        # Withheld from search by the tool: imported as quarantined.
        await call("cuba_eco", action="quarantine", entity_name="Ledger",
                   observation_id=ids["The ledger was once "])
        # Deletions travel as tombstones.
        await call("cuba_cronica", action="delete", observation_id=ids["Retries of the payme"])
        await call("cuba_forget", entity_name="Old cache", confirm=True)
    return ids


def _made(pg_server_url: str, tmp_path_factory: pytest.TempPathFactory, schema: int,
          fill: Callable[[Any], Awaitable[dict[str, str]]],
          export: Callable[[Any], Path]) -> Iterator[Made]:
    """A cuba-memorys release writing `schema`, run on a fresh database, filled by `fill`
    through its MCP tools, its bundle written by `export`; the database dropped after."""
    import pg
    from cuba_tool import Cuba

    url = pg.fresh_database(pg_server_url)
    root = tmp_path_factory.mktemp(f"cuba{schema}")
    try:
        cuba = Cuba(schema, url, root / "project", root / "home")
        ids = anyio.run(fill, cuba)
        yield Made(export(cuba), url, ids)
    finally:
        pg.drop_database(pg_server_url, url)


@pytest.fixture(scope="module")
def made_v2(pg_server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Made]:
    yield from _made(pg_server_url, tmp_path_factory, 2, _fill_v2, lambda cuba: cuba.export())


def test_a_schema_2_bundle_maps_entities_decisions_errors_procedures_and_episodes(
        made_v2: Made) -> None:
    manifest = json.loads((made_v2.bundle / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["schema_version"] == 2
    found = list(read_bundle(made_v2.bundle))
    items = _by_origin(found)
    ids = made_v2.ids
    payments, ledger = items[f"entity:{ids['Payments API']}"], items[f"entity:{ids['Ledger']}"]
    assert (payments.type, payments.title, payments.tags) == ("concept", "Payments API",
                                                              ("technology",))
    assert "async and idempotent" in payments.body
    assert ("depends_on", f"entity:{ids['Ledger']}") in payments.links
    assert "(lesson) The ledger is append-only" in ledger.body
    preference = items[f"observation:{ids['Amounts are integers']}"]
    assert (preference.type, preference.links) == ("preference",
                                                   (("about", ledger.origin),))
    decision = items[f"observation:{ids['decision']}"]
    assert (decision.type, decision.title) == ("decision", "Use PostgreSQL for the ledger")
    assert "Rationale: ACID, row locks" in decision.body
    error = items[f"error:{ids['error']}"]
    assert error.type == "error" and "connection refused" in error.error
    remedy = items[str(error.remedy)]
    assert remedy.type == "procedure" and "docker compose up -d db" in remedy.body
    assert ("fixes", error.origin) in remedy.links
    procedure = items[f"procedure:{ids['procedure']}"]
    assert (procedure.type, procedure.successes, procedure.failures) == ("procedure", 2, 1)
    assert "`pytest -q`" in procedure.body
    episode = items[f"episode:{ids['episode']}"]
    assert episode.type == "episode" and episode.recorded_at
    assert episode.recorded_at.startswith(manifest["exported_at"][:7])
    assert ("about", payments.origin) in episode.links
    # cuba_decreto's container entity is no note of its own.
    assert not any(i.title == "architecture_decisions" for i in items.values())


def test_quarantined_rows_stay_quarantined_and_a_secret_is_passed_on_for_the_writer_to_scan(
        made_v2: Made) -> None:
    items = _by_origin(list(read_bundle(made_v2.bundle)))
    withheld = items[f"observation:{made_v2.ids['The ledger was once ']}"]
    assert withheld.status == "quarantined"
    ledger = items[f"entity:{made_v2.ids['Ledger']}"]
    assert "replicated to a spreadsheet" not in ledger.body
    assert SECRET in ledger.body


def test_tombstones_become_deletions_and_the_deleted_rows_are_gone(made_v2: Made) -> None:
    found = list(read_bundle(made_v2.bundle))
    deleted = {d.origin for d in found if isinstance(d, Deleted)}
    assert f"entity:{made_v2.ids['Old cache']}" in deleted
    assert f"observation:{made_v2.ids['Retries of the payme']}" in deleted
    items = _by_origin(found)
    assert f"entity:{made_v2.ids['Old cache']}" not in items
    assert not any("fixed two second sleep" in i.body for i in items.values())


def test_origins_are_the_tool_s_ids_so_a_second_export_reads_the_same(made_v2: Made,
                                                                     tmp_path: Path) -> None:
    again = tmp_path / "again"
    shutil.copytree(made_v2.bundle, again)
    assert list(read_bundle(again)) == [x._replace(where=x.where) for x in
                                        read_bundle(made_v2.bundle)]


def test_the_live_database_reads_as_the_bundle_does(made_v2: Made) -> None:
    from_db = list(read_database(made_v2.database))
    from_bundle = list(read_bundle(made_v2.bundle))
    assert {x.origin for x in from_db if isinstance(x, Item)} == {
        x.origin for x in from_bundle if isinstance(x, Item)}
    db_items, bundle_items = _by_origin(from_db), _by_origin(from_bundle)
    for key, item in bundle_items.items():
        assert db_items[key]._replace(where="", recorded_at=None) == item._replace(
            where="", recorded_at=None), key
    assert {x.origin for x in from_db if isinstance(x, Deleted)} == {
        x.origin for x in from_bundle if isinstance(x, Deleted)}


def test_a_database_that_is_not_cuba_memorys_is_one_clear_error(pg_url: str) -> None:
    with pytest.raises(StoreError, match="not a cuba-memorys one: it has no table"):
        list(read_database(pg_url))



# --- schema 1, from an older release ------------------------------------------------------


async def _fill_v1(cuba: object) -> dict[str, str]:
    from cuba_tool import Cuba

    assert isinstance(cuba, Cuba)
    ids: dict[str, str] = {}
    async with cuba.session() as call:
        for name in ("Search", "Tokenizer"):
            made = await call("cuba_alma", action="create", name=name, entity_type="concept")
            ids[name] = str(made["entity"]["id"])  # type: ignore[index]
        for entity, content in (("Search", "Search ranks by BM25 then reciprocal rank fusion."),
                                ("Tokenizer", "The tokenizer folds accents before stemming.")):
            made = await call("cuba_cronica", action="add", entity_name=entity,
                              content=content, observation_type="fact")
            ids[content[:20]] = str(made["id"])
        await call("cuba_puente", action="create", from_entity="Search", to_entity="Tokenizer",
                   relation_type="uses")
        error = await call("cuba_alarma", error_type="ValueError",
                           error_message="empty query after stemming")
        ids["error"] = str(error["error_id"])
        await call("cuba_remedio", error_id=ids["error"], solution="Fall back to the raw terms")
        episode = await call("cuba_cronica", action="episode_add", entity_name="Search",
                             content="Tuned the BM25 weights on the eval set.", actors=["bo"])
        ids["episode"] = str(episode["id"])
    return ids


def _export_v1(cuba: Any) -> Path:
    """Releases of schema 1 export into the project's `.cuba-memorys/` (no `--dir`)."""
    cuba.run("sync", "export")
    return cuba.project / ".cuba-memorys"


@pytest.fixture(scope="module")
def made_v1(pg_server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Made]:
    yield from _made(pg_server_url, tmp_path_factory, 1, _fill_v1, _export_v1)


def test_a_schema_1_bundle_from_an_older_release_reads_too(made_v1: Made) -> None:
    manifest = json.loads((made_v1.bundle / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["schema_version"] == 1
    found = list(read_bundle(made_v1.bundle.parent))  # the project holding the bundle
    items, ids = _by_origin(found), made_v1.ids
    search = items[f"entity:{ids['Search']}"]
    assert "BM25 then reciprocal rank fusion" in search.body
    assert ("depends_on", f"entity:{ids['Tokenizer']}") in search.links
    error = items[f"error:{ids['error']}"]
    assert items[str(error.remedy)].body == "Fall back to the raw terms"
    assert items[f"episode:{ids['episode']}"].recorded_at
    assert not [s for s in found if isinstance(s, Skipped)]


def test_the_older_release_s_database_reads_as_its_bundle_does(made_v1: Made) -> None:
    assert {x.origin for x in read_database(made_v1.database) if isinstance(x, Item)} == {
        x.origin for x in read_bundle(made_v1.bundle) if isinstance(x, Item)}


# --- bad input, on a copy of a real bundle ------------------------------------------------


def _copy(made: Made, tmp_path: Path) -> Path:
    copy = tmp_path / "bundle"
    shutil.copytree(made.bundle, copy, symlinks=True)
    return copy


def _entity_file(bundle: Path, name: str) -> Path:
    for path in sorted((bundle / "entities").glob("*.json")):
        if json.loads(path.read_text(encoding="utf-8"))["name"] == name:
            return path
    raise AssertionError(name)


def _edit_json(path: Path, edit: Callable[[Any], None]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def test_a_bundle_whose_manifest_hash_does_not_match_its_files_is_refused_whole(
        made_v2: Made, tmp_path: Path) -> None:
    bundle = _copy(made_v2, tmp_path)

    def reword(data: Any) -> None:
        data["observations"][0]["content"] = "Rewritten by hand after the export."

    _edit_json(_entity_file(bundle, "Payments API"), reword)
    with pytest.raises(InvalidInput, match="manifest_hash [0-9a-f]{64} does not match the "
                                           "files .*nothing was imported"):
        read_bundle(bundle)


def test_counts_that_do_not_match_the_files_stop_the_import(made_v1: Made,
                                                            tmp_path: Path) -> None:
    # A schema 1 hash covers the counts only: the count of files is what tells.
    bundle = _copy(made_v1, tmp_path)
    _entity_file(bundle, "Tokenizer").unlink()
    with pytest.raises(InvalidInput, match="does not match its files: it counts 2 entities, "
                                           "the bundle holds 1"):
        read_bundle(bundle)


def test_a_manifest_hash_that_is_no_digest_or_an_unknown_schema_stops_the_import(
        made_v2: Made, tmp_path: Path) -> None:
    bundle = _copy(made_v2, tmp_path)
    _edit_json(bundle / "manifest.json", lambda m: m.update(manifest_hash="edited by hand"))
    with pytest.raises(InvalidInput, match="manifest_hash 'edited by hand' is not a SHA-256"):
        read_bundle(bundle)
    _edit_json(bundle / "manifest.json", lambda m: m.update(schema_version=3))
    with pytest.raises(InvalidInput, match="schema_version 3 is not one loremap reads"):
        read_bundle(bundle)


def test_malformed_json_is_one_line_naming_the_file_and_the_rest_is_imported(
        made_v1: Made, tmp_path: Path) -> None:
    bundle = _copy(made_v1, tmp_path)
    broken = _entity_file(bundle, "Tokenizer")
    broken.write_text('{"id": "x", "name": ', encoding="utf-8")
    found = list(read_bundle(bundle))
    name = f"entities/{broken.name}"
    lines = [s for s in found if isinstance(s, Skipped) and s.where == name]
    assert len(lines) == 1 and "not valid JSON" in lines[0].reason
    items = _by_origin(found)
    assert f"entity:{made_v1.ids['Search']}" in items
    assert f"error:{made_v1.ids['error']}" in items
    assert f"entity:{made_v1.ids['Tokenizer']}" not in items


def test_a_relation_to_a_missing_entity_is_skipped_with_its_reason(made_v1: Made,
                                                                   tmp_path: Path) -> None:
    bundle = _copy(made_v1, tmp_path)
    ghost = str(uuid.uuid4())
    _edit_json(bundle / "relations.json", lambda rows: rows[0].update(to_entity=ghost))
    found = list(read_bundle(bundle))
    reasons = [s.reason for s in found if isinstance(s, Skipped)]
    assert any(f"points to entity {ghost}, which is not in the source" in r for r in reasons)
    search = _by_origin(found)[f"entity:{made_v1.ids['Search']}"]
    assert not search.links


def test_a_huge_observation_is_skipped_with_a_line_and_its_entity_kept(made_v1: Made,
                                                                      tmp_path: Path) -> None:
    bundle = _copy(made_v1, tmp_path)
    path = _entity_file(bundle, "Search")
    huge = "x" * (MAX_OBSERVATION_BYTES + 1)
    _edit_json(path, lambda data: data["observations"][0].update(content=huge))
    found = list(read_bundle(bundle))
    obs = made_v1.ids["Search ranks by BM25"]
    assert [s.origin for s in found if isinstance(s, Skipped)] == [f"observation:{obs}"]
    search = _by_origin(found)[f"entity:{made_v1.ids['Search']}"]
    assert "x" * 100 not in search.body


def test_a_symlink_in_the_bundle_refuses_it_whole_and_is_never_read(made_v2: Made,
                                                                   tmp_path: Path) -> None:
    for link in ("entity", "folder", "manifest"):
        bundle = _copy(made_v2, tmp_path / link)
        outside = tmp_path / link / "outside"
        if link == "entity":
            target = _entity_file(bundle, "Ledger")
            shutil.move(target, outside)
        elif link == "folder":
            target = bundle / "episodes"
            shutil.move(target, outside)
        else:
            target = bundle / "manifest.json"
            shutil.move(target, outside)
        target.symlink_to(outside)
        with pytest.raises(UnsafePath, match="symlink .*nothing was imported"):
            read_bundle(bundle)


def test_a_folder_without_a_manifest_is_not_a_bundle(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="holds no manifest.json"):
        read_bundle(tmp_path)


def test_a_database_that_cannot_be_reached_is_one_clear_error(tmp_path: Path) -> None:
    url = f"postgresql://nobody@localhost/none?host={tmp_path}&connect_timeout=2"
    with pytest.raises(StoreError, match="cannot read the cuba-memorys database: "):
        list(read_database(url))
