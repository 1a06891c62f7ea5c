"""The SQLite store on its own: ranking, filters beyond the candidate pool, migrations."""

from __future__ import annotations

import sqlite3

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
