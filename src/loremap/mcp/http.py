"""`loremap serve --http`: one daemon for many clients, over MCP's streamable HTTP.

The rules, in the order a request meets them (the Host, Origin, bearer and bind rules are
`loremap.listener`'s, which the dashboard follows too):
- the Host header must name this server (DNS rebinding: a web page whose name resolves to
  127.0.0.1 must not reach the memory), and a browser's Origin must be one of those hosts;
- with a tokens file (`--tokens FILE`, `use/keys.py`) or `LOREMAP_HTTP_TOKEN`, every request
  but `GET /health` needs `Authorization: Bearer <token>` of a key the server knows now (the
  file is re-read when it changes: a revoked token gets 401 from its next request); the key's
  name and role are the request's caller (`loremap.actor`), which the tool dispatch checks a
  write against. Binding any address other than loopback without a key is refused before the
  socket opens;
- request bodies over `serve.max_request_bytes` are refused (413) by the SDK's limit;
- at most `serve.max_sessions` MCP sessions are open at once: the SDK answers one more with 503
  and we add `Retry-After`; a session with no request in flight for `serve.session_idle_s` is
  closed by the SDK (its id then answers 404). Refusing was chosen over evicting the least
  recently used idle session: eviction would reach into the SDK's private session table, and
  would let a client that opens sessions in a loop push working agents out. Each session holds
  ~37 kB; bench/http_sessions.py measures the server's memory over 10,000 sessions.
`GET /health` answers version, uptime and whether the default project's index answers.
On SIGINT/SIGTERM uvicorn stops accepting, lets in-flight requests finish (tool calls run to
the end on their threads, so no write is cut in half) and then closes the indexes.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, NamedTuple

from loremap import __version__, listener
from loremap.actor import Caller, acting
from loremap.errors import InvalidInput, UserError
from loremap.listener import allowed_hosts, bearer, on_thread, refusal, respond, run
from loremap.mcp.projects import Projects
from loremap.mcp.server import build_server
from loremap.use.keys import Keyring, Unreadable

log = logging.getLogger("loremap.mcp")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

RETRY_AFTER_MAX_S = 60  # the Retry-After of a refused session: the idle expiry, at most this
SHUTDOWN_WAIT_S = 30.0  # how long a stop waits for the tool calls in flight to answer


class SessionLimits(NamedTuple):
    """How many MCP sessions the daemon keeps open, and how long an idle one lives."""

    max_sessions: int
    idle_s: float  # 0: an idle session never expires

    @property
    def retry_after(self) -> int:
        """Seconds a client refused at the cap is told to wait: an idle session frees its slot
        within the idle expiry, so no longer than that is useful to wait."""
        idle = self.idle_s or RETRY_AFTER_MAX_S
        return max(1, min(RETRY_AFTER_MAX_S, math.ceil(idle)))


def session_limits(max_sessions: int, idle_s: float) -> SessionLimits:
    """The settings `serve.max_sessions` and `serve.session_idle_s`, checked."""
    if max_sessions < 1:
        raise InvalidInput(f"serve.max_sessions is {max_sessions}: write a number of sessions "
                           "of at least 1 (LOREMAP_HTTP_MAX_SESSIONS)")
    if not (math.isfinite(idle_s) and idle_s >= 0):
        raise InvalidInput(f"serve.session_idle_s is {idle_s}: write seconds above 0, or 0 for "
                           "sessions that never expire (LOREMAP_HTTP_SESSION_IDLE_S)")
    return SessionLimits(max_sessions, idle_s)


def parse_address(text: str) -> tuple[str, int]:
    """'HOST:PORT', ':PORT' or 'PORT' (loopback) -> (host, port); IPv6 as '[::1]:PORT'."""
    raw = text.strip()
    host, sep, port = raw.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", raw
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise InvalidInput(f"--http {text!r}: write HOST:PORT, e.g. 127.0.0.1:8787")
    return host, number


class Guard:
    """ASGI middleware: Host/Origin checks, bearer tokens, `/health`; the rest to the SDK, as
    the caller whose token the request carried (`keys` None: no key needed, no caller)."""

    def __init__(self, inner: ASGIApp, keys: Keyring | None, hosts: frozenset[str] | None,
                 projects: Projects, retry_after: int = RETRY_AFTER_MAX_S) -> None:
        self.inner = inner
        self.keys = keys
        self.hosts = hosts
        self.projects = projects
        self.started = time.monotonic()
        self.retry_after = (b"retry-after", str(retry_after).encode("ascii"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)  # lifespan: the SDK's session manager
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        refused = refusal(headers, self.hosts)
        if refused is not None:
            await respond(send, refused[0], {"error": refused[1]})
            return
        if scope["path"] == "/health" and scope["method"] == "GET":
            await self._health(send)
            return
        caller: Caller | None = None
        if self.keys is not None:
            try:
                caller = self.keys.caller(bearer(headers.get("authorization", "")))
            except Unreadable:  # logged by the keyring; its path is not for the caller
                await respond(send, 503, {"error": "the server's tokens file cannot be read "
                                                   "now: every request is refused until it "
                                                   "is fixed"})
                return
            if caller is None:
                await respond(send, 401, {"error": "missing or wrong bearer token"},
                              [(b"www-authenticate", b'Bearer realm="loremap"')])
                return
        with acting(caller):  # the SDK runs the handler in this request's context
            await self.inner(scope, receive, self._hinted(send))

    def _hinted(self, send: Send) -> Send:
        """`send` with Retry-After added to a 503: the SDK's only one is its session cap."""
        async def hinted(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 503:
                message = {**message, "headers": [*message.get("headers", ()), self.retry_after]}
            await send(message)

        return hinted

    async def _health(self, send: Send) -> None:
        import anyio.to_thread

        store = await anyio.to_thread.run_sync(self.projects.default_health)
        await respond(send, 200 if store == "ok" else 503, {
            "status": "ok" if store == "ok" else "degraded", "version": __version__,
            "uptime_s": round(time.monotonic() - self.started, 1), "store": store})


def make_app(projects: Projects, profile: str, host: str, port: int, keys: Keyring | None,
             extra_hosts: list[str], max_bytes: int, limits: SessionLimits) -> ASGIApp:
    """The whole HTTP application: `/mcp` (streamable HTTP) and `/health`, guarded."""
    from mcp.server.transport_security import TransportSecuritySettings

    server = build_server(projects, profile, keyed=keys is not None)
    hosts = allowed_hosts(host, extra_hosts)
    # Our guard checks Host and Origin for every route; the SDK's own check would only repeat it.
    inner = server.streamable_http_app(
        streamable_http_path="/mcp", max_request_body_size=max_bytes, host=host,
        max_sessions=limits.max_sessions, session_idle_timeout=limits.idle_s or None,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    return Guard(inner, keys, hosts, projects, limits.retry_after)


def serve(projects: Projects, profile: str, host: str, port: int, keys: Keyring | None,
          extra_hosts: list[str], max_bytes: int, limits: SessionLimits,
          ready: Callable[[int], None] | None = None) -> None:
    """Listen until SIGINT/SIGTERM; `ready(port)` is called once the socket accepts."""
    listener.check_bind(host, keys is not None)
    app = make_app(projects, profile, host, port, keys, extra_hosts, max_bytes, limits)
    try:
        run(app, host, port, ready, drain=_drain)
    finally:
        projects.close()


class Listener(NamedTuple):
    """An HTTP listener running on a thread of its own (the daemon's), and how to stop it."""

    port: int
    server: Any
    thread: Any
    projects: Projects

    def stop(self, wait_s: float = 40.0) -> None:
        """Stop accepting, let requests in flight finish (uvicorn's 30 s grace), close the
        indexes."""
        self.server.should_exit = True
        self.thread.join(wait_s)
        self.projects.close()


def listen(projects: Projects, profile: str, host: str, port: int, keys: Keyring | None,
           extra_hosts: list[str], max_bytes: int, limits: SessionLimits) -> Listener:
    """The same server as `serve`, listening on a thread: what the daemon runs for `loremap
    serve --http`. `UserError` when the address cannot be bound."""
    listener.check_bind(host, keys is not None)
    app = make_app(projects, profile, host, port, keys, extra_hosts, max_bytes, limits)
    try:
        running = on_thread(app, host, port, drain=_drain)
    except UserError:
        projects.close()
        raise
    return Listener(running.port, running.server, running.thread, projects)


def _drain() -> None:
    """Before a stop: wait for the tool calls in flight to answer (`server.CALLS`)."""
    from loremap.mcp.server import CALLS

    if CALLS.idle(SHUTDOWN_WAIT_S):
        time.sleep(0.2)  # the last answer leaves through its stream
