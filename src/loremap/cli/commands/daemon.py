"""`loremap daemon start | stop | status | run | units [--write]` (see loremap.daemon)."""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from loremap import wire
from loremap.cli.output import emit_json, lines
from loremap.errors import UserError

_START_S = 15.0  # a cold start imports loremap and binds; on a loaded machine a few seconds


def run(args: argparse.Namespace) -> int:
    env = os.environ
    if args.action == "run":
        import sys

        # The daemon in this process's place (same pid: what a systemd service runs).
        os.execv(sys.executable, [sys.executable, "-m", "loremap.daemon"])
    if args.action == "status":
        return _status(args.json)
    if args.action == "units":
        return _units(args.write, args.json)
    if args.write:
        raise UserError("--write goes with `units`: `loremap daemon units --write`")
    if args.action == "stop":
        answer = _ask({"op": "stop"})
        if answer is None:
            lines(["no daemon is running"])
            return 0
        pid = int(answer.get("pid", 0))
        end = time.monotonic() + 10
        while time.monotonic() < end and _ask({"op": "status"}) is not None:
            time.sleep(0.05)
        lines([f"stopped the daemon (pid {pid})"])
        return 0
    if not wire.enabled(env):
        raise UserError("LOREMAP_DAEMON is off in this environment: unset it to start the "
                        "daemon")
    try:
        started = wire.start(env, _START_S)
    except wire.Refused as exc:
        raise UserError(str(exc)) from None
    if not started:
        from loremap.logs import log_path

        raise UserError(f"the daemon did not answer within {_START_S:g} s; see "
                        f"{log_path(wire.DAEMON_LOG)}")
    return _status(args.json)


def _units(write: bool, as_json: bool) -> int:
    from loremap.cli import units

    if not write:
        found = units.units(os.environ)
        if as_json:
            emit_json(found)
        else:
            for name, text in found.items():
                lines([f"# {name}", text])
        return 0
    written = units.write(os.environ)
    if as_json:
        emit_json({"written": [str(p) for p in written]})
    else:
        lines([*(f"wrote {p}" for p in written),
               f"then: systemctl --user daemon-reload && systemctl --user enable --now "
               f"{units.SOCKET_UNIT}"])
    return 0


def _ask(message: dict[str, object]) -> dict[str, Any] | None:
    try:
        return wire.ask(message, os.environ, connect_s=1.0, answer_s=10.0)
    except wire.Refused as exc:
        raise UserError(str(exc)) from None


def _status(as_json: bool) -> int:
    answer = _ask({"op": "status"})
    if answer is None:
        if as_json:
            emit_json({"running": False, "socket": wire.socket_path(os.environ)})
        else:
            lines([f"no daemon is running (socket {wire.socket_path(os.environ)}); a hook or "
                   "`loremap serve` starts it on first need, or `loremap daemon start`"])
        return 0
    stale = answer.get("stamp") != wire.install_stamp()
    if as_json:
        emit_json({"running": True, "stale": stale, **answer})
        return 0
    projects = answer.get("projects") or []
    up = time.time() - float(str(answer.get("started", time.time())))
    lines([f"daemon {answer.get('pid')} (loremap {answer.get('version')}) on "
           f"{answer.get('socket')}: up {up:.0f} s, {answer.get('requests')} requests, "
           f"{int(str(answer.get('rss_kb', 0))) // 1024} MB resident, exits after "
           f"{float(str(answer.get('idle_s', 0))):.0f} s idle",
           f"  projects open: {', '.join(map(str, projects)) if projects else 'none'}",
           *(["  stale: the installed loremap changed since it started; it exits at its next "
              "request (or `loremap daemon stop`)"] if stale else [])])
    return 0
