"""loremap's HTTP listeners (`loremap serve --http`, `loremap dashboard`): who may reach one,
and how one runs.

The rules, the same for every listener (the MCP server's and the dashboard's):
- loopback (`127.0.0.1`, `localhost`, `::1`) is the default; binding any other address without
  keys (a tokens file, `use/keys.py`, or `LOREMAP_HTTP_TOKEN`) is refused before the socket
  opens (`check_bind`);
- the Host header must name this server (DNS rebinding: a web page whose name resolves to
  127.0.0.1 must not reach the memory), and a browser's Origin must be one of those hosts
  (`refusal`);
- with keys, a request carries `Authorization: Bearer <token>` (`bearer`), which the keyring
  compares in constant time; each listener says which of its paths need it.
uvicorn serves both: until SIGINT/SIGTERM in the foreground (`run`), or on a thread of the
daemon (`on_thread`). Standard library at import; uvicorn and anyio load when a listener starts.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, NamedTuple

from loremap.errors import UserError

if TYPE_CHECKING:
    import socket

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, keyed: bool) -> None:
    """Refuse to listen beyond this machine without a key (`keyed`: a tokens file or a single
    token was given), in one line that says how to give one."""
    if not is_loopback(host) and not keyed:
        raise UserError(f"refusing to listen on {host} without a token: give a tokens file "
                        "(--tokens FILE, made with `loremap serve token add`) or set "
                        "LOREMAP_HTTP_TOKEN (clients send it as 'Authorization: Bearer "
                        "<token>'), or bind 127.0.0.1")


def allowed_hosts(host: str, extra: list[str]) -> frozenset[str] | None:
    """The host names accepted in Host and Origin (any port: DNS rebinding is about the
    name), or None for any (a wildcard bind with a token and no list: the token is what guards
    it, and the names the machine answers to are unknown here)."""
    if host in ("0.0.0.0", "::") and not extra:
        return None
    return frozenset(name.strip().strip("[]").lower()
                     for name in (*LOOPBACK_NAMES, host, *extra) if name.strip())


def host_name(value: str) -> str:
    """The name in a Host header or an Origin's authority: 'h:1' -> 'h', '[::1]:1' -> '::1'."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    return value.rpartition(":")[0] if value.count(":") == 1 else value


def refusal(headers: Mapping[str, str], hosts: frozenset[str] | None
            ) -> tuple[int, str] | None:
    """(status, message) for a request whose Host names another server (421) or whose Origin
    is a foreign page (403); None when it may go on. `headers` are lower-cased names."""
    if hosts is None:
        return None
    host = headers.get("host", "")
    if host_name(host) not in hosts:
        return 421, f"host {host!r} is not served here"
    origin = headers.get("origin")
    if origin is not None and \
            host_name(origin.partition("://")[2].partition("/")[0]) not in hosts:
        return 403, f"origin {origin!r} is not allowed"
    return None


def bearer(header: str) -> str:
    """The token of an `Authorization: Bearer <token>` header ('' for any other)."""
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


async def respond(send: Send, status: int, body: dict[str, Any],
                  headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """Answer an ASGI request with a small JSON body (a refusal, a health check)."""
    import json

    data = json.dumps(body).encode("utf-8")
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
        *(headers or [])]})
    await send({"type": "http.response.body", "body": data})


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port), or one line saying why there is none (a port in use,
    an address that is not this machine's): uvicorn would only log it and exit."""
    import errno
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, IndexError) as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UserError(f"port {port} on {host} is in use: choose another with --port "
                            "(0 takes any free port)") from None
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(False)
    return sock


def bound_port(server: Any, port: int) -> int:
    """The port a started uvicorn server listens on (the one asked for, unless it was 0)."""
    return int(server.servers[0].sockets[0].getsockname()[1]) if server.servers else port


def run(app: Any, host: str, port: int, ready: Callable[[int], None] | None = None,
        sock: socket.socket | None = None, drain: Callable[[], None] | None = None) -> None:
    """Serve `app` until SIGINT/SIGTERM (then requests in flight finish, up to 30 s);
    `ready(port)` is called once the socket accepts. `sock`: already bound (`bind`); `drain`:
    see `uvicorn_server`."""
    import anyio

    server = uvicorn_server(app, host, port, drain)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, None if sock is None else [sock])
            while not server.started:
                if server.should_exit:
                    return
                await anyio.sleep(0.02)
            if ready is not None:
                ready(bound_port(server, port))

    try:
        anyio.run(main)
    except SystemExit:  # uvicorn exits when it cannot bind; it has logged why
        raise UserError(f"cannot listen on {host}:{port} (see the message above)") from None


class Running(NamedTuple):
    """A listener running on a thread of its own (the daemon's), and how to stop it."""

    port: int
    server: Any
    thread: Any

    def stop(self, wait_s: float = 40.0) -> None:
        """Stop accepting and let requests in flight finish (uvicorn's 30 s grace)."""
        self.server.should_exit = True
        self.thread.join(wait_s)


def on_thread(app: Any, host: str, port: int, sock: socket.socket | None = None,
              drain: Callable[[], None] | None = None) -> Running:
    """Serve `app` on a daemon thread; `UserError` when the address cannot be bound."""
    import threading

    import anyio

    server = uvicorn_server(app, host, port, drain)

    def serve() -> None:
        try:
            anyio.run(server.serve, None if sock is None else [sock])
        except SystemExit:  # uvicorn exits when it cannot bind; it has logged why
            pass

    thread = threading.Thread(target=serve, daemon=True, name=f"http {host}:{port}")
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.02)
    if not server.started:
        raise UserError(f"cannot listen on {host}:{port} (the address is in use, or not this "
                        "machine's)")
    return Running(bound_port(server, port), server, thread)


def uvicorn_server(app: Any, host: str, port: int, drain: Callable[[], None] | None = None
                   ) -> Any:
    """A uvicorn server that stops gracefully on SIGINT/SIGTERM and then returns (uvicorn
    re-raises the signal after its shutdown, which would kill us before the indexes close).
    `drain`, when given, runs on a thread before the stop begins (the MCP server waits there
    for the tool calls in flight to answer: a signal handler must not block)."""
    import contextlib
    import signal
    import threading

    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            if drain is None:
                uvicorn.Server.handle_exit(self, sig, frame)
                return

            def later() -> None:
                drain()
                uvicorn.Server.handle_exit(self, sig, frame)

            threading.Thread(target=later, name="loremap-stop", daemon=True).start()

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            signals = (signal.SIGINT, signal.SIGTERM)
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in signals}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=30, access_log=False)
    return Server(config)
