"""The keys of the shared server: a tokens file of named read-only and read-write tokens, tried
with the MCP SDK's own client against a real `serve --http` (in its process and through the
daemon); revocation and new keys without a restart; a tokens file that cannot serve; the
commands that manage it; and the one check every write of a read-only caller meets."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from test_mcp_transports import (
    FACT,
    INITIALIZE,
    TOKEN,
    _ping,
    _raw_session,
    request,
    start_http,
    text,
    through,
)

READ_TOOLS = ["recall", "read", "map", "handoff", "related"]
ALL_TOOLS = ["recall", "remember", "read", "map", "handoff", "forget", "outcome", "related"]
BASE = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
PROCEDURE = {"type": "procedure", "title": "Renew the login token", "body": "Call refresh."}


def add(cli: Any, path: Path, name: str, role: str) -> str:
    """`loremap serve token add`: the token it prints."""
    done = cli("serve", "token", "add", name, "--role", role, "--tokens", str(path))
    assert done.code == 0, done.err
    return str(done.out.strip())


def initialize(url: str, token: str) -> int:
    """The status of an MCP `initialize` sent with `token`."""
    return request(f"{url}/mcp", "POST", {**BASE, "Authorization": f"Bearer {token}"},
                   INITIALIZE.encode())[0]


def vault_bytes(project: Path) -> dict[str, bytes]:
    """Every note and handoff file with its bytes."""
    root = project / ".loremap"
    return {str(p.relative_to(root)): p.read_bytes()
            for folder in ("notes", "handoffs") for p in sorted((root / folder).glob("*"))}


def refusal(operation: str, name: str = "ci") -> str:
    return (f"{operation}: refused: the token {name!r} is read-only, and {operation} changes "
            "the memory; nothing was changed (use a read-write token)")


@pytest.fixture(params=["process", "daemon"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# --- roles ------------------------------------------------------------------------------------

def test_a_read_only_token_reads_and_every_write_it_asks_for_is_refused_and_changes_nothing(
        project, cli, tmp_path, mode):
    tokens = tmp_path / "tokens.toml"
    ci, alice = add(cli, tokens, "ci", "read-only"), add(cli, tokens, "alice", "read-write")
    noted: dict[str, Any] = {}

    async def main(server: Any) -> None:
        async with server.client(alice) as c:
            noted["writer"] = [t.name for t in (await c.list_tools()).tools]
            for fact in (FACT, PROCEDURE):
                done = await c.call_tool("remember", {"facts": [fact]})
                assert not done.is_error, text(done)
        noted["before"] = vault_bytes(project)
        async with server.client(ci) as c:
            noted["reader"] = [t.name for t in (await c.list_tools()).tools]
            noted["recalled"] = text(await c.call_tool("recall", {"query": "coupons apply"}))
            noted["read"] = await c.call_tool("read", {"target": "src/auth/login.ts"})
            noted["loaded"] = text(await c.call_tool("handoff", {"action": "load"}))
            writes = {
                "remember": {"facts": [{**FACT, "title": "Coupons stack with sales"}]},
                "forget": {"id": "gotcha-coupons-apply-after-the-cart-total", "purge": True},
                "outcome": {"id": "procedure-renew-the-login-token", "result": "success"},
                "handoff save": {"action": "save", "goal": "ship the coupon fix"},
            }
            noted["refused"] = {}
            for operation, arguments in writes.items():
                done = await c.call_tool(operation.split()[0], arguments)
                noted["refused"][operation] = (done.is_error, text(done))

    with through(project, mode, ("--tokens", str(tokens)), token=None) as server:
        anyio.run(main, server)
    assert noted["writer"] == ALL_TOOLS
    assert noted["reader"] == READ_TOOLS  # remember, forget and outcome are not shown to it
    assert "[gotcha] Coupons apply after the cart total" in noted["recalled"]
    assert not noted["read"].is_error
    assert "refused" not in noted["loaded"]  # loading a handoff only reads
    assert noted["refused"] == {op: (True, refusal(op)) for op in noted["refused"]}
    assert vault_bytes(project) == noted["before"]  # not one byte of a note or handoff moved
    # The audit names each key: alice's writes, and every write refused to ci.
    records = json.loads(cli("audit", "log", "--json").out)["records"]
    assert [(r["op"], r["token"]) for r in records if r["op"] == "refused"] == [
        ("refused", "ci")] * len(noted["refused"])
    assert {r["token"] for r in records if r["op"] != "refused"} == {"alice"}
    assert "unbroken" in cli("audit", "verify").out


def test_the_single_token_of_before_works_beside_a_tokens_file_as_the_read_write_default(
        project, cli, tmp_path):
    tokens = tmp_path / "tokens.toml"
    ci = add(cli, tokens, "ci", "read-only")

    async def main(server: Any) -> tuple[str, str]:
        async with server.client(TOKEN) as c:
            written = text(await c.call_tool("remember", {"facts": [FACT]}))
        async with server.client(ci) as c:
            refused = text(await c.call_tool("remember", {"facts": [PROCEDURE]}))
        return written, refused

    with through(project, "process", ("--tokens", str(tokens))) as server:
        written, refused = anyio.run(main, server)
    assert written.startswith("created gotcha-coupons-apply-after-the-cart-total")
    assert refused == refusal("remember")
    assert "bearer tokens: 2 from" in server.logs[0]
    assert "LOREMAP_HTTP_TOKEN as 'default' among them" in server.logs[0]


# --- revocation ---------------------------------------------------------------------------------

def test_a_revoked_token_gets_401_from_its_next_request_and_a_new_one_works_without_a_restart(
        project, cli, tmp_path, mode):
    tokens = tmp_path / "tokens.toml"
    ci, alice = add(cli, tokens, "ci", "read-only"), add(cli, tokens, "alice", "read-write")
    with through(project, mode, ("--tokens", str(tokens)), token=None) as server:
        session = _raw_session(server.port, ci)  # a session open before the revocation
        assert _ping(*session) == 200
        assert initialize(server.url, ci) == 200
        assert cli("serve", "token", "revoke", "ci", "--tokens", str(tokens)).code == 0
        assert initialize(server.url, ci) == 401
        assert _ping(*session) == 401  # its open session too: every request is checked
        assert initialize(server.url, alice) == 200
        bob = add(cli, tokens, "bob", "read-only")
        assert initialize(server.url, bob) == 200
        session[0].close()


def test_a_tokens_file_broken_while_serving_refuses_every_request_until_it_is_fixed(
        project, cli, tmp_path):
    tokens = tmp_path / "tokens.toml"
    alice = add(cli, tokens, "alice", "read-write")
    good = tokens.read_text(encoding="utf-8")
    with through(project, "process", ("--tokens", str(tokens)), token=None) as server:
        assert initialize(server.url, alice) == 200
        tokens.write_text(good.replace('role = "read-write"', 'role = "admin"'),
                          encoding="utf-8")
        status, body = request(f"{server.url}/mcp", "POST",
                               {**BASE, "Authorization": f"Bearer {alice}"},
                               INITIALIZE.encode())
        assert status == 503 and str(tokens) not in body  # the file's path is not for callers
        tokens.unlink()
        assert initialize(server.url, alice) == 503  # a deleted file opens nothing either
        tokens.write_text(good, encoding="utf-8")
        assert initialize(server.url, alice) == 200
        assert request(f"{server.url}/health")[0] == 200  # health never needed a key
    logged = "".join(server.logs)
    assert "unknown role 'admin'" in logged and alice not in logged


# --- starting ----------------------------------------------------------------------------------

def _entry(name: str = "ci", role: str = "read-only", sha: str = "ab" * 32, extra: str = ""
           ) -> str:
    return f'[[token]]\nname = "{name}"\nrole = "{role}"\nsha256 = "{sha}"\n{extra}\n'


@pytest.mark.parametrize(("content", "message"), [
    ("[[token]\nname = 'ci'\n", "not valid TOML (Expected ']]' at the end of an array "
                                "declaration (at line 1, column 8))"),
    (_entry(role="admin"), "token 'ci': unknown role 'admin' (read-only or read-write)"),
    (_entry() + _entry(name="CI", sha="cd" * 32),
     "token 'CI' appears twice (names are unique, whatever their case: the audit tells "
     "callers apart by them)"),
    (_entry() + _entry(name="dash"),
     "tokens 'ci' and 'dash' are the same token (give each client its own)"),
    (_entry(extra='roles = "read-write"'),
     "token 'ci': unknown key 'roles' (the keys are name, role, sha256, created)"),
    (_entry(sha="secret-token"), "token 'ci': sha256 must be the token's SHA-256, 64 hex "
                                 "digits (`printf %s TOKEN | sha256sum`)"),
    (_entry(name="a b"), "token 'a b': name must be 1-64 letters, digits or ._@- (starting "
                         "with a letter or digit)"),
    ("[tokens]\nci = 'x'\n", "unknown key 'tokens' (the file holds [[token]] tables only)"),
])
def test_a_tokens_file_that_cannot_serve_stops_serve_in_one_line_before_listening(
        project, tmp_path, content, message):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(content, encoding="utf-8")
    tokens.chmod(0o600)
    done = subprocess.run([sys.executable, "-m", "loremap", "serve", "--http", "127.0.0.1:0",
                           "--tokens", str(tokens)], cwd=project, capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stderr) == (1, f"loremap: error: {tokens}: {message}\n")


def test_through_the_daemon_a_bad_tokens_file_is_refused_before_a_daemon_is_asked(
        project, tmp_path):
    from loremap import wire

    tokens = tmp_path / "tokens.toml"
    tokens.write_text(_entry(role="admin"), encoding="utf-8")
    tokens.chmod(0o600)
    env = {**os.environ, "LOREMAP_DAEMON": "auto", "LOREMAP_DAEMON_IDLE_S": "60"}
    try:
        done = subprocess.run([sys.executable, "-m", "loremap", "serve", "--http",
                               "127.0.0.1:0", "--tokens", str(tokens)], cwd=project, env=env,
                              capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stderr) == (1, (
            f"loremap: error: {tokens}: token 'ci': unknown role 'admin' (read-only or "
            "read-write)\n"))
        assert wire.ask({"op": "status"}, env) is None  # no daemon was started to listen
    finally:
        wire.ask({"op": "stop"}, env)


def test_a_missing_or_group_writable_tokens_file_is_refused_in_one_line(project, tmp_path, cli):
    tokens = tmp_path / "tokens.toml"
    missing = cli("serve", "--http", "127.0.0.1:0", "--tokens", str(tokens))
    assert (missing.code, missing.err) == (1, (
        f"loremap: error: {tokens}: no such tokens file (create it with `loremap serve token "
        f"add NAME --role ROLE --tokens {tokens}`)\n"))
    add(cli, tokens, "ci", "read-only")
    tokens.chmod(0o664)
    shared = cli("serve", "--http", "127.0.0.1:0", "--tokens", str(tokens))
    assert (shared.code, shared.err) == (1, (
        f"loremap: error: {tokens}: the tokens file is writable by others, who could add a key "
        f"of their own; run `chmod go-w {tokens}`\n"))


def test_the_env_token_named_like_a_key_of_the_file_is_refused_at_start(project, cli, tmp_path,
                                                                         monkeypatch):
    tokens = tmp_path / "tokens.toml"
    add(cli, tokens, "Default", "read-only")
    monkeypatch.setenv("LOREMAP_HTTP_TOKEN", TOKEN)
    done = cli("serve", "--http", "127.0.0.1:0", "--tokens", str(tokens))
    assert (done.code, done.err) == (1, (
        f"loremap: error: {tokens} (with LOREMAP_HTTP_TOKEN as 'default'): token 'default' "
        "appears twice (names are unique, whatever their case: the audit tells callers apart "
        "by them)\n"))


def test_a_tokens_file_lets_the_server_listen_beyond_loopback(project, cli, tmp_path):
    tokens = tmp_path / "tokens.toml"
    ci = add(cli, tokens, "ci", "read-only")
    proc = start_http(project, "--http", "0.0.0.0:0", "--tokens", str(tokens))
    assert proc.stderr is not None
    try:
        line = proc.stderr.readline()
        found = re.search(r"http://0\.0\.0\.0:(\d+)/mcp", line)
        assert found, line + proc.stderr.read()
        assert f"bearer tokens: 1 from {tokens}, 1 read-only" in line
        url = f"http://127.0.0.1:{found.group(1)}"
        assert initialize(url, ci) == 200
        assert initialize(url, "lmk_not-a-token") == 401
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        proc.stderr.close()


# --- the commands ------------------------------------------------------------------------------

def test_token_add_prints_the_token_once_and_the_file_keeps_only_its_hash(cli, tmp_path):
    import hashlib

    tokens = tmp_path / "keys" / "tokens.toml"
    done = cli("serve", "token", "add", "ci", "--role", "read-only", "--tokens", str(tokens))
    token = done.out.strip()
    assert done.code == 0 and re.fullmatch(r"lmk_[A-Za-z0-9_-]{43}", token)
    assert done.err == (f"loremap: added token 'ci' (read-only) to {tokens}; it is shown only "
                        "now: the client sends it as 'Authorization: Bearer <token>'\n")
    kept = tokens.read_text(encoding="utf-8")
    assert token not in kept
    assert f'sha256 = "{hashlib.sha256(token.encode()).hexdigest()}"' in kept
    assert tokens.stat().st_mode & 0o022 == 0
    again = cli("serve", "token", "add", "CI", "--role", "read-write", "--tokens", str(tokens))
    assert (again.code, again.err) == (1, (
        f"loremap: error: {tokens}: a token named 'ci' exists already (revoke it first, or "
        "choose another name)\n"))
    as_json = json.loads(cli("serve", "token", "add", "dash", "--role", "read-only",
                             "--tokens", str(tokens), "--json").out)
    assert list(as_json) == ["json_version", "file", "name", "role", "created", "sha256",
                             "token"]
    assert as_json["sha256"] == hashlib.sha256(as_json["token"].encode()).hexdigest()


def test_token_list_and_revoke_read_the_file_named_by_the_environment(cli, tmp_path,
                                                                       monkeypatch):
    tokens = tmp_path / "tokens.toml"
    monkeypatch.setenv("LOREMAP_HTTP_TOKENS", str(tokens))
    for name, role in (("ci", "read-only"), ("alice", "read-write")):
        assert cli("serve", "token", "add", name, "--role", role).code == 0
    listed = json.loads(cli("serve", "token", "list", "--json").out)
    assert [(t["name"], t["role"]) for t in listed["tokens"]] == [("ci", "read-only"),
                                                                  ("alice", "read-write")]
    human = cli("serve", "token", "list").out.splitlines()
    assert [line.split()[:2] for line in human] == [["ci", "read-only"], ["alice", "read-write"]]
    unknown = cli("serve", "token", "revoke", "bob")
    assert (unknown.code, unknown.err) == (1, (
        f"loremap: error: {tokens}: no token named 'bob' (the tokens: ci, alice)\n"))
    revoked = cli("serve", "token", "revoke", "ci")
    assert revoked.out == (f"revoked token 'ci' (read-only) in {tokens}: a server reading "
                           "this file refuses it from its next request\n")
    assert [t["name"] for t in json.loads(cli("serve", "token", "list", "--json").out)[
        "tokens"]] == ["alice"]
    assert cli("serve", "token", "revoke", "alice").code == 0
    assert cli("serve", "token", "list").out == (
        f"no tokens in {tokens} (add one: loremap serve token add NAME --role ROLE)\n")


def test_revoke_removes_that_table_alone_and_keeps_the_hand_edits_around_it(cli, tmp_path):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        "# our keys\n\n# the CI job\n" + _entry(sha="ab" * 32) + "\n# Alice's laptop\n"
        + _entry(name="alice", role="read-write", sha="cd" * 32, extra="created = 2026-05-01"),
        encoding="utf-8")
    tokens.chmod(0o600)
    assert cli("serve", "token", "revoke", "ci", "--tokens", str(tokens)).code == 0
    assert tokens.read_text(encoding="utf-8") == (
        "# our keys\n\n# Alice's laptop\n"
        + _entry(name="alice", role="read-write", sha="cd" * 32, extra="created = 2026-05-01"))


def test_serve_token_needs_a_file_and_tokens_need_http(cli, project):
    nowhere = cli("serve", "token", "list")
    assert (nowhere.code, nowhere.err) == (
        1, "loremap: error: name the tokens file: --tokens FILE, or set LOREMAP_HTTP_TOKENS\n")
    stdio = cli("serve", "--tokens", "tokens.toml")
    assert (stdio.code, stdio.err) == (1, (
        "loremap: error: --tokens is for --http: over stdio the agent that starts the server "
        "is the local user, who needs no key\n"))


# --- the one check -----------------------------------------------------------------------------

def test_a_write_without_a_caller_is_refused_only_where_keys_are_required(project):
    from loremap.actor import READ_ONLY, READ_WRITE, Caller, acting, current
    from loremap.app import App
    from loremap.errors import Forbidden
    from loremap.use.access import check_write

    with App.open(project, dict(os.environ)) as app:
        assert current() is None
        check_write(app, "remember", keyed=False)  # the local user: CLI, hooks, stdio
        with pytest.raises(Forbidden, match="^remember: refused: the call reached the tool "
                                            "without its request's key"):
            check_write(app, "remember", keyed=True)
        with acting(Caller("alice", READ_WRITE)):
            check_write(app, "remember", keyed=True)
            assert current() == ("alice", READ_WRITE)
        with acting(Caller("ci", READ_ONLY)), pytest.raises(Forbidden, match="token 'ci'"):
            check_write(app, "forget", keyed=True)
        assert current() is None
