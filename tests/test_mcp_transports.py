"""The MCP server as agents reach it: a `loremap serve` process over stdio and over streamable
HTTP (token, Host/Origin, health, body limit, shutdown), many clients at once, a client that
hangs up mid-call, and a client nobody here wrote (the MCP Inspector CLI, from npm)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from conftest import git
from loremap.vault.fs import file_lock

# npx keeps its downloads under the real home; the tests run with a temporary one.
NPM_CACHE = Path(os.path.expanduser("~")) / ".npm"
TOKEN = "test-token-0123456789"
FACT = {"type": "gotcha", "title": "Coupons apply after the cart total",
        "body": "apply_coupon runs on the sum.", "files": ["src/auth/login.ts"]}


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def stdio_params(project: Path, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "loremap", "serve"],
                                 cwd=str(project), env={**os.environ, **(env or {})})


class HttpServer:
    def __init__(self, proc: subprocess.Popen[str], port: int) -> None:
        self.proc = proc
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.logs: list[str] = []
        self.worker = proc.pid  # the process running the tool calls (the daemon's, through it)

    @contextlib.asynccontextmanager
    async def client(self, token: str | None = TOKEN) -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (httpx2.AsyncClient(headers=headers, timeout=60) as http,
                    Client(streamable_http_client(f"{self.url}/mcp", http_client=http)) as c):
            yield c


def start_http(project: Path, *args: str, env: dict[str, str] | None = None
               ) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "loremap", "serve", *args], cwd=project,
                            env={**os.environ, **(env or {})}, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)


@pytest.fixture(params=["process", "daemon"])
def http_server(project: Path, request: pytest.FixtureRequest) -> Iterator[HttpServer]:
    """`serve --http` in its own process, and through the daemon (which listens for it as
    long as the `serve` process lives)."""
    with through(project, request.param) as server:
        yield server


@contextlib.contextmanager
def through(project: Path, mode: str, args: tuple[str, ...] = (),
            env: dict[str, str] | None = None, token: str | None = TOKEN
            ) -> Iterator[HttpServer]:
    """`serving` in the `serve` process (`mode` "process") or through the daemon ("daemon")."""
    if mode == "process":
        with serving(project, env, args, token) as server:
            yield server
        return
    from loremap import wire

    env = {**(env or {}), "LOREMAP_DAEMON": "auto", "LOREMAP_DAEMON_IDLE_S": "60"}
    daemon_env = {**os.environ, **env}
    try:
        with serving(project, env, args, token) as server:
            found = wire.ask({"op": "status"}, daemon_env)
            assert found is not None and found["busy"] >= 1  # the listener's connection
            server.worker = int(found["pid"])
            yield server
        # The serve process is gone: so is its listener, and the daemon goes on.
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", server.port), timeout=5).close()
        assert wire.ask({"op": "status"}, daemon_env) is not None
    finally:
        wire.ask({"op": "stop"}, daemon_env)


@contextlib.contextmanager
def serving(project: Path, env: dict[str, str] | None = None, args: tuple[str, ...] = (),
            token: str | None = TOKEN) -> Iterator[HttpServer]:
    """`loremap serve --http` with the bearer token `token` (none: None), more `args` and
    `env`, stopped on exit."""
    proc = start_http(project, "--http", "127.0.0.1:0", *args,
                      env={**({"LOREMAP_HTTP_TOKEN": token} if token else {}), **(env or {})})
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
    assert found, line + proc.stderr.read()
    server = HttpServer(proc, int(found.group(1)))
    server.logs.append(line)
    # Drain what the server logs from now on: a full pipe would block it.
    drain = threading.Thread(target=server.logs.extend, args=(proc.stderr,), daemon=True)
    drain.start()
    try:
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        drain.join(timeout=30)
        proc.stderr.close()


def request(url: str, method: str = "GET", headers: dict[str, str] | None = None,
            body: bytes | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8")


def indexed_notes(project: Path) -> set[str]:
    with sqlite3.connect(project / ".loremap" / "index.sqlite") as conn:
        return {r[0] for r in conn.execute("SELECT id FROM nodes WHERE kind = 'note'")}


# --- stdio -------------------------------------------------------------------------------------

def test_a_serve_process_answers_over_stdio(project):
    async def main() -> tuple[list[str], str, str]:
        async with Client(stdio_params(project)) as c:
            names = [t.name for t in (await c.list_tools()).tools]
            written = text(await c.call_tool("remember", {"facts": [FACT]}))
            recalled = text(await c.call_tool("recall", {"query": "when do coupons apply"}))
            return names, written, recalled

    names, written, recalled = anyio.run(main)
    assert names == ["recall", "remember", "read", "map", "handoff", "forget", "outcome",
                     "related"]
    assert written.startswith("created gotcha-coupons-apply-after-the-cart-total")
    assert "[gotcha] Coupons apply after the cart total" in recalled


def test_two_agents_writing_the_same_project_at_once_lose_nothing(project):
    per_client = 12

    async def agent(name: str, ids: list[str]) -> None:
        async with Client(stdio_params(project)) as c:
            for n in range(per_client):
                fact = {"type": "bug", "title": f"Agent {name} found bug number {n}",
                        "body": f"bug {n} of agent {name}"}
                result = await c.call_tool("remember", {"facts": [fact]})
                assert not result.is_error, text(result)
                ids.append(text(result).split()[1])

    async def main() -> list[str]:
        ids: list[str] = []
        async with anyio.create_task_group() as group:
            group.start_soon(agent, "alpha", ids)
            group.start_soon(agent, "beta", ids)
        return ids

    ids = anyio.run(main)
    assert len(set(ids)) == 2 * per_client
    files = {p.stem for p in (project / ".loremap" / "notes").glob("*.md")}
    assert set(ids) <= files
    assert set(ids) <= indexed_notes(project)


def test_serve_refuses_an_unknown_tool_profile(project):
    result = subprocess.run([sys.executable, "-m", "loremap", "serve"], cwd=project,
                            env={**os.environ, "LOREMAP_TOOLS": "everything"},
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 1
    assert "LOREMAP_TOOLS='everything': use 'lean'" in result.stderr


# --- HTTP ----------------------------------------------------------------------------------------

def test_http_needs_the_bearer_token(http_server):
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}}).encode()
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    no_token = request(f"{http_server.url}/mcp", "POST", base, init)
    wrong = request(f"{http_server.url}/mcp", "POST",
                    {**base, "Authorization": "Bearer not-the-token"}, init)
    right = request(f"{http_server.url}/mcp", "POST",
                    {**base, "Authorization": f"Bearer {TOKEN}"}, init)
    assert no_token[0] == 401 and wrong[0] == 401
    assert "bearer token" in no_token[1]
    assert right[0] == 200 and '"serverInfo"' in right[1]

    async def main() -> str:
        async with http_server.client() as c:
            await c.call_tool("remember", {"facts": [FACT]})
            return text(await c.call_tool("recall", {"query": "when do coupons apply"}))

    assert "[gotcha] Coupons apply after the cart total" in anyio.run(main)


def test_http_checks_host_and_origin_and_answers_health_without_the_token(http_server):
    status, body = request(f"{http_server.url}/health")
    health = json.loads(body)
    assert status == 200 and health["status"] == "ok" and health["store"] == "ok"
    assert set(health) == {"status", "version", "uptime_s", "store"}
    assert request(f"{http_server.url}/health", headers={"Host": "evil.example"})[0] == 421
    assert request(f"{http_server.url}/health",
                   headers={"Origin": "http://evil.example"})[0] == 403
    allowed = request(f"{http_server.url}/health",
                      headers={"Origin": f"http://localhost:{http_server.port}"})
    assert allowed[0] == 200


def test_http_refuses_an_oversized_body(http_server):
    """The limit is judged on the declared length, before the body is read: only the headers
    are sent (a client still writing 1.1 MB when the server answers and closes would see a
    broken pipe instead of the answer, depending on the machine's load)."""
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{http_server.port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Authorization: Bearer {TOKEN}\r\nContent-Length: 1100000\r\n\r\n")
    with socket.create_connection(("127.0.0.1", http_server.port), timeout=60) as sock:
        sock.sendall(head.encode("ascii"))
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_binding_beyond_loopback_without_a_token_refuses_to_start(project):
    result = subprocess.run([sys.executable, "-m", "loremap", "serve", "--http", "0.0.0.0:0"],
                            cwd=project, capture_output=True, text=True, timeout=60,
                            env={k: v for k, v in os.environ.items()
                                 if k != "LOREMAP_HTTP_TOKEN"})
    assert result.returncode == 1
    assert "refusing to listen on 0.0.0.0 without a token" in result.stderr


def test_a_bad_address_is_refused_in_one_line(project):
    result = subprocess.run([sys.executable, "-m", "loremap", "serve", "--http", "here:port"],
                            cwd=project, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip() == ("loremap: error: --http 'here:port': write HOST:PORT, "
                                     "e.g. 127.0.0.1:8787")


# --- sessions: a cap and an idle expiry -----------------------------------------------------------

INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw",
                                                                        "version": "0"}}})


def _post(conn: http.client.HTTPConnection, headers: dict[str, str], body: str
          ) -> tuple[int, dict[str, str], str]:
    conn.request("POST", "/mcp", body, headers)
    response = conn.getresponse()
    text = response.read().decode("utf-8")
    return response.status, {k.lower(): v for k, v in response.getheaders()}, text


def _ping(conn: http.client.HTTPConnection, headers: dict[str, str]) -> int:
    return _post(conn, headers, json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping"}))[0]


def test_a_session_over_the_cap_gets_503_with_retry_after_and_the_open_ones_keep_working(
        project):
    with serving(project, {"LOREMAP_HTTP_MAX_SESSIONS": "2",
                           "LOREMAP_HTTP_SESSION_IDLE_S": "600"}) as server:
        first, second = _raw_session(server.port), _raw_session(server.port)
        third = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        headers = {k: v for k, v in second[1].items() if k != "mcp-session-id"}
        status, answer_headers, body = _post(third, headers, INITIALIZE)
        assert (status, answer_headers.get("retry-after")) == (503, "60")
        assert json.loads(body)["error"]["message"] == "Too many open sessions"
        assert _ping(*first) == 200 and _ping(*second) == 200
        second[0].request("DELETE", "/mcp", headers=second[1])  # a client that says goodbye
        assert second[0].getresponse().status == 200
        status, answer_headers, _ = _post(third, headers, INITIALIZE)
        assert status == 200 and answer_headers.get("mcp-session-id")
        for conn in (first[0], second[0], third):
            conn.close()


def test_sessions_left_idle_expire_and_free_their_slots(project):
    idle = 1.0
    with serving(project, {"LOREMAP_HTTP_MAX_SESSIONS": "3",
                           "LOREMAP_HTTP_SESSION_IDLE_S": str(idle)}) as server:
        sessions = [_raw_session(server.port) for _ in range(3)]
        deadline = time.monotonic() + 60
        waiting = list(sessions)
        while waiting:
            assert time.monotonic() < deadline, f"{len(waiting)} idle sessions never expired"
            # Probe no more often than twice the idle time: a probe of a live session is a
            # request, which restarts its idle countdown.
            time.sleep(2 * idle)
            waiting = [s for s in waiting if _ping(*s) != 404]
        assert "Session not found" in _post(*sessions[0], json.dumps(
            {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))[2]
        fresh = [_raw_session(server.port) for _ in range(3)]  # the cap counts live ones only
        assert all(_ping(*s) == 200 for s in fresh)
        for conn, _ in sessions + fresh:
            conn.close()


@pytest.mark.parametrize(("name", "value", "message"), [
    ("LOREMAP_HTTP_MAX_SESSIONS", "0", "serve.max_sessions is 0: write a number of sessions of "
                                       "at least 1 (LOREMAP_HTTP_MAX_SESSIONS)"),
    ("LOREMAP_HTTP_SESSION_IDLE_S", "-5", "serve.session_idle_s is -5.0: write seconds above "
                                          "0, or 0 for sessions that never expire "
                                          "(LOREMAP_HTTP_SESSION_IDLE_S)"),
    ("LOREMAP_HTTP_SESSION_IDLE_S", "inf", "serve.session_idle_s is inf: write seconds above "
                                           "0, or 0 for sessions that never expire "
                                           "(LOREMAP_HTTP_SESSION_IDLE_S)"),
])
def test_a_bad_session_limit_is_refused_in_one_line_before_listening(project, name, value,
                                                                     message):
    result = subprocess.run([sys.executable, "-m", "loremap", "serve", "--http", "127.0.0.1:0"],
                            cwd=project, capture_output=True, text=True, timeout=60,
                            env={**os.environ, name: value})
    assert (result.returncode, result.stderr.strip()) == (1, f"loremap: error: {message}")


@pytest.mark.slow
def test_ten_clients_with_mixed_calls_get_no_errors_and_lose_no_writes(http_server, project):
    clients, calls = 10, 100  # 1,000 calls, 100 of them writes, interleaved
    errors: list[str] = []
    written: list[str] = []

    async def one(n: int) -> None:
        async with http_server.client() as c:
            for i in range(calls):
                name, args = _mixed(n, i)
                result = await c.call_tool(name, args)
                if result.is_error and not (name == "read" and "nothing named" in text(result)):
                    errors.append(f"{name}: {text(result)}")
                elif name == "remember":
                    written.append(text(result).split()[1])

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for n in range(clients):
                group.start_soon(one, n)

    anyio.run(main)
    assert errors == []
    assert len(written) == clients * calls // 10
    assert set(written) <= {p.stem for p in (project / ".loremap" / "notes").glob("*.md")}
    assert set(written) <= indexed_notes(project)


def _mixed(client: int, i: int) -> tuple[str, dict[str, Any]]:
    if i % 10 == 0:
        return "remember", {"facts": [{"type": "error", "title": f"Client {client} error {i}",
                                       "body": f"seen by client {client} at call {i}"}]}
    if i % 10 == 5:
        return "read", {"target": "src/auth/login.ts"}
    if i % 10 == 7:
        return "related", {"target": "src/auth/login.ts"}
    return "recall", {"query": f"what error did client {client % 3} see at call {i}"}


def _raw_session(port: int, token: str = TOKEN
                 ) -> tuple[http.client.HTTPConnection, dict[str, str]]:
    """An initialised MCP session on a plain HTTP connection (no SDK client behind it)."""
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {token}"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                             "params": {"protocolVersion": "2025-06-18",
                                                        "capabilities": {},
                                                        "clientInfo": {"name": "raw",
                                                                       "version": "0"}}}),
                 headers)
    response = conn.getresponse()
    session = response.getheader("mcp-session-id")
    response.read()
    assert session
    headers["mcp-session-id"] = session
    conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "method":
                                             "notifications/initialized"}), headers)
    conn.getresponse().read()
    return conn, headers


def _remember_request(conn: http.client.HTTPConnection, headers: dict[str, str]) -> None:
    conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                             "params": {"name": "remember",
                                                        "arguments": {"facts": [FACT]}}}),
                 headers)


def test_a_client_that_hangs_up_mid_call_leaves_no_partial_write(http_server, project):
    conn, headers = _raw_session(http_server.port)
    _remember_request(conn, headers)
    assert conn.sock is not None
    conn.sock.shutdown(socket.SHUT_RDWR)  # gone before the answer
    conn.close()

    async def main() -> str:
        async with http_server.client() as c:
            return text(await c.call_tool("recall", {"query": "when do coupons apply"}))

    # The write goes on without its client. In its own process the server's next call waits
    # for the project's lock; the daemon lends that call another App, so wait for the write.
    deadline = time.monotonic() + 60
    while "gotcha-coupons-apply-after-the-cart-total" not in indexed_notes(project):
        assert time.monotonic() < deadline, "the write of the client that hung up never ended"
        time.sleep(0.05)
    recalled = anyio.run(main)
    notes = list((project / ".loremap" / "notes").glob("*.md"))
    assert [p.stem for p in notes] == ["gotcha-coupons-apply-after-the-cart-total"]
    assert "gotcha-coupons-apply-after-the-cart-total" in indexed_notes(project)
    assert "[gotcha] Coupons apply after the cart total" in recalled
    assert not list((project / ".loremap" / "notes").glob(".*"))  # no temp file left


def test_each_http_client_works_on_the_project_of_its_own_roots(http_server, project, tmp_path,
                                                                cli, monkeypatch):
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    monkeypatch.chdir(other)
    assert cli("init").code == 0

    def roots_of(folder: Path) -> Any:
        async def roots(context: Any) -> types.ListRootsResult:
            return types.ListRootsResult(roots=[types.Root(uri=folder.as_uri())])
        return roots

    async def agent(folder: Path, title: str) -> str:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (httpx2.AsyncClient(headers=headers, timeout=60) as http,
                    Client(streamable_http_client(f"{http_server.url}/mcp", http_client=http),
                           mode="legacy", list_roots_callback=roots_of(folder)) as c):
            fact = {"type": "decision", "title": title, "body": "Chosen for the team."}
            assert not (await c.call_tool("remember", {"facts": [fact]})).is_error
            return text(await c.call_tool("recall", {"query": "which database do we use"}))

    async def main() -> list[str]:
        out = ["", ""]

        async def one(i: int, folder: Path, title: str) -> None:
            out[i] = await agent(folder, title)

        async with anyio.create_task_group() as group:
            group.start_soon(one, 0, project, "We use PostgreSQL as the database")
            group.start_soon(one, 1, other, "We use SQLite as the database")
        return out

    mine, theirs = anyio.run(main)
    assert "PostgreSQL" in mine and "SQLite" not in mine
    assert "SQLite" in theirs and "PostgreSQL" not in theirs
    assert indexed_notes(project) == {"decision-we-use-postgresql-as-the-database"}
    assert indexed_notes(other) == {"decision-we-use-sqlite-as-the-database"}


def test_sigterm_lets_a_write_in_flight_finish(http_server, project):
    lock = project / ".loremap" / ".lock"
    conn, headers = _raw_session(http_server.port)
    with file_lock(lock, timeout=30):  # the server's write waits for this lock
        _remember_request(conn, headers)
        fds = Path(f"/proc/{http_server.worker}/fd")
        deadline = time.monotonic() + 30
        while not any(_points_at(fd, lock) for fd in fds.iterdir()):  # it is waiting
            assert time.monotonic() < deadline, "the server never reached the vault lock"
            time.sleep(0.01)
        http_server.proc.send_signal(signal.SIGTERM)
    answer = conn.getresponse().read().decode("utf-8")  # after the lock is released
    conn.close()
    assert http_server.proc.wait(timeout=60) == 0
    assert "created gotcha-coupons-apply-after-the-cart-total" in answer
    assert "gotcha-coupons-apply-after-the-cart-total" in indexed_notes(project)


def _points_at(fd: Path, target: Path) -> bool:
    try:
        return Path(os.readlink(fd)) == target
    except OSError:
        return False


def test_sigterm_stops_the_daemon_cleanly(http_server):
    http_server.proc.send_signal(signal.SIGTERM)
    assert http_server.proc.wait(timeout=30) == 0


# --- a client nobody here wrote ------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(shutil.which("npx") is None, reason="npm is not installed")
def test_the_mcp_inspector_lists_the_tools_and_calls_recall(project, isolated_home):
    subprocess.run([sys.executable, "-m", "loremap", "remember", "--type", "gotcha", "--title",
                    "Coupons apply after the cart total", "-m", "apply_coupon runs on the sum"],
                   cwd=project, check=True, capture_output=True, timeout=60)
    serve = ["-e", f"LOREMAP_HOME={os.environ['LOREMAP_HOME']}", "--",
             sys.executable, "-m", "loremap", "serve"]
    base = ["npx", "-y", "@modelcontextprotocol/inspector", "--cli"]
    env = {**os.environ, "npm_config_cache": str(NPM_CACHE), "npm_config_update_notifier": "false"}

    def inspect(*method: str) -> dict[str, Any]:
        result = subprocess.run([*base, *serve, *method], cwd=project, env=env,
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-2000:]
        return dict(json.loads(result.stdout))

    listed = inspect("--method", "tools/list")
    assert [t["name"] for t in listed["tools"]] == ["recall", "remember", "read", "map",
                                                    "handoff", "forget", "outcome", "related"]
    called = inspect("--method", "tools/call", "--tool-name", "recall",
                     "--tool-arg", "query=when do coupons apply")
    assert called["isError"] is False
    assert "[gotcha] Coupons apply after the cart total" in called["content"][0]["text"]
