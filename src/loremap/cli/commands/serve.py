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
    if args.http is None:
        from loremap.mcp.stdio import serve_stdio

        serve_stdio(projects, profile)
        return 0
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
