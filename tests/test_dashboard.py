"""The dashboard's JSON API and its listener, over a real project: a git repository in tmp,
`loremap init`, notes written through the CLI, the API asked through Starlette's TestClient
(the same ASGI app `loremap dashboard` serves), the command run as a user runs it.

The browser's side (the graph drawn, a click, the search, the pages) is
tests/test_dashboard_browser.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from conftest import git, run_cli_process
from loremap.listener import allowed_hosts
from loremap.mcp.projects import Projects
from loremap.use import keys as keyfile
from loremap.use.keys import Keyring
from loremap.web.app import STATIC, make_app

ROOT = Path(__file__).resolve().parents[1]
EVIL = "<script>alert('lore')</script> & <img src=x onerror=alert(2)>"


@contextlib.contextmanager
def client_for(root: Path, keys: Keyring | None = None, writes: bool = False
               ) -> Iterator[TestClient]:
    """The dashboard's app over the project at `root`, as `loremap dashboard` builds it."""
    projects = Projects(root, os.environ)
    app = make_app(projects.use, os.environ, keys, allowed_hosts("127.0.0.1", []), writes)
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            yield client
    finally:
        projects.close()


@pytest.fixture
def lore(project: Path, cli: Callable[..., Any]) -> Path:
    """The project with a few notes: one about a file, one linking it, one with HTML in its
    title, one superseded and one forgotten."""
    for argv in (
        ["-t", "gotcha", "--title", "Login tokens expire at midnight UTC", "-m",
         "The refresh runs before the expiry check.", "--file", "src/auth/login.ts"],
        ["-t", "decision", "--title", "Keep login stateless", "-m", "No session store.",
         "--link", "relates:gotcha-login-tokens-expire-at-midnight-utc"],
        ["-t", "concept", "--title", EVIL, "-m", "A title that holds markup."],
        ["-t", "decision", "--title", "Sessions in cookies", "-m", "The old way."],
        ["-t", "decision", "--title", "Sessions in JWT", "-m", "The new way.",
         "--supersedes", "decision-sessions-in-cookies"],
        ["-t", "bug", "--title", "A bug fixed long ago", "-m", "Gone."],
    ):
        done = cli("remember", *argv)
        assert done.code == 0, done.err
    assert cli("forget", "bug-a-bug-fixed-long-ago").code == 0
    return project


@pytest.fixture
def api(lore: Path) -> Iterator[TestClient]:
    with client_for(lore) as client:
        yield client


def test_the_graph_holds_modules_files_notes_and_their_links(api: TestClient) -> None:
    answer = api.get("/api/graph")
    assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
    graph = answer.json()
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert nodes["src/auth/"]["kind"] == "module"
    assert nodes["src/auth/login.ts"]["kind"] == "file"
    assert nodes["src/auth/login.ts"]["modules"] == ["src/auth/"]
    gotcha = nodes["gotcha-login-tokens-expire-at-midnight-utc"]
    assert (gotcha["kind"], gotcha["type"], gotcha["modules"]) == ("note", "gotcha", ["src/auth/"])
    assert nodes["decision-sessions-in-cookies"]["status"] == "superseded"
    edges = {(e["src"], e["dst"], e["rel"]) for e in graph["edges"]}
    assert ("gotcha-login-tokens-expire-at-midnight-utc", "src/auth/login.ts", "about") in edges
    assert ("decision-keep-login-stateless", "gotcha-login-tokens-expire-at-midnight-utc",
            "relates") in edges
    assert ("decision-sessions-in-jwt", "decision-sessions-in-cookies", "supersedes") in edges
    assert ("src/auth/", "src/auth/login.ts", "in") in edges
    assert graph["counts"]["notes"] == graph["counts"]["notes_shown"] == 6
    assert graph["hint"] == ""


def test_a_title_holding_markup_is_returned_as_data(api: TestClient) -> None:
    graph = api.get("/api/graph")
    assert graph.headers["content-type"] == "application/json"
    assert "script-src 'self'" in graph.headers["content-security-policy"]
    assert graph.headers["x-content-type-options"] == "nosniff"
    titles = [n["label"] for n in graph.json()["nodes"]]
    assert EVIL in titles  # the string itself, for the page to insert as text
    note = next(n for n in graph.json()["nodes"] if n["label"] == EVIL)
    page = api.get("/api/node", params={"id": note["id"]}).json()
    assert (page["kind"], page["type"], page["title"]) == ("note", "concept", EVIL)
    found = api.get("/api/search", params={"q": "title holds markup"}).json()
    assert any(item["title"] == EVIL for item in found["items"])


def test_the_page_inserts_every_string_as_text(api: TestClient) -> None:
    script = (STATIC / "app.js").read_text(encoding="utf-8")
    assert "innerHTML" not in script and "outerHTML" not in script
    assert "insertAdjacentHTML" not in script and "document.write" not in script
    assert "eval(" not in script and "new Function" not in script
    page = api.get("/")
    assert page.status_code == 200 and "<script src=\"static/app.js\"" in page.text
    assert not re.search(r"<script>(?!</script>)", page.text)  # no inline script at all
    for url in re.findall(r'(?:src|href)="([^"]+)"', page.text):
        assert not url.startswith(("http:", "https:", "//")), url


def test_a_search_shows_each_item_with_its_why_tokens_and_candidate_lists(
        api: TestClient) -> None:
    found = api.get("/api/search", params={"q": "when do login tokens expire"}).json()
    assert not found["abstained"] and found["items"]
    first = found["items"][0]
    assert first["id"] == "gotcha-login-tokens-expire-at-midnight-utc"
    assert first["why"] and first["tokens"] > 0
    assert {entry["list"] for entry in first["lists"]} & {"bm25", "entities", "notes"}
    assert all(entry["rank"] >= 1 for entry in first["lists"])
    assert found["tokens"] == sum(item["tokens"] for item in found["items"])
    assert re.match(r"\(\d+ items?, ~\d+ tokens", found["closing"])


def test_the_search_is_the_recall_the_agent_gets(lore: Path, api: TestClient) -> None:
    question = "when do login tokens expire"
    found = api.get("/api/search", params={"q": question}).json()
    done = run_cli_process("search", question, "--json", cwd=lore)
    assert done.returncode == 0, done.stderr
    cli_items = json.loads(done.stdout)["items"]
    assert [i["id"] for i in found["items"]] == [i["id"] for i in cli_items]
    assert [i["lists"] for i in found["items"]] == [
        [{"list": name, "rank": rank} for name, rank in i["lists"]] for i in cli_items]


def test_a_question_nothing_answers_says_so(api: TestClient) -> None:
    found = api.get("/api/search", params={"q": "zebra quantum marmalade"}).json()
    assert found["abstained"] and found["items"] == []
    assert found["closing"].startswith("nothing relevant in memory")


@pytest.mark.parametrize(("params", "message"), [
    ({}, "search what?"),
    ({"q": "x" * 4001}, "at most 4000"),
    ({"q": "login", "budget": "9"}, "budget '9'"),
    ({"q": "login", "budget": "many"}, "budget 'many'"),
])
def test_a_bad_search_is_one_line_and_400(api: TestClient, params: dict[str, str],
                                          message: str) -> None:
    answer = api.get("/api/search", params=params)
    assert answer.status_code == 400 and message in answer.json()["error"]


def test_a_node_opens_a_note_a_file_and_a_module(api: TestClient) -> None:
    note = api.get("/api/node", params={"id": "gotcha-login-tokens-expire-at-midnight-utc"})
    page = note.json()
    assert page["kind"] == "note" and "The refresh runs before the expiry check." in page["text"]
    assert {"id": "src/auth/login.ts", "rel": "about", "out": True} in page["links"]
    assert {"id": "decision-keep-login-stateless", "rel": "relates", "out": False} in \
        page["links"]
    file = api.get("/api/node", params={"id": "src/auth/login.ts"}).json()
    assert file["kind"] == "file" and "login" in file["text"]
    assert {"id": "gotcha-login-tokens-expire-at-midnight-utc", "rel": "about",
            "out": False} in file["links"]
    module = api.get("/api/node", params={"id": "src/auth/"}).json()
    assert module["kind"] == "module" and "src/auth" in module["text"]


def test_a_node_that_does_not_exist_is_404_and_one_outside_the_repository_refused(
        api: TestClient) -> None:
    assert api.get("/api/node", params={"id": "no-such-note"}).status_code == 404
    outside = api.get("/api/node", params={"id": "../../etc/passwd"})
    assert outside.status_code in (400, 404) and "passwd" in outside.json()["error"]
    assert api.get("/api/node", params={"id": ""}).status_code == 400


def test_health_lists_a_note_whose_file_changed_after_a_commit(lore: Path, api: TestClient
                                                               ) -> None:
    before = api.get("/api/health").json()
    assert before["stale_count"] == 0
    (lore / "src" / "auth" / "login.ts").write_text("export function login(at) {}\n",
                                                    encoding="utf-8")
    git(lore, "commit", "-qam", "login takes a time")
    after = api.get("/api/health").json()
    assert after["stale_count"] == 1
    stale = after["stale"][0]
    assert stale["id"] == "gotcha-login-tokens-expire-at-midnight-utc"
    assert stale["changes"] == ["src/auth/login.ts changed since this note (1 commit)"]
    checks = {f["check"] for f in after["findings"]}
    assert {"schema", "index", "daemon"} <= checks
    assert after["index"]["notes"] == {"active": 4, "archived": 1, "superseded": 1}
    assert after["index"]["files"] >= 1 and after["index"]["head"]


def test_health_names_broken_links_and_quarantined_notes(lore: Path, api: TestClient) -> None:
    note = lore / ".loremap" / "notes" / "decision-keep-login-stateless.md"
    text = note.read_text(encoding="utf-8")
    note.write_text(text.replace("gotcha-login-tokens-expire-at-midnight-utc",
                                 "gotcha-that-was-never-written"), encoding="utf-8")
    key = "AKIA" + "Z7QW3RTY5UIOPLKJ"  # an AWS access key id, spelt apart
    (lore / ".loremap" / "notes" / "gotcha-pasted-a-key.md").write_text(
        "---\nid: gotcha-pasted-a-key\ntype: gotcha\ntitle: Pasted a key\nstatus: active\n"
        f"---\n# Pasted a key\n\naws_access_key_id = {key}\n", encoding="utf-8")
    found = api.get("/api/health").json()
    assert any("gotcha-that-was-never-written" in f["message"] for f in found["links"])
    assert [q["id"] for q in found["quarantined"]] == ["gotcha-pasted-a-key"]
    assert found["quarantined_count"] == 1


def test_the_timeline_says_what_was_recorded_superseded_and_forgotten(api: TestClient) -> None:
    found = api.get("/api/timeline").json()
    events = [e for day in found["days"] for e in day["events"]]
    assert found["total"] == len(events) == 8  # 6 recorded, 1 superseded, 1 forgotten
    what = {(e["what"], e["id"]) for e in events}
    assert ("superseded", "decision-sessions-in-cookies") in what
    assert ("forgotten", "bug-a-bug-fixed-long-ago") in what
    superseded = next(e for e in events if e["what"] == "superseded")
    assert superseded["by"] == "decision-sessions-in-jwt"
    forgotten = next(e for e in events if e["what"] == "forgotten")
    assert forgotten["approximate"] is False  # the audit chain's record, to the second
    assert forgotten["actor"].startswith("human ") and forgotten["at"].startswith(
        forgotten["day"])
    assert all(e["seq"] is not None for e in events)  # every one of them from the chain
    days = [day["day"] for day in found["days"]]
    assert days == sorted(days, reverse=True)
    times = [e["at"] for e in events]
    assert times == sorted(times, reverse=True)


def test_notes_the_chain_never_saw_are_dated_from_themselves_and_an_erasure_hides_the_title(
        lore: Path, cli: Callable[..., Any]) -> None:
    notes = lore / ".loremap" / "notes"
    # As a `git pull` brings them: a note recorded in another clone, and one forgotten there.
    (notes / "concept-pulled-from-a-clone.md").write_text(
        "---\nid: concept-pulled-from-a-clone\ntype: concept\ntitle: Pulled from a clone\n"
        "recorded_at: 2026-01-02T03:04:05Z\n---\nWritten elsewhere.\n", encoding="utf-8")
    (notes / "bug-forgotten-elsewhere.md").write_text(
        "---\nid: bug-forgotten-elsewhere\ntype: bug\ntitle: Forgotten elsewhere\n"
        "status: archived\nrecorded_at: 2026-01-01T00:00:00Z\n---\nGone there.\n",
        encoding="utf-8")
    assert cli("forget", "decision-keep-login-stateless", "--erase", "--reason",
               "pasted by mistake").code == 0
    with client_for(lore) as client:
        found = client.get("/api/timeline").json()
    events = {(e["what"], e["id"]): e for day in found["days"] for e in day["events"]}
    pulled = events["recorded", "concept-pulled-from-a-clone"]
    assert (pulled["day"], pulled["seq"], pulled["actor"]) == ("2026-01-02", None, None)
    elsewhere = events["forgotten", "bug-forgotten-elsewhere"]
    assert elsewhere["approximate"] is True and elsewhere["seq"] is None
    erased = events["erased", "decision-keep-login-stateless"]
    assert erased["seq"] is not None and erased["actor"].startswith("human ")
    recorded = events["recorded", "decision-keep-login-stateless"]
    assert recorded["title"] == "(title erased)"
    assert "Keep login stateless" not in json.dumps(found)


def test_the_tokens_page_is_the_x_ray_s_own_html(api: TestClient, claude: Path) -> None:
    found = api.get("/api/tokens", params={"days": "7"}).json()
    assert found["sessions"] == 0 and found["html"].startswith("<!DOCTYPE html>")
    assert "No sessions." in found["html"]
    assert api.get("/api/tokens", params={"days": "-1"}).status_code == 400


def test_an_empty_vault_says_what_to_do(project: Path) -> None:
    with client_for(project) as client:
        graph = client.get("/api/graph").json()
        assert graph["counts"]["notes"] == 0 and graph["nodes"]  # the code map is there
        assert "loremap remember" in graph["hint"]
        assert client.get("/api/timeline").json()["days"] == []
        assert client.get("/api/health").json()["stale"] == []


def test_the_graph_is_capped_at_the_most_central_files(project: Path,
                                                       cli: Callable[..., Any]) -> None:
    files = {f"src/pkg{i % 4}/mod{i}.py": f"from src.pkg0 import mod0\nVALUE_{i} = {i}\n"
             for i in range(40)}
    for rel, text in files.items():
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "forty files")
    assert cli("index").code == 0
    with client_for(project) as client:
        whole = client.get("/api/graph").json()
        capped = client.get("/api/graph", params={"files": "5"}).json()
        assert whole["counts"]["files"] == capped["counts"]["files"] >= 40
        assert capped["counts"]["files_shown"] == 5 and capped["files_cap"] == 5
        ranks = sorted((n["rank"] for n in whole["nodes"] if n["kind"] == "file"), reverse=True)
        shown = sorted((n["rank"] for n in capped["nodes"] if n["kind"] == "file"),
                       reverse=True)
        assert shown == ranks[:5]  # the most central, by PageRank
        ids = {n["id"] for n in capped["nodes"]}
        assert all(e["src"] in ids and e["dst"] in ids for e in capped["edges"])
        assert client.get("/api/graph", params={"files": "999999"}).status_code == 400


def test_host_origin_method_and_token_are_checked(lore: Path) -> None:
    with client_for(lore, Keyring(None, "s3cret-token")) as client:
        assert client.get("/api/graph").status_code == 401
        assert client.get("/api/graph", headers={
            "authorization": "Bearer wrong"}).status_code == 401
        bearer = {"authorization": "Bearer s3cret-token"}
        assert client.get("/api/graph", headers=bearer).status_code == 200
        assert client.get("/").status_code == 200  # the page holds no data
        assert client.get("/static/app.js").status_code == 200
        assert client.get("/api/graph", headers={**bearer, "host": "evil.example"}
                          ).status_code == 421
        assert client.get("/api/graph", headers={**bearer, "origin": "http://evil.example"}
                          ).status_code == 403
        assert client.post("/api/graph", headers=bearer).status_code == 405
        assert client.delete("/api/node", headers=bearer).status_code == 405


def test_the_keys_of_the_shared_server_let_any_role_look_until_revoked(
        lore: Path, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.toml"
    _, ci = keyfile.add(tokens, "ci", "read-only")
    _, alice = keyfile.add(tokens, "alice", "read-write")
    with client_for(lore, Keyring(tokens)) as client:
        for token in (ci, alice):
            assert client.get("/api/graph", headers={
                "authorization": f"Bearer {token}"}).status_code == 200
        assert client.get("/api/graph").status_code == 401
        keyfile.revoke(tokens, "ci")
        assert client.get("/api/graph", headers={
            "authorization": f"Bearer {ci}"}).status_code == 401
        assert client.get("/api/graph", headers={
            "authorization": f"Bearer {alice}"}).status_code == 200
        tokens.write_text("[[token]]\nname = 'broken", encoding="utf-8")
        refused = client.get("/api/graph", headers={"authorization": f"Bearer {alice}"})
        assert refused.status_code == 503 and "tokens file cannot be read" in refused.json()[
            "error"]
        assert str(tokens) not in refused.text


def records(cli: Callable[..., Any]) -> list[dict[str, Any]]:
    done = cli("audit", "log", "--json")
    assert done.code == 0, done.err
    return list(json.loads(done.out)["records"])


def status_of(root: Path, note_id: str) -> str:
    text = (root / ".loremap" / "notes" / f"{note_id}.md").read_text(encoding="utf-8")
    found = re.search(r"^status: (\w+)$", text, re.MULTILINE)
    return found.group(1) if found else "active"


def test_without_writes_the_page_cannot_change_anything(api: TestClient, lore: Path,
                                                        cli: Callable[..., Any]) -> None:
    before = len(records(cli))
    refused = api.post("/api/forget", json={"id": "decision-keep-login-stateless"})
    assert refused.status_code == 405 and "--writes" in refused.json()["error"]
    assert api.get("/api/node", params={"id": "decision-keep-login-stateless"}).json()[
        "writes"] is False
    assert status_of(lore, "decision-keep-login-stateless") == "active"
    assert len(records(cli)) == before


def test_with_writes_the_page_forgets_and_counts_through_the_one_path(
        lore: Path, cli: Callable[..., Any]) -> None:
    assert cli("remember", "-t", "procedure", "--title", "Release the wheel", "-m",
               "Tag, build, upload.").code == 0
    with client_for(lore, writes=True) as client:
        assert client.get("/api/node", params={"id": "decision-keep-login-stateless"}).json()[
            "writes"] is True
        done = client.post("/api/forget", json={"id": "decision-keep-login-stateless",
                                                "reason": "we keep sessions now"})
        assert done.status_code == 200, done.text
        assert done.json()["action"] == "archived"
        counted = client.post("/api/outcome", json={"id": "procedure-release-the-wheel",
                                                    "result": "failure", "note": "twine 401"})
        assert counted.status_code == 200, counted.text
        assert (counted.json()["successes"], counted.json()["failures"]) == (0, 1)
    assert status_of(lore, "decision-keep-login-stateless") == "archived"
    last = records(cli)[-2:]
    assert [(r["op"], r["note"]) for r in last] == [
        ("archive", "decision-keep-login-stateless"), ("outcome", "procedure-release-the-wheel")]
    assert all((r["actor"], r["client"]) == ("human", "dashboard") for r in last)


def test_a_bad_write_is_one_line_and_changes_nothing(lore: Path, cli: Callable[..., Any]
                                                     ) -> None:
    before = len(records(cli))
    target = {"id": "decision-keep-login-stateless"}
    with client_for(lore, writes=True) as client:
        form = client.post("/api/forget", data={"id": "decision-keep-login-stateless"})
        assert form.status_code == 415  # a form of another site cannot send JSON unasked
        broken = client.post("/api/forget", content=b"{not json",
                             headers={"content-type": "application/json"})
        assert broken.status_code == 400 and "JSON object" in broken.json()["error"]
        assert client.post("/api/forget", json={}).json()["error"] == "id: required"
        assert client.post("/api/forget", json={"id": "decision-never-written"}
                           ).status_code == 404
        assert client.post("/api/outcome", json={**target, "result": "maybe"}
                           ).status_code == 400
        huge = client.post("/api/forget", json={**target, "reason": "x" * 70_000})
        assert huge.status_code == 413
        assert client.post("/api/graph", json=target).status_code == 405
        assert client.post("/api/forget", json=target, headers={
            "origin": "http://evil.example"}).status_code == 403
    assert status_of(lore, "decision-keep-login-stateless") == "active"
    assert len(records(cli)) == before


def test_a_read_only_key_may_look_but_not_write_and_the_refusal_is_recorded(
        lore: Path, cli: Callable[..., Any], tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.toml"
    _, ci = keyfile.add(tokens, "ci", "read-only")
    _, alice = keyfile.add(tokens, "alice", "read-write")
    target = {"id": "decision-keep-login-stateless"}
    with client_for(lore, Keyring(tokens), writes=True) as client:
        as_ci = {"authorization": f"Bearer {ci}"}
        assert client.get("/api/node", params=target, headers=as_ci).json()["writes"] is False
        assert client.post("/api/forget", json=target).status_code == 401
        refused = client.post("/api/forget", json=target, headers=as_ci)
        assert refused.status_code == 403 and "read-only" in refused.json()["error"]
        assert status_of(lore, "decision-keep-login-stateless") == "active"
        done = client.post("/api/forget", json=target,
                           headers={"authorization": f"Bearer {alice}"})
        assert done.status_code == 200, done.text
    last = records(cli)[-2:]
    assert [(r["op"], r["token"]) for r in last] == [("refused", "ci"), ("archive", "alice")]
    assert status_of(lore, "decision-keep-login-stateless") == "archived"


def test_the_vendored_graph_renderer_is_the_npm_file_with_its_licence() -> None:
    vendor = STATIC / "vendor"
    readme = (vendor / "README.md").read_text(encoding="utf-8")
    digest = hashlib.sha256((vendor / "cytoscape.min.js").read_bytes()).hexdigest()
    assert f"the file's sha256\n`{digest}`" in readme
    assert "Copyright (c) 2016-2026, The Cytoscape Consortium" in (
        vendor / "cytoscape.LICENSE").read_text(encoding="utf-8")


def test_the_wheel_ships_the_dashboard_s_files(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                           str(tmp_path), str(ROOT)], capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        pytest.skip(f"no wheel could be built here: {done.stderr.strip()[-300:]}")
    wheel = next(tmp_path.glob("loremap-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("index.html", "app.js", "style.css", "vendor/cytoscape.min.js",
                 "vendor/cytoscape.LICENSE"):
        assert f"loremap/web/static/{name}" in names, name


def test_the_command_refuses_a_non_loopback_bind_without_a_token(lore: Path) -> None:
    done = run_cli_process("dashboard", "--host", "0.0.0.0", "--port", "0", cwd=lore)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "loremap: error: refusing to listen on 0.0.0.0 without a token: give a tokens file "
        "(--tokens FILE, made with `loremap serve token add`) or set LOREMAP_HTTP_TOKEN "
        "(clients send it as 'Authorization: Bearer <token>'), or bind 127.0.0.1"]


def test_a_port_in_use_is_one_line(lore: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = run_cli_process("dashboard", "--port", str(port), cwd=lore)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"loremap: error: port {port} on 127.0.0.1 is in use: choose another with --port "
        "(0 takes any free port)"]


def test_outside_a_project_the_command_says_to_init(tmp_path: Path) -> None:
    done = run_cli_process("dashboard", "--port", "0", cwd=tmp_path)
    assert done.returncode == 1 and "run `loremap init`" in done.stderr
    bad = run_cli_process("dashboard", "--port", "70000", cwd=tmp_path)
    assert bad.returncode == 1 and "write a port from 0 to 65535" in bad.stderr


def wait_closed(port: int, within: float = 60.0) -> bool:
    """Whether nothing listens on `port` any more, within `within` seconds (the daemon stops
    a listener once it sees its process's connection close)."""
    import time

    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_through_the_daemon_the_dashboard_is_served_by_its_warm_apps(
        lore: Path, tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    from loremap import wire

    tokens = tmp_path / "tokens.toml"
    _, token = keyfile.add(tokens, "ci", "read-only")
    env = {**os.environ, "LOREMAP_DAEMON": "auto", "LOREMAP_DAEMON_IDLE_S": "60"}
    proc = subprocess.Popen([sys.executable, "-m", "loremap", "dashboard", "--port", "0",
                             "--tokens", str(tokens)],
                            cwd=lore, env=env, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, line
        assert f"bearer tokens: 1 from {tokens}" in line and token not in line
        port = int(match.group(1))
        url = f"http://127.0.0.1:{port}/api/graph"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=60)
        assert refused.value.code == 401
        refused.value.close()
        asked = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(asked, timeout=60) as r:
            graph = json.load(r)
        assert graph["counts"]["notes"] == 6
        found = wire.ask({"op": "status"}, env)
        assert found is not None and found["busy"] >= 1  # the dashboard's connection
        assert str(lore.resolve()) in found["projects"]  # its App is the daemon's
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert wait_closed(port)  # the listener went with the process
        assert wire.ask({"op": "status"}, env) is not None  # and the daemon goes on
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
        wire.ask({"op": "stop"}, env)
