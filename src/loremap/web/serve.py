"""Running the dashboard: in the foreground (`loremap dashboard` in its own process) or on a
thread of the per-user daemon, with the listener rules of `loremap.listener` (a non-loopback
address needs a token; a port in use is one line)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from loremap.listener import Running, allowed_hosts, bind, check_bind, on_thread, run
from loremap.use.keys import Keyring
from loremap.web.app import Use, make_app

PORT = 8765  # `loremap dashboard`'s default port


def serve(use: Use, environ: Mapping[str, str], host: str, port: int, keys: Keyring | None,
          extra_hosts: list[str], ready: Callable[[int], None] | None = None,
          writes: bool = False) -> None:
    """Serve the dashboard until SIGINT/SIGTERM; `ready(port)` once it accepts."""
    check_bind(host, keys is not None)
    sock = bind(host, port)
    app = make_app(use, environ, keys, allowed_hosts(host, extra_hosts), writes)
    run(app, host, port, ready, sock)


def listen(use: Use, environ: Mapping[str, str], host: str, port: int, keys: Keyring | None,
           extra_hosts: list[str], writes: bool = False) -> Running:
    """The same dashboard on a thread (the daemon's); `UserError` when it cannot listen."""
    check_bind(host, keys is not None)
    sock = bind(host, port)
    app = make_app(use, environ, keys, allowed_hosts(host, extra_hosts), writes)
    try:
        return on_thread(app, host, port, sock)
    except BaseException:
        sock.close()
        raise


def url(host: str, port: int) -> str:
    """The address a browser opens (an IPv6 address in brackets; a wildcard bind as loopback,
    which it also answers on)."""
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"
