"""`loremap serve [--http HOST:PORT [--tokens FILE]]`: the MCP server, over stdio (default) or
streamable HTTP; `loremap serve token add|list|revoke`: the keys of the HTTP server."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from loremap.config import project_settings
from loremap.errors import UserError
from loremap.mcp import require_sdk

if TYPE_CHECKING:
    from loremap.use.keys import Key


def run(args: argparse.Namespace) -> int:
    if args.serve_action == "token":
        return _token(args)
    if args.http is None:
        if args.tokens is not None:
            raise UserError("--tokens is for --http: over stdio the agent that starts the "
                            "server is the local user, who needs no key")
        return _stdio()
    require_sdk()
    from loremap.listener import check_bind
    from loremap.mcp.http import parse_address, serve, session_limits
    from loremap.mcp.server import check_profile
    from loremap.use.keys import ENV_TOKEN, keyring, tokens_file

    settings = project_settings(Path.cwd(), os.environ)
    profile = check_profile(settings.get_str("serve.tools"))
    host, port = parse_address(args.http)
    limits = session_limits(settings.get_int("serve.max_sessions"),
                            settings.get_float("serve.session_idle_s"))
    token = os.environ.get(ENV_TOKEN, "").strip()
    path = tokens_file(args.tokens, os.environ)
    keys = keyring(path, token)  # a tokens file that cannot serve stops here, in one line
    check_bind(host, keys is not None)
    hosts = list(settings.get_list("serve.allowed_hosts"))
    max_bytes = settings.get_int("serve.max_request_bytes")

    def ready(bound: int) -> None:
        auth = keys.describe() if keys is not None else "no token (loopback only)"
        print(f"loremap serve: MCP on http://{host}:{bound}/mcp, health on /health ({auth}, "
              f"{profile} tools)", file=sys.stderr, flush=True)

    from loremap import wire

    if wire.enabled(os.environ):
        from loremap.cli.listening import through_daemon

        done = through_daemon({
            "op": "http", "cwd": os.getcwd(), "env": wire.request_environ(os.environ),
            "profile": profile, "host": host, "port": port, "token": token,
            "tokens_file": str(path or ""), "allowed_hosts": hosts, "max_bytes": max_bytes,
            "max_sessions": limits.max_sessions, "session_idle_s": limits.idle_s},
            ready, "loremap serve")
        if done is not None:
            return done
    from loremap.mcp.projects import Projects

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="loremap serve: %(message)s")
    serve(Projects(), profile, host, port, keys, hosts, max_bytes, limits, ready)
    return 0


def _token(args: argparse.Namespace) -> int:
    """`serve token add NAME --role ROLE`, `list`, `revoke NAME` on the tokens file."""
    from loremap.cli import context
    from loremap.cli.output import emit_json, lines
    from loremap.use import keys

    path = keys.tokens_file(args.tokens, os.environ)
    if path is None:
        raise UserError("name the tokens file: --tokens FILE, or set LOREMAP_HTTP_TOKENS")
    as_json = getattr(args, "json", False)
    if args.token_action == "add":
        key, token = keys.add(path, args.name, args.role)
        if as_json:
            emit_json({"file": str(path), **_entry(key), "token": token})
            return 0
        lines([token])  # alone on stdout: TOKEN=$(loremap serve token add ...) takes it
        if not context.quiet():
            print(f"loremap: added token {key.name!r} ({key.role}) to {path}; it is shown only "
                  "now: the client sends it as 'Authorization: Bearer <token>'",
                  file=context.err())
        return 0
    if args.token_action == "revoke":
        key = keys.revoke(path, args.name)
        if as_json:
            emit_json({"file": str(path), **_entry(key)})
            return 0
        lines([f"revoked token {key.name!r} ({key.role}) in {path}: a server reading this "
               "file refuses it from its next request"])
        return 0
    found = keys.load(path)
    if as_json:
        emit_json({"file": str(path), "tokens": [_entry(k) for k in found]})
        return 0
    lines([f"{k.name}  {k.role}  added {k.created or '?'}  sha256 {k.sha256[:12]}"
           for k in found] or [f"no tokens in {path} (add one: loremap serve token add NAME "
                               "--role ROLE)"])
    return 0


def _entry(key: Key) -> dict[str, str]:
    return {"name": key.name, "role": key.role, "created": key.created, "sha256": key.sha256}


def _stdio() -> int:
    """MCP over stdio: through the daemon when one answers, else in this process (and a daemon
    is started for the next session). Either way it exits when stdin closes, on SIGINT, and when
    the client says nothing for `mcp.handshake_timeout_s`."""
    import select

    from loremap import wire

    settings = project_settings(Path.cwd(), os.environ)
    wait = settings.get_float("mcp.handshake_timeout_s")
    try:
        ready, _, _ = select.select([sys.stdin.fileno()], [], [], wait)
    except (OSError, ValueError):
        ready = [True]  # no selectable stdin (a test's pipe substitute): serve as before
    if not ready:
        print(f"loremap serve: no MCP message on stdin within {wait:g} s "
              "(mcp.handshake_timeout_s); exiting", file=sys.stderr)
        return 0
    if wire.enabled(os.environ):
        try:
            done = wire.relay(os.environ, os.getcwd())
        except wire.Refused as exc:
            print(f"loremap serve: daemon not used: {exc}", file=sys.stderr)
            done = None
        if done is not None:
            return done
        wire.spawn(os.environ)
    require_sdk()
    from loremap.mcp.projects import Projects
    from loremap.mcp.server import check_profile
    from loremap.mcp.stdio import serve_stdio

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="loremap serve: %(message)s")
    serve_stdio(Projects(), check_profile(settings.get_str("serve.tools")))
    return 0
