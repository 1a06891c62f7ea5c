"""`loremap dashboard [--port N] [--host H] [--open]`: the memory in a browser, read-only.

Served by the per-user daemon when it can run (its warm Apps, as `serve --http`: this process
holds the listener open until it ends), else in this process. Either way the listener rules
are `loremap.listener`'s: loopback by default, any other address only with
`LOREMAP_HTTP_TOKEN`, a port in use is one line.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from loremap.config import LOREMAP_DIR, find_project_root, project_settings
from loremap.errors import InvalidInput, NotFound
from loremap.listener import check_bind


def run(args: argparse.Namespace) -> int:
    if args.port > 65535:
        raise InvalidInput(f"--port {args.port}: write a port from 0 to 65535")
    root = find_project_root(Path.cwd(), os.environ)
    if root is None or not (root / LOREMAP_DIR).is_dir():
        raise NotFound("no loremap project here: run `loremap init` in the repository")
    host = args.host.strip().strip("[]") or "127.0.0.1"
    token = os.environ.get("LOREMAP_HTTP_TOKEN", "").strip()
    check_bind(host, bool(token))
    hosts = list(project_settings(root, os.environ).get_list("serve.allowed_hosts"))

    def ready(bound: int) -> None:
        from loremap.web.serve import url

        address = url(host, bound)
        auth = (f"bearer token required: open {address}#token=<LOREMAP_HTTP_TOKEN>" if token
                else "loopback only")
        print(f"loremap dashboard: {address} (read-only, {auth}; Ctrl-C stops it)",
              file=sys.stderr, flush=True)
        if args.open:
            import webbrowser

            webbrowser.open(address)

    from loremap import wire

    if wire.enabled(os.environ):
        from loremap.cli.commands.serve import _http_through_daemon

        done = _http_through_daemon({
            "op": "dashboard", "cwd": str(root), "env": wire.request_environ(os.environ),
            "host": host, "port": args.port, "token": token, "allowed_hosts": hosts}, ready)
        if done is not None:
            return done
    from loremap.mcp.projects import Projects
    from loremap.web.serve import serve

    projects = Projects(root, os.environ)
    try:
        serve(projects.use, os.environ, host, args.port, token, hosts, ready)
    finally:
        projects.close()
    return 0
