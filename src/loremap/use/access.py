"""Who may change the memory: a write checked against its caller's role, in one place.

A front end that knows a call changes the memory (the MCP dispatch: `Tool.writes`, from the
catalogue) asks `check_write` before running it, inside the project the call is for. The
caller is the key its request came with (`loremap.actor`): none is the local user (CLI,
hooks, stdio), who may do anything; a `read-write` key may write; a `read-only` one is refused
by `refuse_write`, the one way a write is refused, so nothing of the memory changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from loremap import actor
from loremap.errors import Forbidden

if TYPE_CHECKING:
    from loremap.actor import Caller
    from loremap.app import App


def may_write(keyed: bool) -> bool:
    """Whether the current caller may change the memory. `keyed`: the server requires a key,
    so a call that arrives without a caller may not."""
    caller = actor.current()
    return caller.writes if caller is not None else not keyed


def check_write(app: App, operation: str, keyed: bool) -> None:
    """Let the write `operation` (a tool's name) through, or refuse it (`Forbidden`)."""
    if not may_write(keyed):
        refuse_write(app, actor.current(), operation)


def refuse_write(app: App, caller: Caller | None, operation: str) -> NoReturn:
    """Refuse the write `operation` of `caller` in `app`'s project; nothing has changed.

    The audit chain records the refusal here, before raising (`Memory.record_refusal`: the
    caller's key as the actor, the operation, no note changed). Every refused write passes
    through this function and no other.
    """
    if caller is None:
        # Trigger: a server that requires keys got a call with no caller (never, unless the
        # SDK stops handing the request's context to the handler). Why: a missing caller
        # must not pass for the local user. Outcome: the write is refused like a read-only's.
        who = "the call reached the tool without its request's key"
    else:
        who = f"the token {caller.name!r} is read-only"
    if app.loremap_dir is not None:
        app.memory.record_refusal(operation, who)
    raise Forbidden(f"{operation}: refused: {who}, and {operation} changes the memory; nothing "
                    "was changed (use a read-write token)")
