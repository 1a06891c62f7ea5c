"""`loremap-hook <event>`: the entry point agents call on every hook event.

It runs on every prompt and every tool call, so it stays on the standard library and our light
modules (never `mcp`, `yaml`, `tree_sitter`, ...; a test measures its imports), each event's
module loads only when that event runs, and it fails open: whatever goes wrong is logged as one
line and the hook exits 0 with no output, so a memory problem never blocks the agent.

`<event>` is loremap's name (`prompt`) or the agent's own (`UserPromptSubmit`, Gemini CLI's
`BeforeAgent`): a user wiring hooks by hand writes the agent's. Without a known argument the
payload's `hook_event_name` decides; an event known by neither is still exit 0 and no stdout
(the agent injects stdout), but one line on stderr, which the agent shows in its debug output.

What each event does is in the module named in `_HANDLERS`; docs/claude-code.md is the user's
account of it.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not `typing`'s (~3 ms): the daemon's client imports this package
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

EVENTS = ("session-start", "prompt", "pre-tool", "post-tool", "tool-failure", "stop",
          "pre-compact", "session-end")
# The agents' own event names, as a user wiring hooks by hand writes them, -> loremap's event.
# Claude Code and Codex share their names; Gemini CLI names its own (AfterAgent ends a turn
# as Stop does, and takes the same `decision: "block"` + `reason`).
ALIASES = {
    "SessionStart": "session-start", "UserPromptSubmit": "prompt", "PreToolUse": "pre-tool",
    "PostToolUse": "post-tool", "PostToolUseFailure": "tool-failure", "Stop": "stop",
    "PreCompact": "pre-compact",
    "SessionEnd": "session-end",
    "BeforeAgent": "prompt", "BeforeTool": "pre-tool", "AfterTool": "post-tool",
    "AfterAgent": "stop", "PreCompress": "pre-compact",
}
# event -> (module, function): function(payload, environ) -> the text to print.
_HANDLERS = {
    "session-start": ("loremap.hook.start", "session_start"),
    "prompt": ("loremap.hook.prompt", "prompt"),
    "pre-tool": ("loremap.hook.pretool", "pre_tool"),
    "post-tool": ("loremap.hook.failure", "after_tool"),  # the meter, or a Gemini failure
    "tool-failure": ("loremap.hook.failure", "tool_failure"),
    "stop": ("loremap.hook.meter", "stop"),
    "pre-compact": ("loremap.hook.record", "pre_compact"),
}


def log(message: str, environ: Mapping[str, str] | None = None) -> None:
    """Append one line to the hook log (`<logs>/hook.log`); never raises."""
    from loremap.logs import log_line

    log_line("hook.log", message, environ)


def read_event(stream: bytes) -> dict[str, object]:
    """The agent's event JSON: an object, or `ValueError` naming what is wrong."""
    import json

    if not stream.strip():
        raise ValueError("empty stdin (expected the event JSON)")
    payload = json.loads(stream.decode("utf-8"))
    if not isinstance(payload, dict):
        raise ValueError(f"event JSON is a {type(payload).__name__}, not an object")
    return payload


class UnknownEvent(ValueError):
    """Neither the argument nor the payload's `hook_event_name` names an event loremap has."""


def event_of(name: object) -> str | None:
    """loremap's event for `name` (its own name or an agent's), or None."""
    if not isinstance(name, str):
        return None
    return name if name in EVENTS else ALIASES.get(name)


def resolve(argument: str, payload: Mapping[str, object]) -> str:
    """The event to run: the argument's, else the payload's `hook_event_name`'s.

    The argument wins when it is known (the installed command says what to run); a missing or
    unknown one falls back on what the agent says it is sending.
    """
    for name in (argument, payload.get("hook_event_name")):
        event = event_of(name)
        if event is not None:
            return event
    sent = payload.get("hook_event_name")
    raise UnknownEvent(f"unknown event {argument or '(none)'!r}"
                       + (f" (payload hook_event_name {sent!r})" if sent is not None else "")
                       + f"; known: {', '.join(EVENTS)} or the agents' "
                       f"{', '.join(sorted(ALIASES))}")


def handle(event: str, payload: dict[str, object],
           environ: Mapping[str, str] | None = None) -> str:
    """The text to print for `event` (loremap's or an agent's name; "" for nothing)."""
    own = event_of(event)
    if own is None:
        raise UnknownEvent(f"unknown event {event!r}; known: {', '.join(EVENTS)}")
    if own not in _HANDLERS:
        return ""
    import importlib

    from loremap.audit.actor import Actor, acting_as

    module, function = _HANDLERS[own]
    # A change an event makes (a reconcile that quarantines a note) is the hook's, in the
    # agent's session, in the audit chain.
    with acting_as(Actor("hook", session=str(payload.get("session_id") or ""))):
        output: str = getattr(importlib.import_module(module), function)(
            payload, os.environ if environ is None else environ)
    return output


def run(argument: str, data: bytes, environ: Mapping[str, str]) -> tuple[str, str]:
    """What one hook event prints: (stdout, a line for stderr). Never raises: the hook fails
    open. The one path of an event, in this process or in the daemon's."""
    event = argument
    cwd = ""
    try:
        try:
            payload = read_event(data)
            cwd = str(payload.get("cwd") or "")
        except ValueError:
            if event_of(event) is None:
                resolve(event, {})  # an unknown event says so, whatever stdin held
            raise
        event = resolve(event, payload)
        return handle(event, payload, environ), ""
    except UnknownEvent as exc:
        # Trigger: an event loremap has no name for. Why: the agent must not be blocked, yet
        # a hand-wired hook that never runs must not be silent either. Outcome: exit 0, no
        # stdout (which the agent injects), one line on stderr (its debug output) and the log.
        message = f"loremap-hook: {exc}; nothing was done"
        log(message, environ)
        return "", " ".join(message.split())
    except Exception as exc:  # noqa: BLE001
        # Trigger: any error at all. Why: a hook must never block the agent.
        # Outcome: one log line, exit 0, no stdout. A damaged index is set aside on the way
        # (`use.faults`), so the next event rebuilds it instead of failing the same way.
        said = f"{type(exc).__name__}: {exc}"
        try:
            from pathlib import Path

            from loremap.use.faults import explain

            said = explain(exc, Path(cwd or os.getcwd()), environ) or said
        except Exception:  # noqa: BLE001, S110 - the log line below is all that is left to do
            pass
        log(f"hook {event or '(no event)'} failed: {said}", environ)
        return "", ""


# How long a hook waits for the daemon's answer before answering in its own process: a
# session start may index a repository for the first time; the others answer in milliseconds,
# and a daemon stuck that long must not hold up every prompt for Claude Code's 60 s timeout.
_ANSWER_S = {"session-start": 120.0, "SessionStart": 120.0, "": 15.0}


def _through_daemon(argument: str, data: bytes) -> tuple[str, str] | None:
    """The daemon's answer to this event, or None: then this process answers, and a daemon is
    started for the next event (`loremap.wire`)."""
    from loremap import wire

    if not wire.enabled(os.environ):
        return None
    try:
        answer = wire.ask({"op": "hook", "event": argument,
                           "payload": data.decode("utf-8", errors="replace"),
                           "env": wire.request_environ(os.environ)}, os.environ,
                          answer_s=_ANSWER_S.get(argument, _ANSWER_S[""]))
    except wire.Refused as exc:
        log(f"daemon not used: {exc}")
        return None
    if answer is None:
        wire.spawn(os.environ)
        return None
    if not answer.get("ok"):
        return None  # a daemon runs but cannot serve this event (`wire.ask`)
    return str(answer.get("stdout", "")), str(answer.get("stderr", ""))


def main(argv: Sequence[str] | None = None) -> int:
    """Run one hook event, through the daemon when one answers; always exit 0."""
    args = list(sys.argv[1:] if argv is None else argv)
    event = args[0] if args else ""
    try:
        data = sys.stdin.buffer.read()
    except OSError as exc:
        log(f"hook {event or '(no event)'} failed: stdin unreadable: {exc}")
        return 0
    try:
        done = _through_daemon(event, data)
    except Exception as exc:  # noqa: BLE001 - the daemon is an optimisation, never a failure
        log(f"daemon not used: {type(exc).__name__}: {exc}")
        done = None
    output, message = done if done is not None else run(event, data, os.environ)
    if output:
        sys.stdout.write(output)
        sys.stdout.flush()
    if message:
        _say(message)
    return 0


def _say(message: str) -> None:
    try:
        sys.stderr.write(" ".join(message.split()) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed stderr: the log has it
        pass
