"""Everything the CLI prints goes through here: JSON for machines, plain lines for people (on
the command's own streams, `context.out` and `context.err`: the process's, or the daemon's
answer to the process that handed the command over)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from loremap.cli import context

# The version of every `--json` shape (docs/json.md): the first key of every object printed.
# It moves to 2 when a key is removed or changes meaning; added keys keep it.
JSON_VERSION = 1


def emit_json(data: Mapping[str, Any]) -> None:
    import json

    stream = context.out()
    json.dump({"json_version": JSON_VERSION, **data}, stream, ensure_ascii=False, indent=2,
              default=str)
    stream.write("\n")


def lines(text_lines: Iterable[str]) -> None:
    stream = context.out()
    for line in text_lines:
        print(line, file=stream)


def warn(messages: Iterable[str]) -> None:
    """Warnings on stderr, one line each (none with `--quiet`)."""
    if context.quiet():
        return
    stream = context.err()
    for message in messages:
        print(f"loremap: warning: {message}", file=stream)


def count(n: int, noun: str) -> str:
    """`1 note`, `3 notes`."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def progress(args: argparse.Namespace, label: str) -> Callable[[int, int], None] | None:
    """The progress bar of a long command: drawn on stderr when it is a terminal, never with
    `--json` or `--quiet` (one drawing for every command: `codemap.index.tty_progress`)."""
    if getattr(args, "json", False) or context.quiet():
        return None
    from loremap.codemap.index import tty_progress

    return tty_progress(label)
