"""One MCP session inside the daemon: the SDK's own server over a connection's two streams.

`loremap serve` (stdio) relays its stdin and stdout to a connection; here the SDK's stdio
transport reads and writes that connection's streams instead of the process's, so the relay
holds no protocol logic and the session is the same server `loremap serve` runs in process
(`mcp.server.build_server`). Each session runs its own event loop on its connection's thread;
its project's Apps are the daemon's warm ones (`warm.Warm`), shared with the hooks.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path

from loremap.daemon.warm import Warm


class _Unowned(io.TextIOWrapper):
    """A text layer whose close leaves the connection to its owner (the handler)."""

    def close(self) -> None:
        try:
            self.detach()
        except ValueError:
            pass


def serve_session(warm: Warm, cwd: Path, environ: Mapping[str, str], rfile: io.BufferedIOBase,
                  wfile: io.BufferedIOBase) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    from loremap.mcp.projects import Projects
    from loremap.mcp.server import build_server, profile_for

    projects = Projects(cwd, environ, lender=warm.use)
    server = build_server(projects, profile_for(cwd, environ))
    reader = anyio.wrap_file(_Unowned(rfile, encoding="utf-8", errors="replace"))  # type: ignore[arg-type]
    writer = anyio.wrap_file(_Unowned(wfile, encoding="utf-8", write_through=True))  # type: ignore[arg-type]

    async def main() -> None:
        async with stdio_server(reader, writer) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        projects.close()
