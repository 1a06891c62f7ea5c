"""A listener held open through the per-user daemon, for `serve --http` and `dashboard`.

The process that asked keeps its connection to the daemon open for as long as the listener
should live: its exit, SIGINT or SIGTERM close the connection, and the daemon stops the
listener gracefully.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from loremap.errors import UserError


def through_daemon(request: dict[str, object], ready: Callable[[int], None], what: str
                   ) -> int | None:
    """Ask the daemon (started if none runs) to listen, and hold the listener open until this
    process ends; None when no daemon could serve it (then this process serves). `what` names
    the command in the line said when the daemon stops first (`loremap serve`)."""
    import signal

    from loremap import wire

    env = os.environ
    if not wire.start(env, 15.0):
        return None
    sock = wire.connect(env, 1.0)
    if sock is None:
        return None
    with sock, sock.makefile("rb") as stream:
        sock.settimeout(60.0)
        wire.send(sock, request)
        answer = wire.receive(stream)
        if answer is None or answer.get("fallback"):
            return None
        if not answer.get("ok"):
            raise UserError(str(answer.get("error", "the daemon refused to listen")))
        sock.settimeout(None)

        def stop(signum: int, frame: object) -> None:
            raise KeyboardInterrupt

        # Before `ready`: a supervisor (or a test) that stops the server as soon as it says
        # it listens must find the handler in place, or SIGTERM kills it uncleanly (-15).
        signal.signal(signal.SIGTERM, stop)
        try:
            ready(int(answer["port"]))
            stream.read()  # the daemon closes it only when it stops
        except KeyboardInterrupt:
            return 0  # closing the connection stops the listener, gracefully
    print(f"{what}: the daemon stopped serving HTTP", file=sys.stderr)
    return 1
