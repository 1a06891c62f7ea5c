"""The dashboard's HTTP application: one static page (HTML, JS, CSS and the vendored Cytoscape.js)
and the read-only JSON API it reads (`/api/graph`, `search`, `node`, `health`, `timeline`,
`tokens`).

Read-only: every route answers GET (and HEAD) only, and none writes a note. Who may reach it
is `loremap.listener`'s rules, as for the MCP server: the Host and Origin checks on every
request, and with keys (the tokens file of `serve --http`, or `LOREMAP_HTTP_TOKEN`) a bearer
token of any role on every `/api/` request: reading is all a read-only key may do, and all the
dashboard does.
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

from loremap.errors import NotFound, UserError
from loremap.listener import bearer, refusal, respond
from loremap.use.keys import Keyring, Unreadable
from loremap.web import api

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from loremap.app import App

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Use = Callable[[], AbstractContextManager[tuple["App", list[str]]]]
Handler = Callable[["App", Mapping[str, str]], api.Json]

STATIC = Path(__file__).with_name("static")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; connect-src 'self'; frame-src 'self'; base-uri 'none'; "
       "form-action 'none'; frame-ancestors 'none'")
HEADERS = [(b"content-security-policy", CSP.encode("ascii")),
           (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
           (b"cross-origin-resource-policy", b"same-origin")]


def make_app(use: Use, environ: Mapping[str, str], keys: Keyring | None,
             hosts: frozenset[str] | None) -> ASGIApp:
    """The whole dashboard, guarded: `use()` lends the project's App and its notices."""
    from starlette.applications import Starlette
    from starlette.responses import FileResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})

    def endpoint(handler: Handler) -> Callable[[Request], Response]:
        def answer(request: Request) -> Response:  # sync: Starlette runs it on a thread
            return _answer(use, handler, dict(request.query_params), environ)
        return answer

    def health(app: App, query: Mapping[str, str]) -> api.Json:
        return api.health(app, environ)

    routes = [Route("/", index), Mount("/static", StaticFiles(directory=STATIC))]
    for name, handler in (("graph", api.graph), ("search", api.search), ("node", api.node),
                          ("health", health), ("timeline", api.timeline),
                          ("tokens", api.tokens)):
        routes.append(Route(f"/api/{name}", endpoint(handler), methods=["GET"]))
    return Guard(Starlette(routes=routes), keys, hosts)


def _answer(use: Use, handler: Handler, query: Mapping[str, str],
            environ: Mapping[str, str]) -> Response:
    from starlette.responses import JSONResponse

    try:
        with use() as (app, notices):
            body = handler(app, query)
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
    """ASGI middleware: Host/Origin checks, the bearer token on `/api/`, GET only, and the
    security headers on every answer."""

    def __init__(self, inner: ASGIApp, keys: Keyring | None, hosts: frozenset[str] | None
                 ) -> None:
        self.inner = inner
        self.keys = keys
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)  # lifespan
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        refused = refusal(headers, self.hosts)
        if refused is None and scope["method"] not in ("GET", "HEAD"):
            refused = 405, "the dashboard is read-only: GET only"
        if refused is None and self.keys is not None and str(scope["path"]).startswith("/api/"):
            refused = self._unauthorized(headers.get("authorization", ""))
        if refused is not None:
            status, error = refused
            extra = [(b"www-authenticate", b'Bearer realm="loremap"')] if status == 401 else []
            await respond(send, status, {"error": error}, [*extra, *HEADERS])
            return
        await self.inner(scope, receive, _secured(send))

    def _unauthorized(self, header: str) -> tuple[int, str] | None:
        assert self.keys is not None
        try:
            if self.keys.caller(bearer(header)) is not None:
                return None
        except Unreadable:  # logged by the keyring; its path is not for the caller
            return 503, ("the server's tokens file cannot be read now: every request is "
                         "refused until it is fixed")
        return 401, "missing or wrong bearer token (open the page as #token=...)"


def _secured(send: Send) -> Send:
    async def secured(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *HEADERS]}
        await send(message)

    return secured
