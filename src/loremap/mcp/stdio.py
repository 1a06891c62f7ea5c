"""`loremap serve`: the MCP server over stdin/stdout, as an agent launches it.

The process lives as long as the client keeps stdin open. When it closes, the SDK stops reading,
waits for tool calls in flight (their threads finish their writes), and the indexes are closed.
SIGINT ends it at once (as SIGTERM does): the SDK's stdin reader is a thread blocked in read(),
which asyncio's shutdown would wait for forever. A write in flight is then whole or absent
(temp file and rename, journalled batches, SQLite's rollback).
"""

from __future__ import annotations

import os
import signal
import sys

import anyio
from mcp.server.stdio import stdio_server

from loremap.mcp.projects import Projects
from loremap.mcp.server import build_server


def serve_stdio(projects: Projects, profile: str) -> None:
    server = build_server(projects, profile)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    def stop(signum: int, frame: object) -> None:
        sys.stderr.flush()
        os._exit(128 + signum)

    signal.signal(signal.SIGINT, stop)
    try:
        anyio.run(main)
    finally:
        projects.close()
