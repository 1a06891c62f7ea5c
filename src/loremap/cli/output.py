"""Everything the CLI prints goes through here: JSON for machines, plain lines for people."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any


def emit_json(data: Any) -> None:
    import json

    json.dump(data, sys.stdout, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write("\n")


def lines(text_lines: Iterable[str]) -> None:
    for line in text_lines:
        print(line)


def warn(messages: Iterable[str]) -> None:
    for message in messages:
        print(f"loremap: warning: {message}", file=sys.stderr)


def count(n: int, noun: str) -> str:
    """`1 note`, `3 notes`."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"

