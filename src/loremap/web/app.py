"""The dashboard's HTTP application: one static page (HTML, JS, CSS and the vendored Cytoscape.js)
and the JSON API it reads (`/api/graph`, `search`, `node`, `health`, `timeline`, `tokens`).

Read-only by default: every route answers GET (and HEAD) only, and none writes a note. Started
with `--writes`, two more answer POST, each through the use case the CLI and the MCP tools call:
`/api/forget` (archive a note: `use.notes.forget`) and `/api/outcome` (count a procedure's
success or failure: `use.notes.outcome`). A write's body is JSON (`application/json`: a form of
another site cannot send it without a preflight, which nothing here answers), at most 64 KiB;
with keys it needs a read-write one (`use/access.py` refuses a read-only key and records the
refusal); the audit records it as `human` through the client `dashboard`, with the key's name.

Who may reach it is `loremap.listener`'s rules, as for the MCP server: the Host and Origin
checks on every request, and with keys (the tokens file of `serve --http`, or
`LOREMAP_HTTP_TOKEN`) a bearer token of any role on every `/api/` request (a read-only key may
look, and not write).
The page itself and its scripts hold no data and are served without it: a browser cannot send
a header when it opens a URL, so the page takes the token from the address's fragment
(`#token=...`, which no server or log ever sees) and sends it with each API call. Every answer
carries a Content-Security-Policy that allows no script but the page's own files and no
connection but to this server, so nothing leaves the machine and a note's text cannot run.

The App comes from the caller (`use`): the standalone command's `Projects`, or the daemon's warm
Apps; a call holds its project's App for the duration of one answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loremap.errors import Forbidden, InvalidInput, NotFound, UserError
from loremap.listener import bearer, refusal, respond
from loremap.use.keys import Keyring, Unreadable
from loremap.web import api

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from loremap.actor import Caller
    from loremap.app import App

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Use = Callable[[], AbstractContextManager[tuple["App", list[str]]]]
Handler = Callable[["App", Mapping[str, str]], api.Json]
Writer = Callable[["App", Mapping[str, Any]], api.Json]

STATIC = Path(__file__).with_name("static")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; connect-src 'self'; frame-src 'self'; base-uri 'none'; "
       "form-action 'none'; frame-ancestors 'none'")
WRITES = {"/api/forget": "forget", "/api/outcome": "outcome"}  # path -> the write's name
MAX_WRITE = 64 * 1024  # bytes of a write's JSON body
CALLER = "loremap.caller"  # the scope key of the request's caller (None: no key needed)
HEADERS = [(b"content-security-policy", CSP.encode("ascii")),
           (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
           (b"cross-origin-resource-policy", b"same-origin")]


def make_app(use: Use, environ: Mapping[str, str], keys: Keyring | None,
             hosts: frozenset[str] | None, writes: bool = False) -> ASGIApp:
    """The whole dashboard, guarded: `use()` lends the project's App and its notices."""
    from starlette.applications import Starlette
    from starlette.responses import FileResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    from loremap.use.access import may_write

    keyed = keys is not None

    def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})

    def endpoint(handler: Handler) -> Callable[[Request], Response]:
        def answer(request: Request) -> Response:  # sync: Starlette runs it on a thread
            return _answer(use, handler, dict(request.query_params), environ,
                           request.scope.get(CALLER))
        return answer

    def health(app: App, query: Mapping[str, str]) -> api.Json:
        return api.health(app, environ)

    def node(app: App, query: Mapping[str, str]) -> api.Json:
        return {**api.node(app, query), "writes": writes and may_write(keyed)}

    def writer(name: str, handler: Writer) -> Callable[[Request], Awaitable[Response]]:
        async def answer(request: Request) -> Response:
            import json

            import anyio.to_thread

            raw = await request.body()  # the Guard has bounded it
            try:
                body = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                body = None
            caller = request.scope.get(CALLER)

            def run(app: App, query: Mapping[str, str]) -> api.Json:
                from loremap.use.access import check_write

                if not isinstance(body, dict):
                    raise InvalidInput("the body is a JSON object, e.g. {\"id\": \"...\"}")
                check_write(app, name, keyed)
                return handler(app, body)

            return await anyio.to_thread.run_sync(
                lambda: _answer(use, run, {}, environ, caller, write=True))
        return answer

    routes = [Route("/", index), Mount("/static", StaticFiles(directory=STATIC))]
    for name, handler in (("graph", api.graph), ("search", api.search), ("node", node),
                          ("health", health), ("timeline", api.timeline),
                          ("tokens", api.tokens)):
        routes.append(Route(f"/api/{name}", endpoint(handler), methods=["GET"]))
    if writes:
        for path, name in WRITES.items():
            routes.append(Route(path, writer(name, getattr(api, name)), methods=["POST"]))
    return Guard(Starlette(routes=routes), keys, hosts, writes)


def _answer(use: Use, handler: Handler, query: Mapping[str, str],
            environ: Mapping[str, str], caller: Caller | None = None,
            write: bool = False) -> Response:
    """One answer, as `caller`; a write is the audit's `human` through the `dashboard`."""
    import contextlib

    from starlette.responses import JSONResponse

    from loremap.actor import acting

    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(acting(caller))
            if write:
                from loremap.audit import Actor, acting_as

                stack.enter_context(acting_as(Actor(
                    "human", client="dashboard", token=caller.name if caller else "")))
            app, notices = stack.enter_context(use())
            body = handler(app, query)
    except Forbidden as exc:
        return JSONResponse({"error": str(exc)}, 403)
    except NotFound as exc:
        return JSONResponse({"error": str(exc)}, 404)
    except UserError as exc:
        return JSONResponse({"error": str(exc)}, 400)
    except Exception as exc:  # noqa: BLE001 - one request's failure is its own answer
        return JSONResponse({"error": _fault(exc, environ)}, 500)
    body["warnings"] = [*notices, *body.get("warnings", [])]
    return JSONResponse(body, headers={"cache-control": "no-store"})


def _fault(exc: Exception, environ: Mapping[str, str]) -> str:
    """A machine fault's one line (a full disk, a damaged index set aside), else where the
    traceback of this bug was logged."""
    from loremap.logs import log_exception
    from loremap.use.faults import explain

    fault = explain(exc, Path.cwd(), environ)
    if fault is not None:
        return fault
    where = log_exception(exc)
    return f"internal error: {type(exc).__name__}: {exc} (details in {where})"


class Guard:
    """ASGI middleware: Host/Origin checks, the bearer token on `/api/`, GET only (and the
    write paths' POST with `--writes`), and the security headers on every answer."""

    def __init__(self, inner: ASGIApp, keys: Keyring | None, hosts: frozenset[str] | None,
                 writes: bool = False) -> None:
        self.inner = inner
        self.keys = keys
        self.hosts = hosts
        self.writes = writes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)  # lifespan
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        refused = refusal(headers, self.hosts)
        if refused is None:
            refused = self._method(scope, headers)
        caller: Caller | None = None
        if refused is None and self.keys is not None and str(scope["path"]).startswith("/api/"):
            refused, caller = self._unauthorized(headers.get("authorization", ""))
        if refused is not None:
            status, error = refused
            extra = [(b"www-authenticate", b'Bearer realm="loremap"')] if status == 401 else []
            await respond(send, status, {"error": error}, [*extra, *HEADERS])
            return
        if scope["method"] == "POST":
            receive = _bounded(receive)
        await self.inner({**scope, CALLER: caller}, receive, _secured(send))

    def _method(self, scope: Scope, headers: Mapping[str, str]) -> tuple[int, str] | None:
        method = scope["method"]
        if method in ("GET", "HEAD"):
            return None
        if not self.writes or method != "POST" or scope["path"] not in WRITES:
            return 405, ("the dashboard is read-only: GET only (start it with --writes to "
                         "forget notes and count outcomes from the page)" if not self.writes
                         else "GET, or POST to /api/forget and /api/outcome")
        if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            return 415, "a write's body is JSON: send Content-Type: application/json"
        length = headers.get("content-length", "")
        if not length.isdigit():
            return 411, "a write says its Content-Length"
        if int(length) > MAX_WRITE:
            return 413, f"a write's body is at most {MAX_WRITE} bytes"
        return None

    def _unauthorized(self, header: str) -> tuple[tuple[int, str] | None, Caller | None]:
        assert self.keys is not None
        try:
            caller = self.keys.caller(bearer(header))
        except Unreadable:  # logged by the keyring; its path is not for the caller
            return (503, "the server's tokens file cannot be read now: every request is "
                    "refused until it is fixed"), None
        if caller is None:
            return (401, "missing or wrong bearer token (open the page as #token=...)"), None
        return None, caller


def _bounded(receive: Receive) -> Receive:
    """`receive` that stops a body longer than its Content-Length said (the Guard checked
    that against MAX_WRITE) from being read past MAX_WRITE."""
    seen = 0

    async def bounded() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > MAX_WRITE:
                return {"type": "http.disconnect"}
        return message

    return bounded


def _secured(send: Send) -> Send:
    async def secured(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *HEADERS]}
        await send(message)

    return secured
