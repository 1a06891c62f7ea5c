"""`loremap sync`: two machines (two repositories, two homes) and one real PostgreSQL database,
driven through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("psycopg")

from loremap.cli import main  # noqa: E402
from loremap.store.postgres.store import SharedDoc  # noqa: E402
from loremap.sync.plan import LocalNote, guard, plan  # noqa: E402

PROJECT = "team/app"


def migrate(url: str) -> None:
    import psycopg

    from loremap.store.postgres import schema

    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        schema.migrate(conn)


def sql(url: str, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return list(conn.execute(query, params).fetchall())


class Machine:
    """One repository with its own LOREMAP_HOME (so its own sync base), sharing a database."""

    def __init__(self, root: Path, url: str, project: str, monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str], clone_of: Path | None = None) -> None:
        self.root = root
        self.home = root.parent / f"{root.name}-home"
        self.env = {"LOREMAP_HOME": str(self.home), "LOREMAP_DATABASE_URL": url,
                    "LOREMAP_PROJECT_KEY": project}
        self.monkeypatch = monkeypatch
        self.capsys = capsys
        if clone_of is None:
            root.mkdir()
            subprocess.run(["git", "init", "-q", str(root)], check=True)
        else:
            subprocess.run(["git", "clone", "-q", str(clone_of), str(root)], check=True)
        done = self.run("init", shared=False)  # init indexes: on SQLite, before the URL is set
        assert done[0] == 0, done

    @property
    def notes(self) -> Path:
        return self.root / ".loremap" / "notes"

    def run(self, *args: str, shared: bool = True) -> tuple[int, str, str]:
        """`loremap ARGS` in process, in this machine's folder and environment."""
        self.capsys.readouterr()
        self.monkeypatch.chdir(self.root)
        for key, value in self.env.items():
            if shared or key == "LOREMAP_HOME":
                self.monkeypatch.setenv(key, value)
            else:
                self.monkeypatch.delenv(key, raising=False)
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = self.capsys.readouterr()
        return code, out.out, out.err

    def ok(self, *args: str, shared: bool = True) -> str:
        code, out, err = self.run(*args, shared=shared)
        assert code == 0, err
        return out

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "--json"))

    def remember(self, title: str, body: str = "a body", shared: bool = True) -> str:
        data = json.loads(self.ok("remember", "--type", "decision", "--title", title, "-m", body,
                                  "--json", shared=shared))
        return str(data["id"])

    def files(self) -> dict[str, bytes]:
        return {p.stem: p.read_bytes() for p in sorted(self.notes.glob("*.md"))}

    def bases(self) -> dict[str, str]:
        found = list((self.home / "sync").glob("*.json"))
        return {p.name: p.read_text(encoding="utf-8") for p in found}


@pytest.fixture
def db(pg_url: str) -> str:
    migrate(pg_url)
    return pg_url


@pytest.fixture
def machines(db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> Callable[..., Machine]:
    def make(name: str, project: str = PROJECT, clone_of: Path | None = None) -> Machine:
        return Machine(tmp_path / name, db, project, monkeypatch, capsys, clone_of)

    return make


def edit(path: Path, extra: str, mtime: float | None = None) -> None:
    path.write_text(path.read_text(encoding="utf-8") + extra, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def live_docs(url: str, project: str = PROJECT) -> dict[str, str]:
    return dict(sql(url, "SELECT id, text FROM note_docs WHERE project = %s AND NOT deleted",
                    (project,)))  # type: ignore[arg-type]


# --- the whole loop -------------------------------------------------------------------------


def test_a_note_remembered_on_one_machine_is_pulled_byte_for_byte(machines):
    a, b = machines("a"), machines("b")
    note = a.remember("We use PostgreSQL", "one shared memory for the team")
    assert b.json("sync", "status")["pull"]["changes"] == [
        {"id": note, "change": "new", "winner": None, "detail": None}]
    status = b.ok("sync", "status").splitlines()
    assert status[0] == "push:" and status[1].startswith("  nothing to push (to ")
    assert status[1].endswith(f"(project {PROJECT}))")
    assert status[2:4] == ["pull:", f"  + {note}"]
    assert status[4].startswith("  would pull 1 new, 0 updated, 0 deleted, 0 conflicts from ")
    out = b.ok("sync", "pull")
    assert out.splitlines()[0] == f"+ {note}"
    assert out.splitlines()[-1].startswith("pulled 1 new, 0 updated, 0 deleted, 0 conflicts ")
    assert b.files() == a.files()
    # Both agree now: nothing to move either way, and the note is found on B.
    for m in (a, b):
        status = m.json("sync", "status")
        assert status["push"]["changes"] == status["pull"]["changes"] == []
    assert "nothing to pull" in b.ok("sync", "pull")
    assert note in b.ok("show", note)


def test_two_machines_remembering_at_once_lose_nothing(machines):
    a, b = machines("a"), machines("b")
    script = textwrap.dedent("""
        import sys
        from loremap.cli import main
        who = sys.argv[1]
        for i in range(20):
            title = f"Shared choice {i}" if i % 4 == 0 else f"Choice {i} of {who}"
            code = main(["remember", "--type", "decision", "--title", title, "-m", who, "--json"])
            assert code == 0, code
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, m.root.name], cwd=m.root,
                              env={**os.environ, **m.env}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for m in (a, b)]
    errors = [proc.communicate(timeout=120)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], errors
    assert len(a.files()) == len(b.files()) == 20
    assert not set(a.files()) & set(b.files())  # no id was given twice
    assert len(live_docs(a.env["LOREMAP_DATABASE_URL"])) == 40
    for m in (a, b):
        assert m.ok("sync", "pull").splitlines()[-1].startswith("pulled 20 new,")
    assert a.files() == b.files() and len(a.files()) == 40
    assert a.json("sync", "push")["changes"] == []


def test_a_hand_edit_is_pushed_and_pulled(machines):
    a, b = machines("a"), machines("b")
    note = a.remember("Cache the tokens")
    b.ok("sync", "pull")
    edit(a.notes / f"{note}.md", "\nEdited by hand.\n")
    assert a.ok("sync", "push", "--dry-run").splitlines()[0] == f"~ {note}"
    assert "Edited by hand" not in live_docs(a.env["LOREMAP_DATABASE_URL"])[note]
    assert a.ok("sync", "push").splitlines()[0] == f"~ {note}"
    assert b.ok("sync", "pull").splitlines()[0] == f"~ {note}"
    assert b.files() == a.files()
    assert b.json("sync", "versions", note)["versions"][0]["reason"] == "replaced"


def test_conflicting_edits_the_newer_wins_and_the_loser_is_kept(machines):
    a, b = machines("a"), machines("b")
    note = a.remember("Retry policy", "three retries")
    b.ok("sync", "pull")
    path_a, path_b = a.notes / f"{note}.md", b.notes / f"{note}.md"
    # Push: B's edit is newer than the one A pushed, so B's wins on both sides.
    edit(path_a, "\nA says five.\n")
    a.ok("sync", "push")
    edit(path_b, "\nB says seven.\n", mtime=time.time() + 60)
    out = b.ok("sync", "push")
    assert out.startswith(f"! {note}  conflict: this vault's edit is newer and won")
    assert f"`loremap sync versions {note}`" in out
    assert "B says seven" in live_docs(b.env["LOREMAP_DATABASE_URL"])[note]
    kept = b.json("sync", "versions", note)["versions"][0]
    assert kept["reason"].startswith("conflict:") and "A says five" in kept["text"]
    assert a.ok("sync", "pull").splitlines()[0] == f"~ {note}"
    assert path_a.read_bytes() == path_b.read_bytes()
    # Pull: A pushes an edit; B's own edit is older, so the database's text wins on B.
    edit(path_b, "\nB says nine.\n", mtime=time.time() - 3600)
    edit(path_a, "\nA says eleven.\n")
    a.ok("sync", "push")
    report = b.json("sync", "pull")
    assert report["changes"] == [{"id": note, "change": "conflict", "winner": "database",
                                  "detail": report["changes"][0]["detail"]}]
    assert path_b.read_bytes() == path_a.read_bytes()
    versions = b.ok("sync", "versions", note)
    assert "conflict: an edit by" in versions.splitlines()[2]
    kept = b.json("sync", "versions", note)["versions"][0]
    assert "B says nine" in kept["text"]
    assert b.json("sync", "status")["push"]["changes"] == []
    # Edited on both while apart, the older edit pushed first: the newer edit still wins (the
    # database records when its text was edited, not when it was pushed).
    now = time.time()
    edit(path_a, "\nA says thirteen.\n", mtime=now - 600)
    edit(path_b, "\nB says fifteen.\n", mtime=now - 60)
    a.ok("sync", "push")
    assert b.ok("sync", "push").startswith(f"! {note}  conflict: this vault's edit is newer")
    assert "B says fifteen" in live_docs(b.env["LOREMAP_DATABASE_URL"])[note]
    a.ok("sync", "pull")
    # The same a second apart, too recent for the index to trust the files' times: still
    # the edit times decide, not the push's.
    now = time.time()
    edit(path_a, "\nA says seventeen.\n", mtime=now - 1.5)
    edit(path_b, "\nB says nineteen.\n", mtime=now - 0.5)
    a.ok("sync", "push")
    assert b.ok("sync", "push").startswith(f"! {note}  conflict: this vault's edit is newer")


def test_a_purged_note_is_deleted_by_the_other_machines_pull(machines):
    a, b = machines("a"), machines("b")
    gone = a.remember("Old decision")
    edited = a.remember("Another old decision")
    b.ok("sync", "pull")
    a.ok("forget", gone, "--purge")
    a.ok("forget", edited, "--purge")
    edit(b.notes / f"{edited}.md", "\nStill relevant here.\n")
    out = b.ok("sync", "pull").splitlines()
    assert out[0] == f"- {gone}"
    assert out[1] == (f"? {edited}  deleted on the database, edited here: kept; `loremap sync "
                      "push` would bring it back")
    assert set(b.files()) == {edited}
    assert b.json("sync", "versions", gone)["current"]["deleted"] is True
    # The edit beats the deletion: a push brings it back, and A gets it again.
    assert b.ok("sync", "push").splitlines()[0].startswith(f"+ {edited}  (brought back")
    assert a.ok("sync", "pull").splitlines()[0] == f"+ {edited}"
    assert a.files() == b.files()


def test_a_local_deletion_is_pushed_as_a_tombstone(machines):
    a, b = machines("a"), machines("b")
    note = a.remember("Short lived")
    b.ok("sync", "pull")
    (b.notes / f"{note}.md").unlink()
    assert b.ok("sync", "pull").splitlines()[0].startswith(f"? {note}  deleted here, not pushed")
    assert b.ok("sync", "push").splitlines()[0] == f"- {note}"
    assert note not in live_docs(b.env["LOREMAP_DATABASE_URL"])
    assert a.ok("sync", "pull").splitlines()[0] == f"- {note}"
    assert a.files() == {}


def test_the_mass_delete_guard_refuses_without_confirm(machines):
    a, b = machines("a"), machines("b")
    url = a.env["LOREMAP_DATABASE_URL"]
    for i in range(40):
        a.remember(f"Note number {i}", shared=False)  # SQLite mode: files only
    assert a.ok("sync", "push").splitlines()[-1].startswith("pushed 40 new,")
    b.ok("sync", "pull")
    for path in sorted(a.notes.glob("*.md"))[:30]:
        path.unlink()
    base_before = a.bases()
    code, out, err = a.run("sync", "push")
    assert code == 1 and out == ""
    assert err == ("loremap: error: refused: this push would delete 30 of the 40 notes on the "
                   "database (at least 25 and more than 10%); run it again with --confirm if "
                   "that is intended\n")
    assert len(live_docs(url)) == 40 and a.bases() == base_before
    assert "without --confirm it would be refused" in a.ok("sync", "push", "--dry-run")
    assert a.ok("sync", "push", "--confirm").splitlines()[-1].startswith(
        "pushed 0 new, 0 updated, 30 deleted")
    assert len(live_docs(url)) == 10
    code, _, err = b.run("sync", "pull")
    assert code == 1 and "this pull would delete 30 of the 40 notes of this vault" in err
    assert len(b.files()) == 40
    b.ok("sync", "pull", "--confirm")
    assert b.files() == a.files() and len(b.files()) == 10


def test_malformed_files_and_secrets_are_never_pushed(machines):
    a = machines("a")
    url = a.env["LOREMAP_DATABASE_URL"]
    note = a.remember("Deploy keys")
    (a.notes / "decision-broken.md").write_text("---\nid: [unclosed\n---\n# Broken\n",
                                                encoding="utf-8")
    edit(a.notes / f"{note}.md", "\naws key AKIAQ3E5X7Z9R2T4V6W8\n")
    code, out, err = a.run("sync", "push")
    assert code == 0
    warnings = err.splitlines()
    assert len(warnings) == 2
    assert warnings[0].startswith("loremap: warning: skipped .loremap/notes/decision-broken.md")
    assert warnings[0].endswith("not pushed (fix the file, then sync again)")
    assert warnings[1].startswith(f"loremap: warning: skipped .loremap/notes/{note}.md: AWS "
                                  "access key id at line ")
    assert warnings[1].endswith("; a note holding a secret is never pushed (remove it, then "
                                "sync again)")
    assert out.startswith("nothing to push")
    docs = live_docs(url)
    assert set(docs) == {note} and "AKIA" not in docs[note]
    assert not sql(url, "SELECT 1 FROM note_versions WHERE text LIKE %s", ("%AKIA%",))


def test_a_dropped_connection_writes_nothing_and_a_retry_succeeds(machines, monkeypatch):
    import psycopg

    from loremap.memory.service import Memory

    a = machines("a")
    url = a.env["LOREMAP_DATABASE_URL"]
    for i in range(5):
        a.remember(f"Offline note {i}", shared=False)
    original = Memory.index_loaded
    calls = []

    def dropping(self: Memory, loaded: Any) -> None:
        calls.append(loaded.note.id)
        if len(calls) == 3:  # mid-push: two notes already sent in this transaction
            pid = self.store.conn.info.backend_pid  # type: ignore[attr-defined]
            with psycopg.connect(url, autocommit=True) as other:
                other.execute("SELECT pg_terminate_backend(%s)", (pid,))
        original(self, loaded)

    monkeypatch.setattr(Memory, "index_loaded", dropping)
    code, out, err = a.run("sync", "push")
    assert code == 1 and out == ""
    assert err.startswith("loremap: error: lost the connection to ")
    assert err.endswith("nothing was written to the database, try again\n")
    assert err.count("\n") == 1
    assert live_docs(url) == {} and a.bases() == {}
    assert sql(url, "SELECT count(*) FROM nodes")[0][0] == 0
    monkeypatch.setattr(Memory, "index_loaded", original)
    assert a.ok("sync", "push").splitlines()[-1].startswith("pushed 5 new,")
    assert set(live_docs(url)) == set(a.files())
    assert a.json("sync", "status")["push"]["changes"] == []


def test_another_project_sees_none_of_these_notes(machines):
    a, c = machines("a"), machines("c", project="team/other")
    note = a.remember("Only for team app")
    assert c.json("sync", "pull")["changes"] == []
    assert c.files() == {}
    code, _, err = c.run("sync", "versions", note)
    assert code == 1 and "the database has no note" in err
    other = c.remember("Only for team other")
    assert a.json("sync", "pull")["changes"] == []
    assert set(a.files()) == {note} and set(c.files()) == {other}


def test_a_repository_and_its_clone_of_a_folder_share_one_project_key(machines):
    a = machines("app", project="")  # no remote: the key is the folder's name
    first = a.remember("Committed before the clone")
    subprocess.run(["git", "-C", str(a.root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(a.root), "commit", "-q", "-m", "notes"], check=True)
    b = machines("elsewhere", project="", clone_of=a.root)  # origin = a's folder
    later = a.remember("Remembered after the clone")
    pulled = b.json("sync", "pull")
    assert pulled["project"] == "app" and pulled["project_rule"] == "the folder's name"
    assert [c["id"] for c in pulled["changes"]] == [later]
    assert set(b.files()) == {first, later}
    assert a.json("sync", "status")["project"] == "app"


def test_a_pull_that_finds_no_notes_under_its_key_says_where_the_key_comes_from(machines):
    a, c = machines("a"), machines("c", project="")
    a.remember("Pushed under the team key")
    out = c.ok("sync", "pull").splitlines()
    assert out[0].startswith("nothing to pull (from ") and out[0].endswith("(project c))")
    assert out[1] == ("the database has no notes under project key 'c' (from the folder's "
                      "name); if another machine pushed notes, it uses another key: set "
                      "store.project (LOREMAP_PROJECT_KEY, or [store] project in "
                      ".loremap/config.toml) to one value on both sides")
    status = c.json("sync", "status")
    assert (status["project"], status["project_rule"]) == ("c", "the folder's name")
    assert status["pull"]["shared_notes"] == 0
    assert "the database has no notes" not in a.ok("sync", "pull")  # a's key has its note


def test_note_files_a_shared_database_lacks_are_counted_for_a_hint(machines):
    from loremap.app import App
    from loremap.sync.pending import unpushed

    a = machines("a")
    made = [a.remember(f"Written before the database {i}", shared=False) for i in range(2)]
    (a.notes / "Not an id.md").write_text("x", encoding="utf-8")

    def pending() -> tuple[str, ...]:
        app = App.open(a.root, a.env)
        try:
            found = unpushed(app.memory)
        finally:
            app.close()
        assert found is not None and found.project == PROJECT
        return found.ids

    assert pending() == tuple(sorted(made))
    app = App.open(a.root, {"LOREMAP_HOME": a.env["LOREMAP_HOME"]})
    try:
        assert unpushed(app.memory) is None  # the vault's own index reconciles by itself
    finally:
        app.close()
    from loremap.sync.pending import Unpushed

    assert Unpushed(PROJECT, "db", tuple(made)).hint() == (
        f"2 note files here are not in the shared database yet (project key '{PROJECT}'): "
        "`loremap sync push` sends them")
    assert Unpushed(PROJECT, "db", ()).hint() == ""
    a.ok("sync", "push")
    assert pending() == ()


def test_sync_needs_a_shared_database(project, cli):
    for action in ("push", "pull", "status"):
        result = cli("sync", action)
        assert result.code == 1
        assert result.err == ("loremap: error: sync needs a shared database: set "
                              "LOREMAP_DATABASE_URL (see docs/postgres.md)\n")
    assert cli("sync", "versions", "decision-x").code == 1


# --- the rules, without a database ----------------------------------------------------------


def doc(h: str, deleted: bool = False, when: str = "2026-01-01T00:00:00.000000Z") -> SharedDoc:
    return SharedDoc("n", "text", h, deleted, 1, when, "them@there")


LATE = 1_900_000_000 * 10**9  # a file time after 2026-01-01
EARLY = 1_700_000_000 * 10**9


@pytest.mark.parametrize(("local", "base", "remote", "push", "pull"), [
    # L       B     R                    push                  pull
    ("x", None, None, ("upload", "new"), None),
    (None, None, doc("x"), None, ("write", "new")),
    ("x", "x", doc("y"), None, ("write", "updated")),
    ("y", "x", doc("x"), ("upload", "updated"), None),
    (None, "x", doc("x"), ("tombstone", "deleted"), "held"),
    ("x", "x", doc("x", True), None, ("delete", "deleted")),
    ("y", "x", doc("x", True), ("upload", "new"), "held"),
    (None, "x", doc("y"), "held", ("write", "new")),
    ("y", "x", doc("z"), ("conflict", "conflict"), ("conflict", "conflict")),
    ("y", None, doc("z"), ("conflict", "conflict"), ("conflict", "conflict")),
    # no base: a file equal to the database's text is synced, even to a tombstone's
    ("x", None, doc("x"), ("record", ""), ("record", "")),
    ("x", None, doc("x", True), ("record", ""), ("delete", "deleted")),
    # a base entry for a note the database never had (a recreated database): new again
    ("x", "x", None, ("upload", "new"), ("record", "")),
    (None, "x", doc("x", True), ("record", ""), ("record", "")),
])
def test_the_three_way_rules(local, base, remote, push, pull):
    here = {"n": LocalNote(local, LATE)} if local else {}
    for direction, expected in (("push", push), ("pull", pull)):
        found = plan(direction, here, {"n": base} if base else {},
                     {"n": remote} if remote else {})
        if expected == "held":
            assert found.held and not found.steps, (direction, found.steps)
        elif expected is None:
            assert not found.steps and not found.held, (direction, found.steps)
        else:
            assert [(s.op, s.change) for s in found.steps] == [expected], direction


def test_a_conflict_goes_to_the_newer_side():
    remote = {"n": doc("z", when="2026-01-01T00:00:00.000000Z")}
    newer_here = plan("push", {"n": LocalNote("y", LATE)}, {"n": "x"}, remote).steps[0]
    assert (newer_here.winner, newer_here.base) == ("local", "y")
    older_here = plan("pull", {"n": LocalNote("y", EARLY)}, {"n": "x"}, remote).steps[0]
    assert (older_here.winner, older_here.base) == ("database", "z")


def test_a_text_this_writer_left_is_this_vaults_own_earlier_state():
    """Remembered here (file and database at once, no base yet), then edited by hand."""
    here, remote = {"n": LocalNote("y", EARLY)}, {"n": doc("x")}
    push = plan("push", here, {}, remote, writer="them@there").steps
    assert [(s.op, s.change) for s in push] == [("upload", "updated")]
    pull = plan("pull", here, {}, remote, writer="them@there").steps
    assert [(s.op, s.base) for s in pull] == [("record", "x")]  # nothing to pull: push's
    assert plan("push", here, {}, remote, writer="me@here").steps[0].op == "conflict"


def test_the_guard_needs_both_25_notes_and_more_than_a_tenth():
    def deleting(n: int) -> Any:
        return plan("pull", {f"n{i}": LocalNote("x", 0) for i in range(n)},
                    {f"n{i}": "x" for i in range(n)},
                    {f"n{i}": doc("x", True) for i in range(n)})

    assert guard(deleting(24), 24) is None
    assert guard(deleting(25), 250) is None
    assert guard(deleting(25), 249) is not None


# --- a teammate's note before `sync pull`: list, show and forget agree -------------------


def test_a_note_not_pulled_yet_is_shown_from_the_database(machines):
    a, b = machines("a"), machines("b")
    note = a.remember("We deploy on Fridays", "only before noon")
    assert note in b.ok("list")
    shown = b.ok("show", note)
    assert "only before noon" in shown and "sync pull" in shown
    assert b.json("show", note)["in_database_only"] is True
    assert not (b.notes / f"{note}.md").exists()  # reading fetches nothing


def test_forgetting_a_note_not_pulled_yet_fetches_and_archives_it(machines, db):
    a, b = machines("a"), machines("b")
    note = a.remember("Staging uses the old cluster", "until the move")
    assert b.run("forget", note, "--reason", "moved")[0] == 0
    assert "status: archived" in (b.notes / f"{note}.md").read_text(encoding="utf-8")
    assert "status: archived" in live_docs(db)[note]  # the team's copy is archived too
    status = b.json("sync", "status")  # the fetched file is recorded as synced
    assert status["pull"]["changes"] == [] and status["push"]["changes"] == []


def test_an_empty_list_on_a_database_says_to_push_the_files_here(machines):
    a = machines("a")
    a.remember("Written before the database", shared=False)
    out = a.ok("list")
    assert "no notes in the shared database" in out and "`loremap sync push`" in out



def test_counts_of_a_procedure_kept_apart_merge_to_the_higher_of_each(machines):
    a, b = machines("a"), machines("b")
    note = json.loads(a.ok("remember", "--type", "procedure", "--title", "Deploy the app",
                           "-m", "make deploy", "--json"))["id"]
    a.ok("sync", "push")  # the base of both sides
    b.ok("sync", "pull")
    for _ in range(3):
        a.ok("outcome", note, "success")
    time.sleep(0.05)
    for _ in range(2):
        b.ok("outcome", note, "failure")
    # A's three successes and B's two failures both edited the note: the newer (B's) wins the
    # conflict, with A's higher success count.
    report = a.json("sync", "push")
    assert [c["change"] for c in report["changes"]] == ["conflict"]
    b.ok("sync", "pull")
    texts = {m.root.name: (m.notes / f"{note}.md").read_text(encoding="utf-8") for m in (a, b)}
    assert texts["a"] == texts["b"], texts
    assert "successes: 3\nfailures: 2\n" in texts["a"]
    assert live_docs(a.env["LOREMAP_DATABASE_URL"])[note] == texts["a"]
    recalled = a.json("search", "deploy", "the", "app")["items"][0]
    assert recalled["id"] == note and "worked 3 of 5 times reported (ranked up)" in \
        recalled["why"]
    # A second sync changes nothing, and a re-counted side never doubles: both stay at 3/2.
    assert a.json("sync", "status")["push"]["changes"] == []
    assert b.json("sync", "status")["pull"]["changes"] == []
    # Counted offline here (no database), newer than the database's: this side wins, with the
    # database's higher failure count.
    b.ok("outcome", note, "failure")  # 3/3 on the database
    time.sleep(0.05)
    for _ in range(2):
        a.ok("outcome", note, "success", shared=False)  # 5/2 in A's file only
    report = a.json("sync", "push")
    assert [(c["change"], c["winner"]) for c in report["changes"]] == [("conflict", "local")]
    b.ok("sync", "pull")
    texts = {m.root.name: (m.notes / f"{note}.md").read_text(encoding="utf-8") for m in (a, b)}
    assert texts["a"] == texts["b"] == live_docs(a.env["LOREMAP_DATABASE_URL"])[note]
    assert "successes: 5\nfailures: 3\n" in texts["a"]
    assert a.json("sync", "status")["push"]["changes"] == []
