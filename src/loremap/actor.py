"""Who is calling: the name and role of the key a request came with, for every layer to read.

`loremap serve --http` sets it for each request from the bearer token that request carried
(`mcp/http.py`: a key of the tokens file, or `LOREMAP_HTTP_TOKEN` as the read-write key
`default`); a stdio session, a hook and the CLI set nothing, and `current()` is then None: the
local user, who may do anything. The MCP dispatch refuses a write to a read-only caller
(`use/access.py`), and the audit chain (issue 21) reads `current().name` as the actor of what
it records. A leaf over the standard library, so any layer may import it; a `ContextVar`, so
the concurrent requests of one server each see their own caller, on the worker thread of
their tool call too (the MCP SDK hands the HTTP request's context to the handler, anyio copies
it into the thread).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NamedTuple

READ_ONLY = "read-only"
READ_WRITE = "read-write"
ROLES = (READ_ONLY, READ_WRITE)


class Caller(NamedTuple):
    """The key a request came with: its name (the actor) and its role."""

    name: str
    role: str

    @property
    def writes(self) -> bool:
        """Whether this caller may change the memory."""
        return self.role == READ_WRITE


_CALLER: ContextVar[Caller | None] = ContextVar("loremap.caller", default=None)


def current() -> Caller | None:
    """The caller of the request being served, or None (the local user: CLI, hooks, stdio)."""
    return _CALLER.get()


@contextmanager
def acting(caller: Caller | None) -> Iterator[None]:
    """Serve the block as `caller` (what the HTTP server does around each request)."""
    token = _CALLER.set(caller)
    try:
        yield
    finally:
        _CALLER.reset(token)
