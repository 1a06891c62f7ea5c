"""A team of two on one PostgreSQL database, as they would use it: two clones of one repository
(so one project key, from the git remote), the MCP server on one machine, the CLI and the
hooks on the other, and a third repository in the same database that sees none of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import git
from test_store_contract import migrated

GOTCHA = "Coupons apply after the cart total is computed"


def loremap(cwd: Path, home: Path, url: str, *args: str, stdin: str = "",
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real `loremap` of one machine: its own home (personal vault, sync base, logs)."""
    environ = {**os.environ, "LOREMAP_HOME": str(home), "LOREMAP_DATABASE_URL": url,
               **(env or {})}
    return subprocess.run([sys.executable, "-m", "loremap", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, env=environ, timeout=120)


def psycopg_connect(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def team(tmp_path: Path, pg_url: str, app_role: str) -> dict[str, Any]:
    """Two clones of one repository, each initialised against the same database, as the docs
    set a team up: the owner migrates and secures it, the machines connect as the runtime role
    that row-level security binds (`url`; `owner` is the owner's)."""
    from psycopg.conninfo import make_conninfo

    owner = migrated(pg_url)
    password = uuid.uuid4().hex
    ok(loremap(tmp_path, tmp_path / "home-admin", owner, "db", "secure", "--role", app_role,
               "--password-env", "ROLE_PASSWORD", env={"ROLE_PASSWORD": password}))
    url = make_conninfo(owner, user=app_role, password=password)
    origin = tmp_path / "origin"
    seed = tmp_path / "seed"
    (seed / "src" / "shop").mkdir(parents=True)
    (seed / "src" / "shop" / "cart.py").write_text(
        '"""The cart: lines and totals."""\nfrom shop.discount import apply_coupon\n\n\n'
        "def cart_total(lines):\n    return apply_coupon(sum(lines))\n", encoding="utf-8")
    (seed / "src" / "shop" / "discount.py").write_text(
        '"""Coupons."""\n\n\ndef apply_coupon(total):\n    return total * 0.9\n',
        encoding="utf-8")
    git(seed, "init", "-q")
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "The shop")
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(origin))
    machines = {}
    for name in ("ann", "bob"):
        clone = tmp_path / name
        git(tmp_path, "clone", "-q", str(origin), str(clone))
        home = tmp_path / f"home-{name}"
        ok(loremap(clone, home, url, "init"))
        machines[name] = (clone, home)
    return {"url": url, "owner": owner, **machines}


def test_ann_records_through_the_mcp_server_and_bob_finds_it_everywhere(team, monkeypatch):
    from mcp import Client

    from loremap.mcp.projects import Projects
    from loremap.mcp.server import build_server

    url = team["url"]
    ann, ann_home = team["ann"]
    bob, bob_home = team["bob"]
    monkeypatch.setenv("LOREMAP_DATABASE_URL", url)  # the server runs in this process
    monkeypatch.setenv("LOREMAP_HOME", str(ann_home))
    monkeypatch.chdir(ann)
    projects = Projects(ann)
    try:
        server = build_server(projects, "lean")
        out: list[str] = []

        async def main() -> None:
            async with Client(server) as c:
                result = await c.call_tool("remember", {"facts": [{
                    "type": "gotcha", "title": GOTCHA, "files": ["src/shop/discount.py"],
                    "body": "apply_coupon runs on the summed total; a per-line discount would "
                            "be applied twice."}]})
                out.append(result.content[0].text)  # type: ignore[union-attr]
                result = await c.call_tool("recall", {"query": "why is a coupon applied twice"})
                out.append(result.content[0].text)  # type: ignore[union-attr]

        anyio.run(main)
    finally:
        projects.close()
    note_id = "gotcha-coupons-apply-after-the-cart-total-is-computed"
    assert f"created {note_id}" in out[0]
    assert out[1].startswith(f"[gotcha] {GOTCHA}")
    assert (ann / ".loremap" / "notes" / f"{note_id}.md").is_file()

    # Bob's search sees it at once (the database is shared), before any file moved.
    found = json.loads(ok(loremap(bob, bob_home, url, "search", "coupon applied twice",
                                  "--json")))
    assert found["items"][0]["id"] == note_id
    assert not (bob / ".loremap" / "notes" / f"{note_id}.md").exists()
    # His pull brings the file, byte for byte.
    assert f"+ {note_id}" in ok(loremap(bob, bob_home, url, "sync", "pull"))
    assert (bob / ".loremap/notes" / f"{note_id}.md").read_bytes() == \
        (ann / ".loremap/notes" / f"{note_id}.md").read_bytes()
    # His agent is told before it opens the file.
    payload = {"session_id": "s1", "transcript_path": str(bob / "t.jsonl"), "cwd": str(bob),
               "hook_event_name": "PreToolUse", "tool_name": "Read", "tool_use_id": "t1",
               "tool_input": {"file_path": str(bob / "src/shop/discount.py")}}
    hook = subprocess.run([sys.executable, "-m", "loremap.hook", "pre-tool"],
                          input=json.dumps(payload), capture_output=True, text=True,
                          env={**os.environ, "LOREMAP_HOME": str(bob_home),
                               "LOREMAP_DATABASE_URL": url}, timeout=120)
    assert hook.returncode == 0, hook.stderr
    assert GOTCHA in json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    # And his prompt recalls it.
    prompt = {**payload, "hook_event_name": "UserPromptSubmit",
              "prompt": "the coupon discount is applied twice at checkout, why?"}
    hook = subprocess.run([sys.executable, "-m", "loremap.hook", "prompt"],
                          input=json.dumps(prompt), capture_output=True, text=True,
                          env={**os.environ, "LOREMAP_HOME": str(bob_home),
                               "LOREMAP_DATABASE_URL": url}, timeout=120)
    assert GOTCHA in json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    # The code map is shared too, and doctor says this vault matches the database.
    assert "`discount.py` — Coupons. (apply_coupon)" in ok(loremap(bob, bob_home, url, "map",
                                                                  "src/shop"))
    assert "this vault matches the shared database" in ok(loremap(bob, bob_home, url,
                                                                  "doctor"))


def test_another_repository_in_the_same_database_sees_nothing(team, tmp_path):
    url = team["url"]
    ann, ann_home = team["ann"]
    ok(loremap(ann, ann_home, url, "remember", "-t", "decision", "--title",
               "Prices are kept in cents", "-m", "Integer cents, formatted at the edge."))
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    ok(loremap(other, tmp_path / "home-other", url, "init"))
    found = json.loads(ok(loremap(other, tmp_path / "home-other", url, "search",
                                  "prices cents", "--json")))
    assert found["items"] == []
    assert "no notes" in ok(loremap(other, tmp_path / "home-other", url, "list"))
    assert ok(loremap(other, tmp_path / "home-other", url, "sync", "pull")).count("+ ") == 0


def test_reindex_rebuilds_a_project_from_the_database_s_own_texts(team):
    url = team["url"]
    ann, ann_home = team["ann"]
    bob, bob_home = team["bob"]
    ok(loremap(ann, ann_home, url, "remember", "-t", "decision", "--title",
               "Prices are kept in cents", "-m", "Integer cents, formatted at the edge."))
    # Bob has not pulled: his reindex must not lose Ann's note.
    out = ok(loremap(bob, bob_home, url, "reindex", "--json"))
    assert json.loads(out)["indexed"] == 1
    found = json.loads(ok(loremap(bob, bob_home, url, "search", "prices cents", "--json")))
    assert found["items"][0]["id"] == "decision-prices-are-kept-in-cents"


def test_a_password_in_the_committed_config_is_refused(team):
    bob, bob_home = team["bob"]
    config = bob / ".loremap" / "config.toml"
    config.write_text(config.read_text(encoding="utf-8")
                      + '\n[store]\nurl = "postgresql://app:hunter2@db.example/loremap"\n',
                      encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "loremap", "list"], cwd=bob,
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "LOREMAP_HOME": str(bob_home)})
    assert result.returncode == 1
    assert "holds a password" in result.stderr and result.stderr.count("\n") == 1
    assert "hunter2" not in result.stderr


def test_without_psycopg_the_error_says_which_extra_to_install(team, tmp_path):
    bob, bob_home = team["bob"]
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "psycopg.py").write_text("raise ImportError('no psycopg here')\n",
                                        encoding="utf-8")
    result = loremap(bob, bob_home, team["url"], "list",
                     env={"PYTHONPATH": str(blocker)})
    assert result.returncode == 1
    assert "pipx install --force './loremap[postgres]'" in result.stderr


def test_the_pre_tool_hook_keeps_the_database_s_warnings_for_a_while(team, monkeypatch):
    """Asked before every file an agent touches, the hook reads the project's warnings once
    and keeps them (`SHARED_CACHE_S`); a note written on this machine is seen at once."""
    from loremap.app import App
    from loremap.hook import pretool

    url = team["url"]
    ann, ann_home = team["ann"]
    bob, bob_home = team["bob"]
    ok(loremap(ann, ann_home, url, "remember", "-t", "gotcha", "--title", GOTCHA,
               "-f", "src/shop/discount.py", "-m", "Per-line discounts would apply twice."))
    environ = {"LOREMAP_HOME": str(bob_home), "LOREMAP_DATABASE_URL": url}

    def before(name, session="s1"):
        out = pretool.pre_tool({"session_id": session, "cwd": str(bob), "tool_name": "Read",
                              "hook_event_name": "PreToolUse",
                              "tool_input": {"file_path": str(bob / "src/shop" / name)}},
                             environ)
        return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""

    assert before("cart.py") == ""  # nothing about it; the database was asked once
    assert (bob / ".loremap" / pretool.SHARED_CACHE).is_file()

    def no_database(*args, **kwargs):
        raise AssertionError("the database was asked again")

    monkeypatch.setattr(App, "open", no_database)
    assert GOTCHA in before("discount.py")  # from what was kept
    monkeypatch.undo()

    # Ann's next gotcha reaches Bob's hook when what he kept expires...
    ok(loremap(ann, ann_home, url, "remember", "-t", "bug", "--title", "Cart total rounds down",
               "-f", "src/shop/cart.py", "-m", "sum() of floats, then int()."))
    assert before("cart.py", "s2") == ""
    monkeypatch.setattr(pretool, "SHARED_CACHE_S", 0.0)
    assert "Cart total rounds down" in before("cart.py", "s3")
    # ...and a note written here is seen at once.
    monkeypatch.setattr(pretool, "SHARED_CACHE_S", 3600.0)
    assert before("cart.py", "s4") != ""
    ok(loremap(bob, bob_home, url, "remember", "-t", "gotcha", "--title", "Lines are frozen",
               "-f", "src/shop/cart.py", "-m", "A cart line is immutable once priced."))
    assert "Lines are frozen" in before("cart.py", "s5")
    # Another database or project key is never answered from what was kept.
    environ["LOREMAP_PROJECT_KEY"] = "someone/else"
    assert before("cart.py", "s6") == ""


def test_a_teammate_s_failed_command_is_named_before_it_runs_from_what_was_kept(team,
                                                                              monkeypatch):
    """Before each shell command on a shared database, the hook reads the error notes by
    command once and keeps them, as it does the files' warnings."""
    from loremap.app import App
    from loremap.hook import pretool

    url = team["url"]
    ann, ann_home = team["ann"]
    bob, bob_home = team["bob"]
    ok(loremap(ann, ann_home, url, "remember", "-t", "error", "--title", "Deploy needs a token",
               "-m", "make deploy reads ~/.deploy-token.", "--error",
               "FileNotFoundError: no token", "--command", "make deploy"))
    environ = {"LOREMAP_HOME": str(bob_home), "LOREMAP_DATABASE_URL": url}

    def before(command, session="s1"):
        out = pretool.pre_tool({"session_id": session, "cwd": str(bob), "tool_name": "Bash",
                                "hook_event_name": "PreToolUse",
                                "tool_input": {"command": command}}, environ)
        return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""

    assert "Deploy needs a token" in before("make  deploy")
    assert (bob / ".loremap" / pretool.SHARED_COMMANDS).is_file()

    def no_database(*args, **kwargs):
        raise AssertionError("the database was asked again")

    monkeypatch.setattr(App, "open", no_database)
    assert "Deploy needs a token" in before("make deploy", "s2")  # from what was kept
    assert before("make test", "s3") == ""


def test_an_unreachable_database_costs_the_pre_tool_hook_one_short_wait(team, monkeypatch):
    """A server that does not answer: the hook waits libpq's least (2 s, not the CLI's 10),
    says nothing, logs why, and does not try again before its cache expires."""
    import psycopg

    from loremap.hook import pretool
    from loremap.store.postgres import store

    bob, bob_home = team["bob"]
    waits = []

    def unreachable(*args, **kwargs):
        waits.append(kwargs["connect_timeout"])
        raise psycopg.OperationalError("connection timeout expired")

    monkeypatch.setattr(store.psycopg, "connect", unreachable)
    environ = {"LOREMAP_HOME": str(bob_home), "LOREMAP_DATABASE_URL": team["url"]}
    for session in ("s1", "s2"):
        assert pretool.pre_tool({"session_id": session, "cwd": str(bob), "tool_name": "Edit",
                               "tool_input": {"file_path": str(bob / "src/shop/cart.py")}},
                              environ) == ""
    monkeypatch.undo()  # psycopg.connect is the module's: the fixtures need it back
    assert waits == [2]
    logged = (bob_home / "logs" / "hook.log").read_text(encoding="utf-8")
    assert "the shared database did not answer" in logged


def test_personal_notes_stay_on_their_machine_and_are_still_recalled(team):
    """A personal preference on a shared project: in Bob's own index (never the database),
    found by his search, his list and his prompt hook with the project's notes; Ann sees none
    of it; purging it leaves a project note of the same id alone."""
    import psycopg

    url = team["url"]
    ann, ann_home = team["ann"]
    bob, bob_home = team["bob"]
    ok(loremap(ann, ann_home, url, "remember", "-t", "gotcha", "--title", GOTCHA,
               "-f", "src/shop/discount.py", "-m", "Per-line discounts would apply twice."))
    ok(loremap(bob, bob_home, url, "remember", "--personal", "-t", "preference", "--title",
               "Run the tests with pytest -x", "-m", "Stop at the first failure of the suite."))
    with psycopg.connect(team["owner"]) as conn:  # the owner sees every project
        assert conn.execute("SELECT count(*) FROM nodes WHERE id LIKE 'preference-%' OR "
                            "title LIKE '%pytest%'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM nodes WHERE id LIKE 'gotcha-%'"
                            ).fetchone()[0] == 1
    # To doctor, his personal note is not a file that differs from the team's database.
    assert "0 note file(s) here differ from the shared database and 1 of its notes are not " \
        "here" in ok(loremap(bob, bob_home, url, "doctor"))
    found = json.loads(ok(loremap(bob, bob_home, url, "search", "run the tests, stop at the "
                                  "first failure", "--json")))
    assert [(i["id"], i["scope"]) for i in found["items"]][:1] == [
        ("preference-run-the-tests-with-pytest-x", "personal")]
    ok(loremap(bob, bob_home, url, "remember", "--personal", "-t", "preference", "--title",
               "A coupon applied twice is my first suspect", "-m", "I check apply_coupon."))
    both = json.loads(ok(loremap(bob, bob_home, url, "search", "coupon applied twice",
                                 "--json")))
    scopes = {i["id"]: i["scope"] for i in both["items"]}
    assert scopes["gotcha-coupons-apply-after-the-cart-total-is-computed"] == "project"
    assert scopes["preference-a-coupon-applied-twice-is-my-first-suspect"] == "personal"
    listed = ok(loremap(bob, bob_home, url, "list"))
    assert "Run the tests with pytest -x (personal)" in listed and GOTCHA in listed
    prompt = {"session_id": "s1", "transcript_path": str(bob / "t.jsonl"), "cwd": str(bob),
              "hook_event_name": "UserPromptSubmit",
              "prompt": "run the tests and stop at the first failure"}
    hook = subprocess.run([sys.executable, "-m", "loremap.hook", "prompt"],
                          input=json.dumps(prompt), capture_output=True, text=True,
                          env={**os.environ, "LOREMAP_HOME": str(bob_home),
                               "LOREMAP_DATABASE_URL": url}, timeout=120)
    assert "pytest -x" in json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "pytest" not in ok(loremap(ann, ann_home, url, "search", "run the tests, stop at "
                                      "the first failure"))
    # A personal note whose id is also a project note's in the database (written before this
    # machine joined it; the project's is not pulled here): purging it spares the project's.
    note_id = "gotcha-coupons-apply-after-the-cart-total-is-computed"
    ok(loremap(bob, bob_home, url, "remember", "--personal", "-t", "gotcha", "--title", GOTCHA,
               "-m", "My own reminder."))
    mine = bob_home / "personal" / "notes" / f"{note_id}-2.md"
    mine.rename(mine.with_name(f"{note_id}.md"))
    mine = mine.with_name(f"{note_id}.md")
    mine.write_text(mine.read_text(encoding="utf-8").replace(f"{note_id}-2", note_id),
                    encoding="utf-8")
    ok(loremap(bob, bob_home, url, "forget", "--purge", note_id))
    assert not mine.exists()
    again = json.loads(ok(loremap(ann, ann_home, url, "search", "coupon applied twice",
                                  "--json")))
    assert again["items"][0]["id"] == "gotcha-coupons-apply-after-the-cart-total-is-computed"


def test_with_embeddings_on_the_runtime_role_and_the_personal_index_get_vectors(team):
    """The vector list on a shared database: the project's notes get vectors through the
    runtime role (their HNSW index built by the owner's function), personal notes in their own
    index (embedded by the search that needs them)."""
    from loremap.app import App

    url = team["url"]
    bob, bob_home = team["bob"]
    env = {"LOREMAP_EMBEDDER": "hash"}
    ok(loremap(bob, bob_home, url, "remember", "-t", "gotcha", "--title", GOTCHA, "-f",
               "src/shop/discount.py", "-m", "Per-line discounts would apply twice.", env=env))
    ok(loremap(bob, bob_home, url, "remember", "--personal", "-t", "preference", "--title",
               "Run the tests with pytest -x", "-m", "Stop at the first failure.", env=env))
    found = json.loads(ok(loremap(bob, bob_home, url, "search", "discounts applied twice",
                                  "--json", env=env)))
    assert found["items"][0]["title"] == GOTCHA
    app = App.open(cwd=bob, environ={"LOREMAP_HOME": str(bob_home), "LOREMAP_DATABASE_URL": url,
                                     **env})
    try:
        embedder = app.embedder()
        personal = app.personal_index()
        assert embedder is not None and personal is not None
        for store in (app.store, personal.store):
            assert store.node_count() > 0 and store.missing_vectors(embedder.name, 10) == []
    finally:
        app.close()
    with psycopg_connect(team["owner"]) as conn:
        assert conn.execute("SELECT count(*) FROM pg_indexes WHERE tablename = 'vectors' AND "
                            "indexdef LIKE '%USING hnsw%'").fetchone()[0] == 1
