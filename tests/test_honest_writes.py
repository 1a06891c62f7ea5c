"""A write to a shared PostgreSQL database tells the truth when the connection is lost: lost
before COMMIT, nothing is written (the note files are put back); lost during COMMIT, the store
asks the server what became of the transaction; a retry of a write whose answer was lost
reuses the note instead of making a `-2`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("psycopg")

import psycopg  # noqa: E402

from loremap.errors import StoreError  # noqa: E402
from loremap.memory.service import Memory  # noqa: E402
from loremap.store.postgres.store import PostgresStore  # noqa: E402
from test_sync import PROJECT, Machine, live_docs, migrate, sql  # noqa: E402


@pytest.fixture
def machine(pg_url, tmp_path, monkeypatch, capsys) -> Machine:
    migrate(pg_url)
    return Machine(tmp_path / "a", pg_url, PROJECT, monkeypatch, capsys)


def remember(m: Machine, title: str, *extra: str) -> tuple[int, str, str]:
    return m.run("remember", "--type", "decision", "--title", title, "-m", "Tokens, not cookies.",
                 *extra)


def terminate(url: str, store: PostgresStore) -> None:
    """End `store`'s server process from a second connection, as a dropped network would."""
    with psycopg.connect(url, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", (store.conn.info.backend_pid,))


def lose_the_connection_while_indexing(monkeypatch: pytest.MonkeyPatch, url: str
                                       ) -> Callable[[], None]:
    """Drop the connection inside the next writes' transactions, as they index a note;
    returns the function that stops doing so."""
    original = Memory._index

    def dropping(memory: Memory, loaded: Any, **kwargs: Any) -> None:
        assert isinstance(memory.store, PostgresStore)
        terminate(url, memory.store)
        original(memory, loaded, **kwargs)

    monkeypatch.setattr(Memory, "_index", dropping)
    return lambda: monkeypatch.setattr(Memory, "_index", original)


class Armed:
    """Set while Memory indexes a note, so a patch strikes that write's transaction only."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.on = False
        self.lost = False  # a commit's answer was lost (and not yet reconnected)
        original = Memory._index

        def indexing(memory: Memory, loaded: Any, **kwargs: Any) -> None:
            self.on = True
            self.store = memory.store
            original(memory, loaded, **kwargs)

        monkeypatch.setattr(Memory, "_index", indexing)

    def take(self) -> bool:
        was, self.on = self.on, False
        return was


def lose_the_commit_answer(monkeypatch: pytest.MonkeyPatch, armed: Armed) -> None:
    """The server commits the note's transaction, then its answer never arrives."""
    original = psycopg.Transaction.__exit__

    def exit_(tx: Any, *exc: Any) -> Any:
        result = original(tx, *exc)
        if exc[0] is None and armed.take():
            armed.lost = True
            tx.connection.close()
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return result

    monkeypatch.setattr(psycopg.Transaction, "__exit__", exit_)


def test_a_connection_lost_before_commit_leaves_no_file_and_the_retry_is_not_a_duplicate(
        machine, monkeypatch):
    url = machine.env["LOREMAP_DATABASE_URL"]
    old = machine.remember("Session cookies")
    before = machine.files()
    stop = lose_the_connection_while_indexing(monkeypatch, url)
    code, out, err = remember(machine, "Use tokens", "--supersedes", old)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith("loremap: error: lost the connection to ")
    assert err.endswith("nothing was written to the database, try again (the note files "
                        "were put back as they were)\n")
    assert machine.files() == before  # no new note, the old one still active
    assert set(live_docs(url)) == {old}
    stop()
    assert machine.remember("Use tokens") == "decision-use-tokens"
    assert set(live_docs(url)) == set(machine.files()) == {old, "decision-use-tokens"}


def test_a_forget_that_loses_the_connection_leaves_the_note_as_it_was(machine, monkeypatch):
    url = machine.env["LOREMAP_DATABASE_URL"]
    note = machine.remember("Session cookies")
    before = machine.files()
    stop = lose_the_connection_while_indexing(monkeypatch, url)
    code, _, err = machine.run("forget", note, "--reason", "replaced")
    assert code == 1 and err.endswith("(the note files were put back as they were)\n")
    assert machine.files() == before  # still active, as the database says
    stop()
    assert machine.run("forget", note)[0] == 0
    assert b"status: archived" in machine.files()[note]


def test_a_commit_whose_answer_is_lost_is_looked_up_and_kept(machine, monkeypatch):
    url = machine.env["LOREMAP_DATABASE_URL"]
    lose_the_commit_answer(monkeypatch, Armed(monkeypatch))
    code, out, err = remember(machine, "Use tokens", "--json")
    assert code == 0, err
    assert set(machine.files()) == set(live_docs(url)) == {"decision-use-tokens"}
    assert machine.json("sync", "status")["push"]["changes"] == []


def test_a_lost_commit_answer_with_no_reconnect_says_so_and_the_retry_reuses_the_note(
        machine, monkeypatch):
    url = machine.env["LOREMAP_DATABASE_URL"]
    armed = Armed(monkeypatch)
    lose_the_commit_answer(monkeypatch, armed)
    connect = PostgresStore._connect

    def unreachable(store: PostgresStore) -> None:
        if armed.lost:
            raise StoreError("cannot connect to the database: connection refused")
        connect(store)

    monkeypatch.setattr(PostgresStore, "_connect", unreachable)
    code, out, err = remember(machine, "Use tokens")
    monkeypatch.setattr(PostgresStore, "_connect", connect)
    assert code == 1 and err.count("\n") == 1
    assert "during COMMIT (server closed the connection unexpectedly) and could not learn " \
           "whether it landed: the database may hold this write" in err
    assert err.endswith("(the note files were put back as they were)\n")
    assert machine.files() == {}  # the vault says nothing was written here
    assert set(live_docs(url)) == {"decision-use-tokens"}  # the server did commit it
    monkeypatch.undo()
    code, out, err = remember(machine, "Use tokens", "--json")
    assert code == 0, err
    assert set(machine.files()) == {"decision-use-tokens"}  # not decision-use-tokens-2
    assert machine.files()["decision-use-tokens"].decode("utf-8") == \
        live_docs(url)["decision-use-tokens"]
    assert sql(url, "SELECT version FROM note_docs")[0][0] == 1  # the same text: no new version
    # The same title with another body is another note.
    assert machine.remember("Use tokens", "another body") == "decision-use-tokens-2"


def test_a_purge_that_loses_the_connection_keeps_the_file_the_database_still_holds(
        machine, monkeypatch):
    url = machine.env["LOREMAP_DATABASE_URL"]
    note = machine.remember("Staging is in Frankfurt")
    before = machine.files()
    original = PostgresStore.delete_note

    def dropping(store: PostgresStore, note_id: str) -> None:
        terminate(url, store)
        original(store, note_id)

    monkeypatch.setattr(PostgresStore, "delete_note", dropping)
    code, _, err = machine.run("forget", note, "--purge")
    assert code == 1 and err.endswith("(the note files were put back as they were)\n")
    assert machine.files() == before and note in live_docs(url)
    monkeypatch.setattr(PostgresStore, "delete_note", original)
    assert machine.run("forget", note, "--purge")[0] == 0
    assert note not in machine.files() and note not in live_docs(url)
