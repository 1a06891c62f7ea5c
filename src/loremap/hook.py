"""`loremap-hook <event>`: the entry point agents call on every hook event.

It runs on every prompt, so it stays on the standard library and our light modules (never
`mcp`, `yaml`, `tree_sitter`, ...; a test measures its imports), and it fails open: whatever
goes wrong is logged as one line and the hook exits 0 with no output, so a memory problem never
blocks the agent. The behaviours of each event arrive with the agent-integration work; for now
the hook validates the event payload and records malformed ones.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

EVENTS = ("session-start", "prompt", "pre-tool", "post-tool", "stop", "pre-compact",
          "session-end")


def _log(message: str) -> None:
    import datetime as dt

    from loremap.config import UserPaths

    try:
        path = UserPaths.from_env().logs / "hook.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{stamp} {' '.join(message.split())}\n")
    except OSError:
        pass


def read_event(stream: bytes) -> dict[str, object]:
    """The agent's event JSON: an object, or `ValueError` naming what is wrong."""
    if not stream.strip():
        raise ValueError("empty stdin (expected the event JSON)")
    payload = json.loads(stream.decode("utf-8"))
    if not isinstance(payload, dict):
        raise ValueError(f"event JSON is a {type(payload).__name__}, not an object")
    return payload


def handle(event: str, payload: dict[str, object]) -> str:
    """The text to print for `event` (nothing yet: the behaviours come with agent integration)."""
    if event not in EVENTS:
        raise ValueError(f"unknown event {event!r}; known: {', '.join(EVENTS)}")
    return ""


def main(argv: Sequence[str] | None = None) -> int:
    """Run one hook event; always exit 0."""
    args = list(sys.argv[1:] if argv is None else argv)
    event = args[0] if args else ""
    try:
        payload = read_event(sys.stdin.buffer.read())
        output = handle(event, payload)
        if output:
            sys.stdout.write(output)
    except Exception as exc:  # noqa: BLE001
        # Trigger: any error at all. Why: a hook must never block the agent.
        # Outcome: one log line, exit 0, no stdout.
        _log(f"hook {event or '(no event)'} failed: {type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
