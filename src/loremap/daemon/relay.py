"""`loremap serve` (stdio) through the daemon: stdin and stdout relayed to an MCP session there.

The relay holds no protocol logic: after one request line (`{"op": "mcp", "cwd", "env"}`) and
the daemon's `{"ok": true}`, bytes go both ways unchanged until stdin closes (then the write
side of the connection is shut and the daemon's answers drain) or the daemon closes the
connection. Standard library and `loremap.wire` only: a warm connect costs a process start and
a socket, not the SDK's import.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Mapping

from loremap import wire

_CHUNK = 65536


def _pump_stdin(sock: socket.socket) -> None:
    try:
        while True:
            data = os.read(0, _CHUNK)
            if not data:
                break
            sock.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def relay(environ: Mapping[str, str], cwd: str) -> int | None:
    """Serve this process's stdio through a running daemon; its exit status, or None when no
    daemon took the session (then the caller serves it in process)."""
    sock = wire.connect(environ, 0.05)
    if sock is None:
        return None
    try:
        sock.settimeout(10.0)
        wire.send(sock, {"op": "mcp", "cwd": cwd, "env": wire.request_environ(environ)})
        stream = sock.makefile("rb")
        answer = wire.receive(stream)
    except (OSError, ValueError):
        sock.close()
        return None
    if answer is None or not answer.get("ok"):
        stream.close()
        sock.close()
        return None
    sock.settimeout(None)
    threading.Thread(target=_pump_stdin, args=(sock,), daemon=True).start()
    try:
        while True:
            data = stream.read1(_CHUNK)
            if not data:
                return 0
            os.write(1, data)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"loremap serve: the daemon's session ended: {exc}\n")
        return 1
    finally:
        stream.close()
        sock.close()
