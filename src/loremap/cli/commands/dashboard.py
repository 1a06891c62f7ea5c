"""`loremap dashboard [--port N] [--host H] [--tokens FILE] [--writes] [--open]`: the memory
in a browser, read-only unless `--writes` lets the page forget notes and count outcomes.

Served by the per-user daemon when it can run (its warm Apps, as `serve --http`: this process
holds the listener open until it ends), else in this process. Either way the listener rules
are `loremap.listener`'s and the keys those of `serve --http` (`use/keys.py`): loopback by
default, any other address only with a tokens file (`--tokens FILE` or `LOREMAP_HTTP_TOKENS`,
where any key, read-only or read-write, may look) or `LOREMAP_HTTP_TOKEN`; a port in use is
one line.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from loremap.config import LOREMAP_DIR, find_project_root, project_settings
from loremap.errors import InvalidInput, NotFound


def run(args: argparse.Namespace) -> int:
    if args.port > 65535:
        raise InvalidInput(f"--port {args.port}: write a port from 0 to 65535")
    root = find_project_root(Path.cwd(), os.environ)
    if root is None or not (root / LOREMAP_DIR).is_dir():
        raise NotFound("no loremap project here: run `loremap init` in the repository")
    host = args.host.strip().strip("[]") or "127.0.0.1"
    from loremap.listener import check_bind
    from loremap.use.keys import ENV_TOKEN, keyring, tokens_file

    token = os.environ.get(ENV_TOKEN, "").strip()
    path = tokens_file(args.tokens, os.environ)
    keys = keyring(path, token)  # a tokens file that cannot serve stops here, in one line
    check_bind(host, keys is not None)
    hosts = list(project_settings(root, os.environ).get_list("serve.allowed_hosts"))

    def ready(bound: int) -> None:
        from loremap.web.serve import url

        address = url(host, bound)
        auth = (f"{keys.describe()}: open {address}#token=<TOKEN>" if keys is not None
                else "loopback only")
        mode = "forget and outcome from the page" if args.writes else "read-only"
        print(f"loremap dashboard: {address} ({mode}, {auth}; Ctrl-C stops it)",
              file=sys.stderr, flush=True)
        if args.open:
            import webbrowser

            webbrowser.open(address)

    from loremap import wire

    if wire.enabled(os.environ):
        from loremap.cli.listening import through_daemon

        done = through_daemon({
            "op": "dashboard", "cwd": str(root), "env": wire.request_environ(os.environ),
            "host": host, "port": args.port, "token": token, "tokens_file": str(path or ""),
            "allowed_hosts": hosts, "writes": bool(args.writes)}, ready, "loremap dashboard")
        if done is not None:
            return done
    from loremap.mcp.projects import Projects
    from loremap.web.serve import serve

    projects = Projects(root, os.environ)
    try:
        serve(projects.use, os.environ, host, args.port, keys, hosts, ready, args.writes)
    finally:
        projects.close()
    return 0
