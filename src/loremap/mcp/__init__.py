"""The MCP server: the only package that imports the `mcp` SDK (a dependency of loremap, imported
only when a server starts).

`serve_stdio` is what agents launch; `loremap serve --http` runs `http.serve`, one daemon for
many clients. Both build the same server (`server.build_server`) over the same tools.
"""

from __future__ import annotations

from loremap.errors import UserError

SDK = "mcp>=2.3,<3"  # as pyproject.toml's dependencies have it (a test keeps them together)


def sdk_hint() -> str:
    """What to run when the SDK is missing: loremap depends on it, so an environment without it
    is a partial install (`--no-deps`, a hand-made venv); reinstalling or adding it mends it."""
    import sys

    return (f"the MCP SDK is missing from {sys.prefix}; reinstall loremap (from a clone: "
            f"`pipx install --force ./loremap`), or add it: `{sys.executable} -m pip install "
            f"'{SDK}'`")


def require_sdk() -> None:
    """Refuse clearly when the SDK cannot be imported (nothing but the server needs it)."""
    try:
        import mcp.server  # noqa: F401
    except ImportError:
        raise UserError(f"the MCP server needs the MCP SDK: {sdk_hint()}") from None
