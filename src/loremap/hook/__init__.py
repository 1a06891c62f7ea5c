"""`loremap-hook <event>`: the entry point agents call on every hook event.

It runs on every prompt and every tool call, so it stays on the standard library and our light
modules (never `mcp`, `yaml`, `tree_sitter`, ...; a test measures its imports), each event's
module loads only when that event runs, and it fails open: whatever goes wrong is logged as one
line and the hook exits 0 with no output, so a memory problem never blocks the agent.

What each event does is in the module named in `_HANDLERS`; docs/claude-code.md is the user's
account of it.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Mapping, Sequence

EVENTS = ("session-start", "prompt", "pre-tool", "post-tool", "stop", "pre-compact",
          "session-end")
# event -> (module, function): function(payload, environ) -> the text to print.
_HANDLERS = {
    "session-start": ("loremap.hook.start", "session_start"),
    "prompt": ("loremap.hook.prompt", "prompt"),
    "pre-tool": ("loremap.hook.pretool", "pre_tool"),
    "post-tool": ("loremap.hook.meter", "post_tool"),
    "stop": ("loremap.hook.meter", "stop"),
    "pre-compact": ("loremap.hook.record", "pre_compact"),
}


def log(message: str, environ: Mapping[str, str] | None = None) -> None:
    """Append one line to the hook log (`<logs>/hook.log`); never raises."""
    from loremap.logs import log_line

    log_line("hook.log", message, environ)


def read_event(stream: bytes) -> dict[str, object]:
    """The agent's event JSON: an object, or `ValueError` naming what is wrong."""
    if not stream.strip():
        raise ValueError("empty stdin (expected the event JSON)")
    payload = json.loads(stream.decode("utf-8"))
    if not isinstance(payload, dict):
        raise ValueError(f"event JSON is a {type(payload).__name__}, not an object")
    return payload


def handle(event: str, payload: dict[str, object],
           environ: Mapping[str, str] | None = None) -> str:
    """The text to print for `event` ("" for nothing)."""
    if event not in EVENTS:
        raise ValueError(f"unknown event {event!r}; known: {', '.join(EVENTS)}")
    if event not in _HANDLERS:
        return ""
    module, function = _HANDLERS[event]
    output: str = getattr(importlib.import_module(module), function)(
        payload, os.environ if environ is None else environ)
    return output


def main(argv: Sequence[str] | None = None) -> int:
    """Run one hook event; always exit 0."""
    args = list(sys.argv[1:] if argv is None else argv)
    event = args[0] if args else ""
    try:
        payload = read_event(sys.stdin.buffer.read())
        output = handle(event, payload)
        if output:
            sys.stdout.write(output)
            sys.stdout.flush()
    except Exception as exc:  # noqa: BLE001
        # Trigger: any error at all. Why: a hook must never block the agent.
        # Outcome: one log line, exit 0, no stdout.
        log(f"hook {event or '(no event)'} failed: {type(exc).__name__}: {exc}")
    return 0
