"""The SQLite store on its own: ranking, filters beyond the candidate pool, migrations."""

from __future__ import annotations

import sqlite3

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
