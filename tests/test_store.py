"""The SQLite store on its own: ranking, filters beyond the candidate pool, migrations."""

from __future__ import annotations

import json
import sqlite3
from array import array

import pytest

from loremap.model import Note, NoteType, Status
from loremap.model.search import Filters, TextQuery
from loremap.search.config import DEFAULT_WEIGHTS
from loremap.store.sqlite import SqliteStore
from loremap.store.sqlite.schema import MIGRATIONS
from loremap.text import Analyzer


def store_with(tmp_path, notes):
    store = SqliteStore(tmp_path / "index.sqlite", Analyzer())
    with store.write():
        for note in notes:
            store.upsert_note(note, "project", f"notes/{note.id}.md", note.id, 1, 1)
    return store


def bm25(store, term, limit, **filters):
    """Ids the store's BM25 ranks for one term under `filters`."""
    found = store.text_search(TextQuery((term,), (1,)), limit, Filters(**filters), DEFAULT_WEIGHTS)
    return [node_id for node_id, _ in found]


def test_filters_that_empty_the_candidate_pool_still_find_the_rest(tmp_path):
    superseded = [Note(id=f"decision-old-{i}", type=NoteType.DECISION, title="Coupon coupon",
                       body="coupon " * 20, status=Status.SUPERSEDED) for i in range(120)]
    active = Note(id="decision-current", type=NoteType.DECISION, title="Pricing",
                  body="A coupon is applied once.")
    store = store_with(tmp_path, [*superseded, active])
    assert bm25(store, "coupon", 5) == ["decision-current"]
    history = bm25(store, "coupon", 3, statuses=("superseded",))
    assert len(history) == 3 and all(i.startswith("decision-old-") for i in history)


def test_title_matches_outrank_body_matches(tmp_path):
    in_title = Note(id="gotcha-refund", type=NoteType.GOTCHA, title="Refund rounding",
                    body="Totals are summed per line.")
    in_body = Note(id="gotcha-ledger", type=NoteType.GOTCHA, title="Ledger entries",
                   body="A refund creates a negative entry in the ledger.")
    store = store_with(tmp_path, [in_body, in_title])
    assert bm25(store, "refund", 5) == ["gotcha-refund", "gotcha-ledger"]


def test_type_filter_and_ties_are_deterministic(tmp_path):
    notes = [Note(id=f"bug-b{i}", type=NoteType.BUG, title="Ledger rows", body="ledger rows")
             for i in range(3)]
    notes.append(Note(id="concept-c", type=NoteType.CONCEPT, title="Ledger rows", body="x"))
    store = store_with(tmp_path, notes)
    assert bm25(store, "ledger", 10, types=("bug",)) == ["bug-b0", "bug-b1", "bug-b2"]


def test_migrations_are_recorded_and_a_reopen_applies_nothing(tmp_path):
    store_with(tmp_path, []).close()
    with sqlite3.connect(tmp_path / "index.sqlite") as conn:
        rows = conn.execute("SELECT version, name FROM migrations").fetchall()
        assert rows == [(i + 1, m.__name__.lstrip("_")) for i, m in enumerate(MIGRATIONS)]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    reopened = SqliteStore(tmp_path / "index.sqlite", Analyzer())
    assert reopened.schema_version() == len(MIGRATIONS)


def test_the_schema_version_doctor_expects_is_the_number_of_migrations():
    from loremap.store import SCHEMA_VERSION

    assert SCHEMA_VERSION == len(MIGRATIONS)


def test_warnings_by_path_gives_every_path_what_file_warnings_gives_it(tmp_path):
    from loremap.model import Link, Relation

    notes = [
        Note(id="gotcha-old", type=NoteType.GOTCHA, title="Old", body="a",
             files=("src/a.py",), recorded_at="2024-01-01"),
        Note(id="bug-new", type=NoteType.BUG, title="New", body="b",
             files=("src/a.py", "src/b.py"), links=(Link(Relation.AFFECTS, "src/a.py"),),
             recorded_at="2024-06-01"),
        Note(id="gotcha-undated", type=NoteType.GOTCHA, title="Undated", body="c",
             links=(Link(Relation.AFFECTS, "src/c.py"),)),
        Note(id="decision-other", type=NoteType.DECISION, title="Other", body="d",
             files=("src/a.py",)),
        Note(id="gotcha-gone", type=NoteType.GOTCHA, title="Gone", body="e",
             files=("src/a.py",), status=Status.SUPERSEDED),
    ]
    store = store_with(tmp_path, notes)
    types = ("gotcha", "bug")
    found = store.warnings_by_path(types)
    assert found == {path: store.file_warnings(path, types)
                     for path in ("src/a.py", "src/b.py", "src/c.py")}
    # Newest first, each note once per path although `bug-new` names src/a.py twice.
    assert [w[0] for w in found["src/a.py"]] == ["bug-new", "gotcha-old"]
    assert store.warnings_by_path(()) == {}


def test_an_index_from_a_newer_loremap_is_schema_too_new_and_kept(tmp_path):
    from loremap.app import _open_store
    from loremap.errors import SchemaTooNew

    index = tmp_path / "index.sqlite"
    store_with(tmp_path, []).close()
    with sqlite3.connect(index) as conn:
        conn.execute("INSERT INTO migrations VALUES (99, 'future', 0)")
    with pytest.raises(SchemaTooNew, match="schema version 99"):
        SqliteStore(index, Analyzer())
    notices: list[str] = []
    with pytest.raises(SchemaTooNew):
        _open_store(index, Analyzer(), 100, notices, fresh=False)
    assert index.exists() and not list(tmp_path.glob("*.corrupt-*")) and not notices
    # `reindex` (fresh) sets it aside and starts again.
    _open_store(index, Analyzer(), 100, notices, fresh=True).close()
    assert len(list(tmp_path.glob("index.sqlite.corrupt-*"))) == 1 and notices


def test_a_locked_index_is_refused_as_locked_by_its_error_code_and_never_set_aside(tmp_path):
    """Another process holding an exclusive lock: SQLITE_BUSY, told as `IndexLocked`, not as a
    corrupt index (which `App` would move aside and rebuild)."""
    from loremap.app import _open_store
    from loremap.errors import IndexLocked
    from loremap.store.sqlite.store import is_locked

    index = tmp_path / "index.sqlite"
    store_with(tmp_path, []).close()
    holder = sqlite3.connect(index, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(IndexLocked, match="locked by another process"):
            _open_store(index, Analyzer(), 50, [], fresh=False)
        with pytest.raises(sqlite3.OperationalError) as raised:
            sqlite3.connect(index, timeout=0.05).execute("SELECT 1 FROM nodes").fetchall()
        assert is_locked(raised.value)
    finally:
        holder.close()
    assert not list(tmp_path.glob("*.corrupt-*"))
    # The code decides, not the message: an error without a code is no lock, whatever it says.
    assert not is_locked(sqlite3.OperationalError("database is locked"))
    SqliteStore(index, Analyzer()).close()  # free again


def test_a_schema_3_index_keeps_its_vectors_as_chunk_0_with_their_dimension(tmp_path):
    """Migration 4: the blobs of a model with one length become its chunk 0 and record its
    dimension; a model stored at two lengths (nothing could compare them) is dropped."""
    path = tmp_path / "index.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_at REAL NOT NULL)")
    for number, step in enumerate(MIGRATIONS[:3], start=1):
        step(conn)
        conn.execute("INSERT INTO migrations VALUES (?, ?, 0)", (number, step.__name__))
    one, two = array("f", [1.0, 0.0]).tobytes(), array("f", [0.0, 1.0]).tobytes()
    conn.executemany("INSERT INTO vectors (id, model, vec) VALUES (?, ?, ?)",
                     [("a", "m", one), ("b", "m", two), ("a", "mixed", one),
                      ("b", "mixed", array("f", [0.0, 1.0, 0.0]).tobytes())])
    conn.execute("COMMIT")
    conn.close()
    store = SqliteStore(path, Analyzer())
    try:
        assert store.schema_version() == len(MIGRATIONS)
        assert store.vector_models() == [("m", 2, 2)]
        assert store.nearest_vectors("m", [0.0, 1.0], 5) == [("b", 1.0), ("a", 0.0)]
        assert store.broken_vectors() == 0
    finally:
        store.close()


def test_the_scan_sees_vectors_another_connection_or_this_one_wrote_since(tmp_path):
    """The matrix is kept per connection between queries, and read again after any change:
    another connection's commit, this connection's own write, a rollback of one."""
    reader = store_with(tmp_path, [])
    writer = SqliteStore(tmp_path / "index.sqlite", Analyzer())
    try:
        with writer.write():
            writer.put_vectors("m", 2, [("a", 0, [1.0, 0.0])])
        assert [i for i, _ in reader.nearest_vectors("m", [0.0, 1.0], 5)] == ["a"]
        assert reader.nearest_vectors("m", [0.0, 1.0], 5) == [("a", 0.0)]  # the kept matrix
        with writer.write():
            writer.put_vectors("m", 2, [("b", 0, [0.0, 1.0])])
        assert [i for i, _ in reader.nearest_vectors("m", [0.0, 1.0], 5)] == ["b", "a"]
        with reader.write():
            reader.put_vectors("m", 2, [("c", 0, [-0.6, 0.8])])
        assert [i for i, _ in reader.nearest_vectors("m", [0.0, 1.0], 5)] == ["b", "c", "a"]
        with pytest.raises(RuntimeError), reader.write():
            reader.drop_vectors("m")
            assert reader.nearest_vectors("m", [0.0, 1.0], 5) == []
            raise RuntimeError("roll back")
        with pytest.raises(RuntimeError), reader.write():
            reader.put_vectors("m", 2, [("d", 0, [0.0, 1.0])])
            assert reader.nearest_vectors("m", [0.0, 1.0], 1)[0][0] in ("b", "d")
            raise RuntimeError("roll back")
        assert [i for i, _ in reader.nearest_vectors("m", [0.0, 1.0], 5)] == ["b", "c", "a"]
        with writer.write():
            writer.conn.execute("DELETE FROM vectors WHERE id = 'b'")
        assert [i for i, _ in reader.nearest_vectors("m", [0.0, 1.0], 5)] == ["c", "a"]
    finally:
        writer.close()
        reader.close()


def test_kept_edges_and_counts_follow_every_change_to_the_database(tmp_path):
    """A connection keeps the walk's edges, the words' document counts and their bm25 scores
    between questions, and reads them again after another connection's commit, its own write,
    a rollback."""
    from loremap.model import Link, Relation

    def note(nid, body, *links):
        return Note(id=nid, type=NoteType.DECISION, title=nid, body=body,
                    links=tuple(Link(Relation.RELATES, to) for to in links))

    reader = store_with(tmp_path, [note("a", "refund twice"), note("b", "refund", "a")])
    writer = SqliteStore(tmp_path / "index.sqlite", Analyzer())
    statements: list[str] = []
    reader.conn.set_trace_callback(statements.append)

    def around(node):
        return sorted(e.node for e in reader.neighborhoods([node], 256)[node] or [])

    def found(common=False):
        query = TextQuery(("refund", "twice"), (1, 1), common=common)
        return sorted(i for i, _ in reader.text_search(query, 10, Filters(), DEFAULT_WEIGHTS))

    try:
        assert around("a") == ["b"] and reader.doc_freqs(["refund"], 10) == {"refund": 2}
        assert found() == found(common=True) == ["a", "b"]
        statements.clear()
        assert around("a") == ["b"] and reader.doc_freqs(["refund"], 10) == {"refund": 2}
        assert reader.doc_freqs(["refund"], 1) == {"refund": 1}  # within what was counted
        assert all("data_version" in s for s in statements)  # nothing but the version read
        assert found() == found(common=True) == ["a", "b"]
        assert not [s for s in statements if "MATCH" in s or "count(*)" in s]  # scores kept
        with writer.write():
            writer.upsert_note(note("c", "refund", "a"), "project", "notes/c.md", "c", 1, 1)
        assert around("a") == ["b", "c"] and reader.doc_freqs(["refund"], 10) == {"refund": 3}
        assert found() == found(common=True) == ["a", "b", "c"]
        with reader.write():
            reader.upsert_note(note("d", "refund", "a"), "project", "notes/d.md", "d", 1, 1)
        assert around("a") == ["b", "c", "d"]
        assert reader.doc_freqs(["refund"], 10) == {"refund": 4}
        assert found(common=True) == ["a", "b", "c", "d"]
        with pytest.raises(RuntimeError), reader.write():
            reader.upsert_note(note("e", "refund", "a"), "project", "notes/e.md", "e", 1, 1)
            assert around("a") == ["b", "c", "d", "e"]
            assert reader.doc_freqs(["refund"], 10) == {"refund": 5}
            assert found() == ["a", "b", "c", "d", "e"]
            raise RuntimeError("roll back")
        assert around("a") == ["b", "c", "d"]
        assert reader.doc_freqs(["refund"], 10) == {"refund": 4}
        assert found() == found(common=True) == ["a", "b", "c", "d"]
    finally:
        writer.close()
        reader.close()


def test_doctor_names_corrupt_vectors_and_the_command_that_replaces_them(project, cli):
    cli("remember", "-t", "bug", "--title", "Coupon applied twice", "-m", "x")
    store = SqliteStore(project / ".loremap" / "index.sqlite", Analyzer())
    try:
        with store.write():
            store.put_vectors("m", 2, [("bug-coupon-applied-twice", 0, [1.0, 0.0])])
        assert cli("doctor", "--json").code == 0
        with store.write():
            store.conn.execute("UPDATE vectors SET vec = x'00'")
    finally:
        store.close()
    report = json.loads(cli("doctor", "--json").out)
    found = [f for f in report["findings"] if f["check"] == "vectors"]
    assert [f["level"] for f in found] == ["warning"]
    assert "1 stored vector corrupt" in found[0]["message"]
    assert "`loremap reembed`" in found[0]["message"]
