"""Everything the CLI prints goes through here: JSON for machines, plain lines for people (on
the command's own streams, `context.out` and `context.err`: the process's, or the daemon's
answer to the process that handed the command over)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from loremap.cli import context


def emit_json(data: Any) -> None:
    import json

    stream = context.out()
    json.dump(data, stream, ensure_ascii=False, indent=2, default=str)
    stream.write("\n")


def lines(text_lines: Iterable[str]) -> None:
    stream = context.out()
    for line in text_lines:
        print(line, file=stream)


def warn(messages: Iterable[str]) -> None:
    stream = context.err()
    for message in messages:
        print(f"loremap: warning: {message}", file=stream)


def count(n: int, noun: str) -> str:
    """`1 note`, `3 notes`."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"

