"""The MCP server: the only package that imports the `mcp` SDK (an extra: `loremap[mcp]`).

`serve_stdio` is what agents launch; `loremap serve --http` runs `http.serve`, one daemon for
many clients. Both build the same server (`server.build_server`) over the same tools.
"""

from __future__ import annotations

from loremap.errors import UserError


def require_sdk() -> None:
    """Refuse clearly when the extra is not installed (the core does not need the SDK)."""
    try:
        import mcp.server  # noqa: F401
    except ImportError:
        raise UserError("the MCP server needs the MCP SDK: pip install 'loremap[mcp]'") from None
