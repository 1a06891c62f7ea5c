"""The daemon's wire: where its socket is, the exchange over it, and starting it on first need.

Every entry point that may hand its work to the daemon (`loremap-hook`, `loremap serve`, the
CLI's reads) imports this module, and the hook imports it on every prompt, so it imports what
costs nothing: no `pathlib`, not even `loremap.config` (whose settings table costs ~15 ms to
import, as long as the daemon takes to answer a prompt), and on the client's path the C halves
of `socket` and `json` (`_socket`, `_json`) rather than the modules around them, which pull in
`enum`, `selectors` and `re` (~10 ms together, measured with `-X importtime`). The messages are
still plain JSON; the daemon reads and writes them with `json`.

- The socket: `$XDG_RUNTIME_DIR/loremap/` (else `run/` in loremap's cache folder, e.g.
  `~/.cache/loremap/run/`; under `LOREMAP_HOME`, `$LOREMAP_HOME/cache/run/`), a folder of mode
  0700 owned by the user, holding
  `daemon-<install>.sock`: one daemon per user *and per installation* (two virtual environments
  with different loremaps never answer for each other). A path too long for `AF_UNIX` (108
  bytes) moves to `/tmp/loremap-<uid>/` under a digest of the long one.
- The exchange: one JSON object on one line each way (`json.dumps` escapes newlines), at most
  `MAX_LINE` bytes. After a request line `{"op": "mcp", ...}` the connection carries the MCP
  session's own newline-delimited JSON-RPC instead.
- Trust: a socket or folder owned by another user, or a folder others can open, is refused with
  one line (`Refused`); a socket file no process listens on is a leftover, reclaimed by the
  daemon that starts next.
- Relaying: `relay` is `loremap serve`'s side of a stdio MCP session run by the daemon:
  stdin and stdout copied to and from the connection, bytes only.
- Starting: `spawn` launches `python -m loremap.daemon` detached, at most once per
  `SPAWN_PAUSE_S` (a daemon that cannot start must not be relaunched by every prompt); the
  daemon itself takes a lock, so two racing starts leave one daemon.
"""

from __future__ import annotations

import _socket
import os
import sys
import time
import zlib

TYPE_CHECKING = False  # not `typing`'s: importing typing costs ~3 ms on the hook's path
if TYPE_CHECKING:
    import socket
    from collections.abc import Mapping
    from typing import Any

DAEMON_LOG = "daemon.log"  # in the logs folder: the daemon's starts, exits and failures
MAX_LINE = 8 * 1024 * 1024  # a request or answer line; a pasted prompt log stays well below
SPAWN_PAUSE_S = 10.0
_UNIX_PATH_MAX = 100  # sun_path is 108 bytes on Linux (104 on macOS): keep a margin
_OFF = frozenset({"0", "off", "no", "false"})


class Refused(OSError):
    """The socket or its folder is not safe to talk to (another user's, open to others)."""


def enabled(environ: Mapping[str, str]) -> bool:
    """Whether entry points may use (and start) the daemon: `LOREMAP_DAEMON=off` says no, and
    so does a platform without Unix sockets."""
    return (hasattr(_socket, "AF_UNIX")
            and environ.get("LOREMAP_DAEMON", "").strip().lower() not in _OFF)


def install_id() -> str:
    """Which installation of loremap this is: a digest of the package's folder and prefix."""
    here = os.path.dirname(os.path.realpath(__file__))
    return _digest(f"{here}\0{sys.prefix}")


def _digest(text: str) -> str:
    data = text.encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def install_stamp() -> str:
    """A digest of the installed package: its version and its files' names, sizes and times
    (the daemon compares it with its own at start to know it is outdated)."""
    from pathlib import Path

    from loremap import __version__

    here = Path(__file__).resolve().parent
    parts = [__version__]
    for path in sorted(here.rglob("*.py")):
        try:
            st = path.stat()
        except OSError:
            continue
        parts.append(f"{path.relative_to(here)}\0{st.st_size}\0{st.st_mtime_ns}")
    return _digest("\n".join(parts))


def run_dir(environ: Mapping[str, str]) -> str:
    """The folder of the daemon's socket and lock: `$XDG_RUNTIME_DIR/loremap`, else `run/` in
    loremap's cache folder (`UserPaths.cache`, whose rule this repeats without importing
    `loremap.config`; `tests/test_daemon.py` holds them equal)."""
    home = environ.get("LOREMAP_HOME", "")
    if home:
        return os.path.join(os.path.expanduser(home), "cache", "run")
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "loremap")
    cache = environ.get("XDG_CACHE_HOME", "")
    if not (cache and os.path.isabs(cache)):
        cache = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "loremap", "run")


def socket_path(environ: Mapping[str, str]) -> str:
    path = os.path.join(run_dir(environ), f"daemon-{install_id()}.sock")
    if len(os.fsencode(path)) <= _UNIX_PATH_MAX:
        return path
    return f"/tmp/loremap-{os.getuid()}/{_digest(path)}.sock"


def private_dir(folder: str) -> str:
    """Create `folder` (mode 0700) if needed; `Refused` unless it is the user's own, a real
    folder, and closed to others."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    st = os.lstat(folder)
    if os.path.islink(folder) or not os.path.isdir(folder):
        raise Refused(f"{folder} is not a folder; loremap's daemon will not use it")
    if st.st_uid != os.getuid():
        raise Refused(f"{folder} belongs to another user (uid {st.st_uid}); loremap's daemon "
                      "will not use it")
    if st.st_mode & 0o077:
        os.chmod(folder, 0o700)
    return folder


def check_socket(path: str) -> None:
    """`Refused` when the socket file at `path` is not the user's own."""
    st = os.lstat(path)
    if st.st_uid != os.getuid():
        raise Refused(f"the daemon socket {path} belongs to another user (uid {st.st_uid}); "
                      "remove it or set XDG_RUNTIME_DIR")


def _open(environ: Mapping[str, str], timeout: float) -> Any:
    """A raw (`_socket`) connection to the running daemon, or None when none listens (no
    socket file, or a leftover nobody answers on). `Refused` for a socket not the user's."""
    path = socket_path(environ)
    try:
        check_socket(path)
    except FileNotFoundError:
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def connect(environ: Mapping[str, str], timeout: float) -> socket.socket | None:
    """`_open` as a `socket.socket` (for a caller that wants its file objects)."""
    raw = _open(environ, timeout)
    if raw is None:
        return None
    import socket

    sock = socket.socket(fileno=raw.detach())
    sock.settimeout(timeout)
    return sock


def encode(message: Mapping[str, Any]) -> bytes:
    """`message` as one JSON line (strings escaped by `_json`'s C encoder)."""
    data = (_encode(message) + "\n").encode("utf-8")
    if len(data) > MAX_LINE:
        raise ValueError(f"the request is {len(data)} bytes; the daemon takes at most "
                         f"{MAX_LINE}")
    return data


def _encode(value: Any) -> str:
    if isinstance(value, str):
        return str(_quote(value))
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_quote(str(k))}: {_encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_encode(v) for v in value) + "]"
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, (int, float)):
        return repr(value)
    raise TypeError(f"cannot send a {type(value).__name__}")


def decode(line: bytes) -> dict[str, Any]:
    """One JSON line as an object (`ValueError` for anything else)."""
    if len(line) > MAX_LINE or not line.endswith(b"\n"):
        raise ValueError(f"a line over {MAX_LINE} bytes, or cut off")
    text = line.decode("utf-8")
    try:
        value, end = _scanner(text, 0)
    except StopIteration:
        raise ValueError("a line that is not JSON") from None
    if text[end:].strip() or not isinstance(value, dict):
        raise ValueError("a line that is not a JSON object")
    return value


class _Context:
    """What `_json.make_scanner` reads from a decoder: json.loads' defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: dict[str, str] = {}

    @staticmethod
    def parse_constant(name: str) -> float:
        return float(name.replace("Infinity", "inf"))


def _codec() -> tuple[Any, Any]:
    """The string quoter and the scanner of `_json` (json's C accelerator), or json's own."""
    try:
        import _json
    except ImportError:  # an interpreter without the accelerator
        import json

        def scan(text: str, index: int) -> tuple[Any, int]:
            try:
                return json.JSONDecoder().raw_decode(text, index)
            except json.JSONDecodeError:
                raise StopIteration(index) from None

        return json.encoder.encode_basestring_ascii, scan
    return _json.encode_basestring_ascii, _json.make_scanner(_Context())  # type: ignore[arg-type]


_quote, _scanner = _codec()


def send(sock: Any, message: Mapping[str, Any]) -> None:
    sock.sendall(encode(message))


def receive(stream: Any) -> dict[str, Any] | None:
    """The next line of `stream` (a binary file object) as a JSON object; None at its end."""
    line = stream.readline(MAX_LINE + 1)
    if not line:
        return None
    return decode(line)


def _read_line(sock: Any) -> bytes:
    parts: list[bytes] = []
    size = 0
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n") or size > MAX_LINE:
            break
    return b"".join(parts)


def ask(message: Mapping[str, Any], environ: Mapping[str, str], connect_s: float = 0.05,
        answer_s: float = 60.0) -> dict[str, Any] | None:
    """The daemon's answer to `message`, or None when no daemon answered (none runs, it died
    mid-request, it is outdated and exiting). A running daemon that cannot serve this request
    answers `{"fallback": ...}` (no "ok"): the caller does the work itself and starts nothing.
    Never raises but `Refused`."""
    try:
        sock = _open(environ, connect_s)
    except Refused:
        raise
    except OSError:
        return None
    if sock is None:
        return None
    try:
        sock.settimeout(answer_s)
        sock.sendall(encode(message))
        line = _read_line(sock)
        answer = decode(line) if line else None
    except (OSError, ValueError):
        return None
    finally:
        sock.close()
    if answer is None or answer.get("fallback") == "stale":
        return None  # the daemon is going away: as if none ran
    return answer


def request_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """What of a client's environment travels with a request: all of it but what no loremap
    code reads and may be large or secret to no purpose (shell functions, terminal state)."""
    return {k: v for k, v in environ.items() if not k.startswith("BASH_FUNC_")}


def spawn_marker(environ: Mapping[str, str]) -> str:
    """The file whose time says when a daemon was last started (in the private folder)."""
    folder = private_dir(os.path.dirname(socket_path(environ)))
    return os.path.join(folder, f"spawned-{install_id()}")


def start(environ: Mapping[str, str], wait_s: float) -> bool:
    """A daemon started now if none runs (asked for by name: never paused), and whether one
    answers within `wait_s` seconds."""
    if ask({"op": "status"}, environ, connect_s=1.0, answer_s=10.0) is not None:
        return True
    try:
        os.unlink(spawn_marker(environ))
    except FileNotFoundError:
        pass
    return spawn(environ) and wait_ready(environ, wait_s)


def spawn(environ: Mapping[str, str]) -> bool:
    """Start a daemon in the background for the next request; False when one was started less
    than `SPAWN_PAUSE_S` ago (it is starting, or cannot start: its log says why)."""
    try:
        marker = spawn_marker(environ)
    except OSError:
        return False
    try:
        if time.time() - os.stat(marker).st_mtime < SPAWN_PAUSE_S:
            return False
    except OSError:
        pass
    try:
        with open(marker, "w"):
            pass
    except OSError:
        return False
    import subprocess

    env = dict(environ)
    env.pop("LOREMAP_PROJECT_DIR", None)  # the daemon serves every project, by request
    try:
        subprocess.Popen([sys.executable, "-m", "loremap.daemon"], env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
                         cwd="/")
    except OSError:
        return False
    return True


def wait_ready(environ: Mapping[str, str], timeout: float) -> bool:
    """Whether a daemon answers `status` within `timeout` seconds."""
    end = time.monotonic() + timeout
    while True:
        if ask({"op": "status"}, environ, answer_s=max(0.1, end - time.monotonic())) is not None:
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.02)


# --- `loremap serve` (stdio) through the daemon ------------------------------------------------

_CHUNK = 65536


def _pump_stdin(sock: socket.socket) -> None:
    """stdin to the daemon until stdin ends, then shut the connection's write side."""
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
            sock.shutdown(_socket.SHUT_WR)
        except OSError:
            pass


def relay(environ: Mapping[str, str], cwd: str) -> int | None:
    """`loremap serve` (stdio) through a running daemon: stdin and stdout relayed to an MCP
    session there, bytes only (no protocol logic), until stdin closes (then the write side is
    shut and the answers drain) or the daemon closes the connection. Its exit status, or None
    when no daemon took the session (then the caller serves it in process)."""
    import threading

    sock = connect(environ, 0.05)
    if sock is None:
        return None
    try:
        sock.settimeout(10.0)
        send(sock, {"op": "mcp", "cwd": cwd, "env": request_environ(environ)})
        stream = sock.makefile("rb")
        answer = receive(stream)
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
