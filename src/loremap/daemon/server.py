"""The daemon: one process per user and installation, answering over a Unix socket.

Each connection is one thread. Its first line is a request (`loremap.wire`):
- `{"op": "hook", "event", "payload", "env"}`: one hook event, run by `loremap.hook.run` with
  the client's environment and the warm Apps (`warm.Warm`); the answer is what the hook
  process prints: `{"ok": true, "stdout", "stderr"}`.
- `{"op": "mcp", "env", "cwd"}`: the rest of the connection is an MCP session, served by the
  SDK's own server over the socket's streams (`loremap serve` only relays its stdin/stdout).
- `{"op": "status"}`, `{"op": "stop"}`.

It exits after `daemon.idle_s` without a request (none in flight), at `stop`, on SIGTERM or
SIGINT, and when the installed loremap changed under it (the files of the package, checked at
most every `_RECHECK_S` when a request comes): that request is answered `fallback` (the client
answers in its own process and starts the new daemon). A request it cannot serve the way the
client's own process would is answered `fallback` too: one whose environment differs from the
daemon's in what is read from the process environment only (libpq's `PG*` variables).

The socket is adopted from systemd (`LISTEN_FDS`) or bound in the private run folder under
an exclusive lock (`daemon-<install>.lock`): of two daemons racing to start, the second finds
the lock taken and exits; a socket file left by a killed daemon is removed and bound again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import socketserver
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loremap import __version__, wire
from loremap.config import load_settings
from loremap.daemon.warm import Warm

log = logging.getLogger("loremap.daemon")
LOG_NAME = wire.DAEMON_LOG
_RECHECK_S = 2.0  # a request checks the installed files at most this often
_IDLE_RECHECK_S = 60.0  # with no request, this often (a stale daemon exits even unasked)
_FORGET_S = 600.0  # an App unused this long is closed (it reopens on the next request)
_PROCESS_ONLY = ("PG",)  # read by libpq from the process environment, never per request


def _rss_kb() -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Daemon(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, environ: Mapping[str, str], listener: socket.socket | None = None
                 ) -> None:
        self.environ = dict(environ)
        self.path = Path(wire.socket_path(environ))
        settings = load_settings(None, environ)
        self.idle_s = settings.get_float("daemon.idle_s")
        self.warm = Warm()
        self.stamp = wire.install_stamp()
        self.started = time.time()
        self.requests = 0
        self._busy = 0
        self._last = time.monotonic()
        self._checked = -_RECHECK_S  # the first request checks
        self._count = threading.Lock()
        self._stopping = threading.Event()
        self.stale = False
        super().__init__(os.fspath(self.path), _Handler, bind_and_activate=listener is None)
        if listener is not None:
            self.socket.close()
            self.socket = listener
            self.server_address = os.fspath(self.path)

    def server_bind(self) -> None:
        wire.private_dir(os.fspath(self.path.parent))
        old = os.umask(0o177)
        try:
            super().server_bind()
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)

    # --- bookkeeping -----------------------------------------------------------------------

    def begin(self) -> None:
        with self._count:
            self._busy += 1
            self.requests += 1
            self._last = time.monotonic()

    def end(self) -> None:
        with self._count:
            self._busy -= 1
            self._last = time.monotonic()

    def outdated(self) -> bool:
        """Whether the installed loremap changed since this daemon started (checked at most
        every `_RECHECK_S`)."""
        now = time.monotonic()
        if not self.stale and now - self._checked >= _RECHECK_S:
            self._checked = now
            if wire.install_stamp() != self.stamp:
                log.info("the installed loremap changed: exiting")
                self.stale = True
                self.stop()
        return self.stale

    def foreign(self, environ: Mapping[str, str]) -> bool:
        """Whether `environ` differs from ours in what only a process environment can set."""
        def only(env: Mapping[str, str]) -> dict[str, str]:
            return {k: v for k, v in env.items() if k.startswith(_PROCESS_ONLY)}
        return only(environ) != only(self.environ)

    def status(self) -> dict[str, Any]:
        return {"ok": True, "pid": os.getpid(), "version": __version__, "stamp": self.stamp,
                "install": wire.install_id(), "socket": os.fspath(self.path),
                "started": self.started, "requests": self.requests, "busy": self._busy,
                "idle_s": self.idle_s, "projects": self.warm.projects(),
                "apps": self.warm.open_apps(), "rss_kb": _rss_kb()}

    def stop(self) -> None:
        """Stop serving (from any thread but the one running `serve_forever`)."""
        if not self._stopping.is_set():
            self._stopping.set()
            threading.Thread(target=self.shutdown, daemon=True).start()

    def watch(self) -> None:
        """Exit when idle or outdated; close the Apps no one used for a while."""
        checked = time.monotonic()
        while not self._stopping.wait(min(5.0, max(0.2, self.idle_s / 4))):
            self.warm.forget_unused(_FORGET_S)
            if time.monotonic() - checked >= _IDLE_RECHECK_S:
                checked = time.monotonic()
                self.outdated()
            with self._count:
                idle = self._busy == 0 and time.monotonic() - self._last >= self.idle_s
            if idle:
                log.info("idle for %.0f s: exiting", self.idle_s)
                self.stop()


class _Handler(socketserver.StreamRequestHandler):
    server: Daemon
    timeout = 30.0  # a client that connects and sends nothing is let go

    def handle(self) -> None:
        self.server.begin()
        try:
            self._serve()
        except Exception as exc:  # noqa: BLE001 - one request's failure ends that request only
            from loremap.logs import log_exception

            log_exception(exc, LOG_NAME)
            with contextlib.suppress(OSError, ValueError):
                self._answer({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        finally:
            self.server.end()

    def _answer(self, message: Mapping[str, Any]) -> None:
        self.wfile.write(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
        self.wfile.flush()

    def _serve(self) -> None:
        try:
            request = wire.receive(self.rfile)
        except (OSError, ValueError) as exc:
            with contextlib.suppress(OSError):
                self._answer({"ok": False, "error": f"bad request: {exc}"})
            return
        if request is None:
            return
        op = request.get("op")
        if op == "status":
            self._answer(self.server.status())
            return
        if op == "stop":
            self._answer({"ok": True, "pid": os.getpid()})
            self.server.stop()
            return
        if self.server.outdated():
            self._answer({"fallback": "stale"})
            return
        env = request.get("env")
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            self._answer({"ok": False, "error": "bad request: env is not an object of strings"})
            return
        if self.server.foreign(env):
            self._answer({"fallback": "environment"})
            return
        if op == "hook":
            self._hook(request, env)
        elif op == "mcp":
            self._mcp(request, env)
        elif op == "http":
            self._http(request, env)
        elif op == "dashboard":
            self._dashboard(request, env)
        elif op == "cli":
            self._cli(request, env)
        else:
            self._answer({"ok": False, "error": f"bad request: unknown op {op!r}"})

    def _hook(self, request: Mapping[str, Any], env: dict[str, str]) -> None:
        from loremap.hook import run
        from loremap.hook.context import deferring

        event, payload = request.get("event"), request.get("payload")
        if not isinstance(event, str) or not isinstance(payload, str):
            self._answer({"ok": False, "error": "bad request: event and payload are strings"})
            return
        with deferring() as after:
            out, err = run(event, payload.encode("utf-8"), env)
        try:
            self._answer({"ok": True, "stdout": out, "stderr": err})
        finally:  # even for a client that gave up waiting: the work is the project's
            for work in after:  # what the hook left for after its answer (`context.later`)
                try:
                    work()
                except Exception as exc:  # noqa: BLE001 - logged like a hook's own failure
                    from loremap.hook import log as hook_log

                    hook_log(f"hook {event}: after the answer: {type(exc).__name__}: {exc}",
                             env)

    def _cli(self, request: Mapping[str, Any], env: dict[str, str]) -> None:
        """A read command (`cli.READS`) for a `loremap` process: run with its folder and
        environment on the warm Apps, its output and exit code in the answer."""
        import io

        from loremap.cli import READS, context
        from loremap.cli import run as run_command

        argv, cwd = request.get("argv"), request.get("cwd")
        if (not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv)
                or argv[0] not in READS or not isinstance(cwd, str) or not os.path.isdir(cwd)):
            self._answer({"ok": False, "error": "bad request: argv is a read command "
                          f"({', '.join(sorted(READS))}) and cwd a folder"})
            return
        out, err = io.StringIO(), io.StringIO()
        with context.invoked(Path(cwd), env, out, err, self.server.warm.use):
            code = run_command([str(a) for a in argv])
        self._answer({"ok": True, "code": code, "stdout": out.getvalue(),
                      "stderr": err.getvalue()})

    def _http(self, request: Mapping[str, Any], env: dict[str, str]) -> None:
        """`loremap serve --http` on this daemon: the listener lives as long as the
        connection of the `serve` process that asked for it (its exit, SIGINT or SIGTERM
        close it, and the listener stops gracefully)."""
        from loremap.errors import UserError
        from loremap.mcp.http import listen, session_limits
        from loremap.mcp.projects import Projects
        from loremap.use.keys import keyring

        try:
            cwd, profile, port, token, hosts, max_bytes, sessions, idle = _http_args(request)
            limits = session_limits(sessions, idle)
            path = request.get("tokens_file", "")
            if not isinstance(path, str) or (path and not os.path.isabs(path)):
                raise ValueError("tokens_file is an absolute path, or empty")
        except (ValueError, UserError) as exc:
            self._answer({"ok": False, "error": f"bad request: {exc}"})
            return
        try:
            # The serve process has read the file already; the daemon reads it for itself,
            # and again whenever it changes, as its own listener's keys.
            keys = keyring(Path(path) if path else None, token)
        except UserError as exc:
            self._answer({"ok": False, "error": str(exc)})
            return
        projects = Projects(Path(cwd), env, lender=self.server.warm.use)
        try:
            listener = listen(projects, profile, str(request["host"]), port, keys, hosts,
                              max_bytes, limits)
        except UserError as exc:
            self._answer({"ok": False, "error": str(exc)})
            return
        log.info("HTTP on %s:%d for %s", request["host"], listener.port, cwd)
        try:
            self._answer({"ok": True, "port": listener.port})
            self.connection.settimeout(None)
            while self.rfile.read(65536):
                pass
        finally:
            listener.stop()
            log.info("HTTP on %s:%d stopped", request["host"], listener.port)

    def _dashboard(self, request: Mapping[str, Any], env: dict[str, str]) -> None:
        """`loremap dashboard` on this daemon, over its warm Apps: like `serve --http`, the
        listener lives as long as the connection of the process that asked for it."""
        from loremap.errors import UserError
        from loremap.mcp.projects import Projects
        from loremap.use.keys import keyring
        from loremap.web.serve import listen

        cwd, host, token, port, path = (request.get(k) for k in (
            "cwd", "host", "token", "port", "tokens_file"))
        hosts, writes = request.get("allowed_hosts"), request.get("writes", False)
        path = "" if path is None else path
        if not all(isinstance(v, str) for v in (cwd, host, token, path)) or not isinstance(
                port, int) or isinstance(port, bool) or not isinstance(hosts, list) or \
                not all(isinstance(h, str) for h in hosts) or not os.path.isdir(str(cwd)) or \
                (path and not os.path.isabs(str(path))) or not isinstance(writes, bool):
            self._answer({"ok": False, "error": "bad request: cwd (a folder), host and token "
                          "are strings, port a number, allowed_hosts a list, tokens_file an "
                          "absolute path or empty, writes true or false"})
            return
        try:  # the daemon reads the tokens file for itself, and again whenever it changes
            keys = keyring(Path(str(path)) if path else None, str(token))
        except UserError as exc:
            self._answer({"ok": False, "error": str(exc)})
            return
        projects = Projects(Path(str(cwd)), env, lender=self.server.warm.use)
        try:
            running = listen(projects.use, env, str(host), port, keys, [str(h) for h in hosts],
                             writes)
        except UserError as exc:
            projects.close()
            self._answer({"ok": False, "error": str(exc)})
            return
        log.info("dashboard on %s:%d for %s", host, running.port, cwd)
        try:
            self._answer({"ok": True, "port": running.port})
            self.connection.settimeout(None)
            while self.rfile.read(65536):
                pass
        finally:
            running.stop()
            projects.close()
            log.info("dashboard on %s:%d stopped", host, running.port)

    def _mcp(self, request: Mapping[str, Any], env: dict[str, str]) -> None:
        from loremap.daemon.session import serve_session

        cwd = request.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            self._answer({"ok": False, "error": "bad request: cwd is a folder path"})
            return
        self._answer({"ok": True})
        self.connection.settimeout(None)  # a session is quiet between the agent's calls
        serve_session(self.server.warm, Path(cwd), env, self.rfile, self.wfile)


def _http_args(request: Mapping[str, Any]) -> tuple[str, str, int, str, list[str], int,
                                                     int, float]:
    """The listener's parameters from an `http` request (`ValueError` when one is wrong)."""
    cwd, profile, host, token = (request.get(k) for k in ("cwd", "profile", "host", "token"))
    hosts = request.get("allowed_hosts")
    if not all(isinstance(v, str) for v in (cwd, profile, host, token)) or not isinstance(
            hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise ValueError("cwd, profile, host and token are strings, allowed_hosts a list")
    numbers: list[float] = []
    for key in ("port", "max_bytes", "max_sessions", "session_idle_s"):
        value = request.get(key)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ValueError("port, max_bytes, max_sessions and session_idle_s are numbers")
        numbers.append(value)
    return (str(cwd), str(profile), int(numbers[0]), str(token), [str(h) for h in hosts],
            int(numbers[1]), int(numbers[2]), numbers[3])


def _preload() -> None:
    """Import the MCP server (the SDK: ~0.6 s, 2 s on a loaded machine) before the first
    session needs it: a warm connect is then a process start and a socket."""
    with contextlib.suppress(ImportError):
        import mcp.server.stdio  # noqa: F401

        import loremap.daemon.session  # noqa: F401
        import loremap.mcp.server  # noqa: F401


def _adopted() -> socket.socket | None:
    """The listening socket systemd passed (socket activation), if any."""
    if os.environ.get("LISTEN_PID") != str(os.getpid()):
        return None
    with contextlib.suppress(ValueError):
        if int(os.environ.get("LISTEN_FDS", "0")) >= 1:
            return socket.socket(fileno=3)
    return None


def _remove_leftover(path: Path) -> None:
    """Remove the socket file of a daemon that is gone (nobody accepted on it)."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    log.info("removed the socket of a daemon that is gone: %s", path)


def serve(environ: Mapping[str, str] | None = None) -> int:
    """Run the daemon until it is stopped or idle; 0, or 1 when another one runs.

    Of two daemons starting at once, the second waits up to 3 s for the lock (a stale daemon
    still holds it for a moment while its successor starts), then exits."""
    from loremap.errors import Conflict
    from loremap.vault.fs import file_lock

    env = dict(os.environ if environ is None else environ)
    path = Path(wire.socket_path(env))
    folder = Path(wire.private_dir(os.fspath(path.parent)))
    try:
        with file_lock(folder / f"daemon-{wire.install_id()}.lock", 3.0):
            return _serve_locked(env, path)
    except Conflict:
        log.info("another daemon holds its lock in %s: exiting", folder)
        return 1


def _serve_locked(env: dict[str, str], path: Path) -> int:
    from loremap.hook.context import use_opener

    listener = _adopted()
    if listener is None:
        answering = wire.connect(env, 1.0)  # `Refused` for another user's socket
        if answering is not None:
            answering.close()
            log.info("a daemon already answers on %s: exiting", path)
            return 1
        _remove_leftover(path)
    server = Daemon(env, listener)
    use_opener(server.warm.use)
    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        signal.signal(getattr(signal, name), lambda *_: server.stop())
    threading.Thread(target=server.watch, daemon=True, name="idle").start()
    threading.Thread(target=_preload, daemon=True, name="preload").start()
    log.info("daemon %s listening on %s (idle exit after %.0f s)", os.getpid(), path,
             server.idle_s)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.stop()
        use_opener(None)
        server.warm.close()
        server.server_close()
        if listener is None:  # the lock is still ours: no other daemon bound it since
            with contextlib.suppress(OSError):
                path.unlink()
    return 0
