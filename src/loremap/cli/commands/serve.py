"""`loremap serve [--http HOST:PORT]`: the MCP server, over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from loremap.config import CONFIG_FILE, LOREMAP_DIR, find_project_root, load_settings
from loremap.mcp import require_sdk


def run(args: argparse.Namespace) -> int:
    if args.http is None:
        return _stdio()
    require_sdk()
    from loremap.mcp.projects import Projects
    from loremap.mcp.server import check_profile

    root = find_project_root(Path.cwd(), os.environ)
    config = root / LOREMAP_DIR / CONFIG_FILE if root is not None else None
    settings = load_settings(config if config is not None and config.is_file() else None)
    profile = check_profile(settings.get_str("serve.tools"))
    projects = Projects()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="loremap serve: %(message)s")
    from loremap.mcp.http import parse_address, serve, session_limits

    host, port = parse_address(args.http)
    limits = session_limits(settings.get_int("serve.max_sessions"),
                            settings.get_float("serve.session_idle_s"))
    token = os.environ.get("LOREMAP_HTTP_TOKEN", "").strip()

    def ready(bound: int) -> None:
        auth = "bearer token required" if token else "no token (loopback only)"
        print(f"loremap serve: MCP on http://{host}:{bound}/mcp, health on /health ({auth}, "
              f"{profile} tools)", file=sys.stderr, flush=True)

    serve(projects, profile, host, port, token, list(settings.get_list("serve.allowed_hosts")),
          settings.get_int("serve.max_request_bytes"), limits, ready)
    return 0


def _stdio() -> int:
    """MCP over stdio: through the daemon when one answers, else in this process (and a daemon
    is started for the next session). Either way it exits when stdin closes, on SIGINT, and when
    the client says nothing for `mcp.handshake_timeout_s`."""
    import select

    from loremap import wire

    wait = load_settings(None).get_float("mcp.handshake_timeout_s")
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
            done = _relay()
        except wire.Refused as exc:
            print(f"loremap serve: daemon not used: {exc}", file=sys.stderr)
            done = None
        if done is not None:
            return done
        wire.spawn(os.environ)
    require_sdk()
    from loremap.mcp.projects import Projects
    from loremap.mcp.server import profile_for
    from loremap.mcp.stdio import serve_stdio

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="loremap serve: %(message)s")
    serve_stdio(Projects(), profile_for(Path.cwd(), os.environ))
    return 0


def _relay() -> int | None:
    from loremap.daemon.relay import relay

    return relay(os.environ, os.getcwd())
