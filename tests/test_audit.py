"""The audit chain on SQLite, as a user meets it: every change leaves its record with the hashes
of the note file before and after, in `.loremap/audit.sqlite` (which `reindex` and a damaged
index never touch); `audit verify` names an edited, deleted or inserted record; the CLI, the
MCP tools and the hooks each say who acted."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import Result, git, run_cli_process
from loremap.audit import Actor, Entry, acting_as, current_actor, verify
from loremap.audit.chain import Stamp, digest, seal, stamp
from loremap.store.sqlite.audit import SqliteAudit

SECRET = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"  # a GitHub token's shape (fake)
CLI = Callable[..., Result]


def audit(project: Path) -> Path:
    return project / ".loremap" / "audit.sqlite"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def note(project: Path, note_id: str) -> Path:
    return project / ".loremap" / "notes" / f"{note_id}.md"


def records(cli: CLI, *args: str) -> list[dict[str, Any]]:
    done = cli("audit", "log", *args, "--json")
    assert done.code == 0, done.err
    found: list[dict[str, Any]] = json.loads(done.out)["records"]
    return found


def verified(cli: CLI, *args: str) -> dict[str, Any]:
    done = cli("audit", "verify", *args, "--json")
    data: dict[str, Any] = json.loads(done.out)
    assert done.code == (0 if data["ok"] else 1), done.err
    return data


def remember(cli: CLI, kind: str, title: str, body: str, *more: str) -> str:
    done = cli("remember", "-t", kind, "--title", title, "-m", body, *more, "--json")
    assert done.code == 0, done.err
    return str(json.loads(done.out)["id"])


# --- every change, one record ---------------------------------------------------------------


def test_every_change_leaves_one_record_with_the_file_s_hash_before_and_after(project, cli):
    jwt = remember(cli, "decision", "Use JWT", "Stateless tokens.")
    h_jwt = sha(note(project, jwt))
    paseto = remember(cli, "decision", "Use PASETO", "No algorithm confusion.",
                      "--supersedes", jwt)
    h_jwt_superseded = sha(note(project, jwt))
    proc = remember(cli, "procedure", "Renew the token", "Call refresh first.")
    h_proc = sha(note(project, proc))
    assert cli("outcome", proc, "success", "-m", "worked on staging").code == 0
    h_proc_counted = sha(note(project, proc))
    h_paseto = sha(note(project, paseto))
    assert cli("forget", paseto, "--reason", "we kept sessions").code == 0
    h_paseto_archived = sha(note(project, paseto))
    assert cli("forget", jwt, "--purge").code == 0
    leaked = remember(cli, "gotcha", "The staging token", f"It is {SECRET}.", "--quarantine")
    h_leaked = sha(note(project, leaked))
    first = remember(cli, "bug", "Cart total twice", "The coupon runs twice on the total.")
    copy = remember(cli, "bug", "Coupon applied twice", "The coupon runs twice on the total!")
    h_first, h_copy = sha(note(project, first)), sha(note(project, copy))
    assert cli("dedupe", "--apply").code == 0

    got = [(r["op"], r["note"], r["before"], r["after"]) for r in records(cli)]
    assert got == [
        ("remember", jwt, "", h_jwt),
        ("remember", paseto, "", h_paseto),
        ("supersede", jwt, h_jwt, h_jwt_superseded),
        ("remember", proc, "", h_proc),
        ("outcome", proc, h_proc, h_proc_counted),
        ("archive", paseto, h_paseto, h_paseto_archived),
        ("purge", jwt, h_jwt_superseded, ""),
        ("quarantine", leaked, "", h_leaked),
        ("remember", first, "", h_first),
        ("remember", copy, "", h_copy),
        ("merge", first, h_first, sha(note(project, first))),
        ("merge", copy, h_copy, sha(note(project, copy))),
    ]
    every = records(cli)
    assert [r["seq"] for r in every] == list(range(1, 13))
    assert [r["prev"] for r in every[1:]] == [r["hash"] for r in every[:-1]]
    assert {(r["actor"], r["project"]) for r in every} == {("human", "repo")}
    assert all(r["who"].count("@") == 1 and r["at"].endswith("Z") for r in every)
    details = {(r["op"], r["note"]): (r["title"], r["detail"]) for r in every}
    assert details[("outcome", proc)] == ("Renew the token", "success: worked on staging")
    assert details[("archive", paseto)] == ("Use PASETO", "we kept sessions")
    assert details[("supersede", jwt)] == ("Use JWT", f"superseded by {paseto}")
    assert details[("merge", copy)][1] == f"merged into {first}"
    assert SECRET not in audit(project).read_bytes().decode("utf-8", "replace")
    assert [r["note"] for r in records(cli, "--note", proc)] == [proc, proc]
    assert records(cli, "--since", "2999-01-01") == []
    data = verified(cli)
    assert data["ok"] and data["records"] == 12 and data["head"]["hash"] == every[-1]["hash"]


def test_a_refused_change_leaves_no_record(project, cli):
    remember(cli, "decision", "Use JWT", "Stateless tokens.")
    before = audit(project).read_bytes()
    for argv in (["remember", "-t", "gotcha", "--title", "Key", "-m", f"it is {SECRET}"],
                 ["remember", "-t", "gotcha", "--title", "Empty", "-m", " "],
                 ["forget", "decision-nothing-here"],
                 ["outcome", "decision-use-jwt", "success"]):
        done = cli(*argv)
        assert done.code == 1 and done.err.count("\n") == 1, (argv, done.err)
    assert audit(project).read_bytes() == before
    assert len(records(cli)) == 1


def test_a_change_that_cannot_be_recorded_is_not_made(project, cli):
    """The audit file is a symlink, or damaged: the write is refused in one line, no note file
    is left behind, and the index is not set aside (the chain is not the index)."""
    remember(cli, "decision", "Use JWT", "Stateless tokens.")
    saved = audit(project).read_bytes()
    audit(project).unlink()
    elsewhere = project.parent / "elsewhere.sqlite"
    audit(project).symlink_to(elsewhere)
    done = cli("remember", "-t", "gotcha", "--title", "Linked", "-m", "body")
    assert done.code == 1 and "is a symlink" in done.err and done.err.count("\n") == 1
    assert not note(project, "gotcha-linked").exists() and not elsewhere.exists()
    audit(project).unlink()
    audit(project).write_bytes(saved[:100] + b"\xa5" * (len(saved) - 100))
    done = cli("remember", "-t", "gotcha", "--title", "Damaged", "-m", "body")
    assert done.code == 1 and "audit log" in done.err and done.err.count("\n") == 1, done.err
    assert not note(project, "gotcha-damaged").exists()
    assert not list((project / ".loremap").glob("index.sqlite.corrupt-*"))
    assert [n["id"] for n in json.loads(cli("list", "--json").out)["notes"]] == [
        "decision-use-jwt"]


def test_reindex_and_a_damaged_index_keep_the_chain(project, cli):
    from test_faults import damage

    for n in range(3):
        remember(cli, "bug", f"Ledger bug {n}", f"The lock is taken twice in case {n}.")
    head = verified(cli)["head"]
    assert cli("reindex").code == 0
    assert verified(cli)["head"] == head
    damage(project / ".loremap" / "index.sqlite")
    done = run_cli_process("search", "ledger", "lock", cwd=project)
    assert done.returncode == 1 and "set aside" in done.stderr
    assert list((project / ".loremap").glob("index.sqlite.corrupt-*"))
    data = verified(cli)
    assert data["ok"] and data["head"] == head and data["records"] == 3


def test_the_chain_is_kept_out_of_git_and_doctor_mends_an_older_gitignore(project, cli):
    remember(cli, "decision", "Use JWT", "Stateless tokens.")
    ignored = git(project, "check-ignore", ".loremap/audit.sqlite")
    assert ignored.strip() == ".loremap/audit.sqlite"
    gitignore = project / ".loremap" / ".gitignore"
    gitignore.write_text("index.sqlite\nindex.sqlite-*\n", encoding="utf-8")  # an older one
    findings = json.loads(cli("doctor", "--json").out)["findings"]
    audits = [f for f in findings if f["check"] == "audit"]
    assert [f["level"] for f in audits] == ["ok", "warning"]
    assert "unbroken: 1 record" in audits[0]["message"]
    assert "does not ignore audit.sqlite, audit.sqlite-*" in audits[1]["message"]
    cli("doctor", "--fix")
    assert gitignore.read_text(encoding="utf-8").startswith("index.sqlite\nindex.sqlite-*\n")
    assert git(project, "check-ignore", ".loremap/audit.sqlite-wal").strip()
    findings = json.loads(cli("doctor", "--json").out)["findings"]
    assert [f["level"] for f in findings if f["check"] == "audit"] == ["ok"]


# --- tampering ------------------------------------------------------------------------------


def tamper(path: Path, statement: str, params: tuple[object, ...] = ()) -> None:
    """Change the audit file as its owner can: drop the guards, then write."""
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        for trigger in ("audit_no_update", "audit_no_delete", "payloads_no_update",
                        "payloads_erased_only"):
            db.execute(f"DROP TRIGGER {trigger}")
        db.execute(statement, params)


@pytest.fixture
def chained(project: Path, cli: CLI) -> Path:
    """A project whose chain holds five records; a pristine copy of it beside."""
    for n in range(5):
        remember(cli, "bug", f"Ledger bug {n}", f"The lock is taken twice in case {n}.")
    shutil.copy(audit(project), project.parent / "pristine.sqlite")
    return project


def restore(project: Path) -> None:
    shutil.copy(project.parent / "pristine.sqlite", audit(project))


def broken(cli: CLI, *args: str) -> dict[str, Any]:
    data = verified(cli, *args)
    assert not data["ok"]
    found: dict[str, Any] = data["broken"]
    return found


def test_verify_names_an_edited_a_deleted_and_a_forged_record(chained, cli):
    tamper(audit(chained), "UPDATE audit SET note = 'bug-something-else' WHERE seq = 3")
    found = broken(cli)
    assert (found["seq"], found["kind"]) == (3, "edited")
    done = cli("audit", "verify")
    assert done.code == 1
    assert done.out.strip().endswith("broken at record 3: record 3 was changed after it was "
                                     f"written: its fields hash to {found['expected'][:12]}, it "
                                     f"says {found['found'][:12]}")
    doctor = json.loads(cli("doctor", "--json").out)
    assert not doctor["ok"] and any(f["check"] == "audit" and f["level"] == "error" and
                                    "broken at record 3" in f["message"]
                                    for f in doctor["findings"])

    restore(chained)
    tamper(audit(chained), "DELETE FROM audit WHERE seq = 3")
    found = broken(cli)
    assert (found["seq"], found["kind"], found["expected"], found["found"]) == (
        3, "missing", "3", "4")
    assert found["message"] == ("record 3 is missing: the chain goes from record 2 to record 4 "
                                "(deleted)")

    restore(chained)
    with contextlib.closing(sqlite3.connect(audit(chained))) as db:
        last = db.execute("SELECT * FROM audit WHERE seq = 5").fetchone()
    # A record after the head, hashed right, but chained after something else than record 5.
    forged = (6, *last[1:9], "bug-ledger-bug-0", "", "", "", "f" * 64)
    tamper(audit(chained), f"INSERT INTO audit VALUES ({', '.join('?' * 15)})",
           (*forged, digest(forged)))
    found = broken(cli)
    assert (found["seq"], found["kind"], found["found"]) == (6, "forged", "f" * 64)
    assert found["expected"] == last[14]
    assert "a record inserted with a forged previous hash" in found["message"]


def test_verify_names_a_changed_or_removed_payload_and_an_anchor_not_held(chained, cli):
    tamper(audit(chained), "UPDATE payloads SET payload = '{\"title\": \"Nothing\"}' "
                           "WHERE seq = 2")
    assert broken(cli)["kind"] == "payload" and broken(cli)["seq"] == 2

    restore(chained)
    tamper(audit(chained), "DELETE FROM payloads WHERE seq = 2")
    found = broken(cli)
    assert (found["seq"], found["kind"]) == (2, "payload")
    assert found["message"] == ("record 2's title and detail are gone, and note "
                                "bug-ledger-bug-1 was never erased")

    restore(chained)
    head = verified(cli)["head"]
    anchor = f"{head['seq']}:{head['hash']}"
    assert verified(cli, "--anchor", anchor)["ok"]
    tamper(audit(chained), "DELETE FROM audit WHERE seq >= 4")  # the tail cut off
    assert verified(cli)["ok"]  # a shorter chain is whole: only an anchor tells
    found = broken(cli, "--anchor", anchor)
    assert (found["seq"], found["kind"]) == (5, "anchor")
    assert "the chain ends at record 3, before the anchored record 5" in found["message"]


def test_the_file_refuses_to_change_a_record_and_keeps_payloads_until_an_erasure(chained, cli):
    with contextlib.closing(sqlite3.connect(audit(chained))) as db:
        for statement in ("UPDATE audit SET op = 'x' WHERE seq = 1",
                          "DELETE FROM audit WHERE seq = 1",
                          "UPDATE payloads SET payload = '{}' WHERE seq = 1",
                          "DELETE FROM payloads WHERE seq = 1"):
            with pytest.raises(sqlite3.IntegrityError):
                db.execute(statement)
    # An erasure (to come) records itself first, then deletes the note's payloads.
    log = SqliteAudit(audit(chained), "repo", "test@host")
    with log.appending() as append:
        append([Entry("erase", "bug-ledger-bug-0", "", "")], stamp_now())
    with contextlib.closing(sqlite3.connect(audit(chained))) as db, db:
        db.execute("DELETE FROM payloads WHERE seq = 1")
        with pytest.raises(sqlite3.IntegrityError):
            db.execute("DELETE FROM payloads WHERE seq = 2")  # another note's
    data = verified(cli)
    assert data["ok"] and data["erased"] == 1 and data["records"] == 6
    logged = records(cli, "--note", "bug-ledger-bug-0")
    assert [(r["op"], r["erased"], r["title"]) for r in logged] == [
        ("remember", True, None), ("erase", False, "")]
    assert "(title and detail erased)" in cli("audit", "log").out


def stamp_now() -> Stamp:
    import datetime as dt

    return stamp(dt.datetime.now(dt.UTC))


# --- who acted ------------------------------------------------------------------------------


def test_an_agent_through_mcp_is_recorded_with_its_client_s_name(project, cli):
    import mcp_types as types
    from mcp import Client

    from loremap.mcp.projects import Projects
    from loremap.mcp.server import build_server

    server = build_server(Projects(project), "lean")

    async def main() -> None:
        info = types.Implementation(name="claude-code", version="2.1")
        async with Client(server, client_info=info) as client:
            done = await client.call_tool("remember", {"facts": [
                {"type": "gotcha", "title": "Coupons apply after the total",
                 "body": "A line discount would be applied twice."}]})
            assert not done.is_error

    anyio.run(main)
    (record,) = records(cli)
    assert (record["actor"], record["client"], record["op"]) == ("agent", "claude-code",
                                                                 "remember")


def test_a_hook_that_quarantines_a_hand_written_note_is_recorded_with_its_session(project, cli):
    path = note(project, "gotcha-staging-token")
    path.write_text(f"---\nid: gotcha-staging-token\ntype: gotcha\ntitle: Staging token\n---\n"
                    f"It is {SECRET}.\n", encoding="utf-8")
    payload = {"hook_event_name": "SessionStart", "source": "startup", "cwd": str(project),
               "session_id": "9f2c-session"}
    done = subprocess.run([sys.executable, "-m", "loremap.hook", "session-start"],
                          input=json.dumps(payload).encode(), capture_output=True,
                          env=os.environ.copy(), timeout=120, cwd=project)
    assert done.returncode == 0, done.stderr
    (record,) = records(cli)
    assert (record["actor"], record["session"], record["op"], record["note"]) == (
        "hook", "9f2c-session", "quarantine", "gotcha-staging-token")
    assert (record["before"], record["after"]) == ("", sha(path))
    assert record["title"] == "" and SECRET not in json.dumps(record)


def test_the_actor_is_the_one_set_for_the_call_and_unknown_otherwise():
    assert current_actor() == Actor("unknown")
    with acting_as(Actor("agent", client="codex")):
        assert current_actor().client == "codex"
        with acting_as(Actor("hook", session="s1")):
            assert current_actor() == Actor("hook", session="s1")
        assert current_actor().kind == "agent"
    assert current_actor().kind == "unknown"


# --- bad input ------------------------------------------------------------------------------


def test_each_bad_argument_is_one_line_and_changes_nothing(project, cli):
    remember(cli, "decision", "Use JWT", "Stateless tokens.")
    before = audit(project).read_bytes()
    for argv, code in ((["audit"], 2), (["audit", "list"], 2),
                       (["audit", "log", "--since", "yesterday"], 2),
                       (["audit", "log", "--note", "../etc/passwd"], 1),
                       (["audit", "verify", "--anchor", "3:abc"], 1),
                       (["audit", "verify", "--anchor", f"0:{'a' * 64}"], 1)):
        done = cli(*argv)
        assert done.code == code and done.err.count("\n") == 1 and not done.out, (argv, done)
    assert audit(project).read_bytes() == before


def test_outside_a_project_the_personal_chain_is_read(repo, cli, isolated_home):
    done = cli("remember", "-t", "preference", "--title", "Short commits", "-m", "One idea.",
               "--personal")
    assert done.code == 0, done.err
    (record,) = records(cli, "--personal")
    assert (record["project"], record["op"]) == ("personal", "remember")
    assert (isolated_home / "loremap" / "personal" / "audit.sqlite").is_file()
    assert cli("audit", "log").out.startswith("    1 ")  # outside a project: the personal one
    assert "the personal chain" in cli("audit", "verify").out


# --- the chain itself -----------------------------------------------------------------------


def test_a_chain_sealed_in_batches_verifies_and_every_field_is_bound_to_its_hash():
    when = Stamp("2026-11-30T16:40:05.000000Z", Actor("human"))
    first = seal([Entry("remember", "a", "", "1" * 64, "A")], None, when, "me@host", "p")
    more = seal([Entry("supersede", "a", "1" * 64, "2" * 64, "A", "superseded by b"),
                 Entry("remember", "b", "", "3" * 64)], (1, first[0].hash), when, "me@host",
                "p")
    chain = first + more
    assert [r.seq for r in chain] == [1, 2, 3] and chain[2].payload is None
    assert verify(chain).ok and verify(chain).head_hash == chain[2].hash
    for field in range(14):  # every hashed field
        changed = list(chain[1])
        changed[field] = 99 if field == 0 else "x"
        found = verify([chain[0], type(chain[1])(*changed), chain[2]]).broken
        assert found is not None and found.seq in (1, 2), field
