"""Who is acting: what each front end says once per call, read by the audit records under it.

The writes happen deep below the front ends (`Memory`, `Sync`), which do not know whether a
person, an agent or a hook asked. Each front end therefore sets the actor for the duration of
a call, and every record written inside it carries that actor:

    with acting_as(Actor("agent", client="claude-code")):
        ...  # remember, forget: their records say agent, claude-code

The CLI says `human` (`cli.run`), the MCP server `agent` with the client's name from its
`initialize` (`mcp/server.py`), the hooks `hook` with the agent's session id from the event
(`hook.handle`). A context variable, not a global: the daemon and the MCP server run many calls
at once on threads, and anyio hands the caller's context to the worker thread it runs a call
on. The HTTP server will name the bearer token a call came with (`token`) the same way.
Nothing set (a library call, a test) records `unknown`.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import NamedTuple

KINDS = ("human", "agent", "hook", "unknown")


class Actor(NamedTuple):
    """Who asked for a change: `kind` (human, agent, hook), the agent's session id when
    known, the MCP client's name, and the name of the HTTP token the call came with."""

    kind: str
    session: str = ""
    client: str = ""
    token: str = ""


UNKNOWN = Actor("unknown")  # nothing set: a library call, a test
_ACTOR: contextvars.ContextVar[Actor] = contextvars.ContextVar("loremap_actor", default=UNKNOWN)


@contextlib.contextmanager
def acting_as(actor: Actor) -> Iterator[Actor]:
    """Record `actor` as the author of every change made inside this block (this thread, and
    the worker threads anyio runs its calls on)."""
    token = _ACTOR.set(actor)
    try:
        yield actor
    finally:
        _ACTOR.reset(token)


def current_actor() -> Actor:
    return _ACTOR.get()


def whoami() -> str:
    """`user@host` of this process: the audit records' and the shared database's writer."""
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # pragma: no cover - a uid without a name
        user = "unknown"
    return f"{user}@{socket.gethostname()}"
