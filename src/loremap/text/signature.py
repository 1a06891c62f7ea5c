"""An error's signature: the part of an error text that stays the same when it happens again.

A failing command or tool call prints its error with what differs from one run to the next:
the paths it was given, line numbers, ids, addresses, timestamps, counts. The signature keeps
the line that says what went wrong and replaces those parts with placeholders, so the same
failure tomorrow, in another checkout or on another file, has the same signature, and an
`error` note that records it (with its remedy) is found again by the hooks.

Which line: the last line of a Python traceback (`KeyError: 'price'`), else the first line
that reads like an error (error, failed, cannot, denied, not found, ...), else the first line
that is not the agent's `Exit code N` banner. What is replaced: quoted or bare paths
(`<path>`), URLs (`<url>`), UUIDs and long hex runs (`<id>`), dates and times (`<time>`),
numbers (`<n>`); the rest is lowercased and its spaces collapsed. Names stay: a missing
module, a key, a command are what a remedy is about.
"""

from __future__ import annotations

import re

MAX_LENGTH = 160  # characters of a signature

_EXIT = re.compile(r"^\s*exit code \d+\s*$", re.IGNORECASE)
_TRACEBACK_END = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt|"
                            r"Failure|Fault))(?::\s?(.*))?$")
_ERRORISH = re.compile(r"\b(error|errors|failed|failure|fatal|cannot|can't|could not|"
                       r"couldn't|denied|refused|not found|no such|missing|invalid|"
                       r"unable|timed out|timeout|exception|panic|undefined|unknown)\b",
                       re.IGNORECASE)
_URL = re.compile(r"""\b[a-z][a-z0-9+.-]*://[^\s'"`]+""", re.IGNORECASE)
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
                   re.IGNORECASE)
_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z?)?\b|"
                   r"\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b")
_HEX = re.compile(r"\b(?:0x[0-9a-f]+|(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,})\b",
                  re.IGNORECASE)
# A path: something with a separator (./a, a/b, /a, C:\a, ~/a), quoted or bare.
_PATH = re.compile(r"""(['"`]?)(?:[A-Za-z]:\\|~?/|\.{1,2}/|[\w.-]+[/\\])[^\s'"`:,;()]*\1""")
_NUMBER = re.compile(r"(?<![A-Za-z_])\d+(?:\.\d+)*(?![A-Za-z_])")
_SPACES = re.compile(r"\s+")


def key_line(text: str) -> str:
    """The line of `text` that says what went wrong."""
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line and not _EXIT.match(line)]
    if not lines:
        return ""
    if any(line.startswith("Traceback (most recent call last)") for line in lines):
        for line in reversed(lines):
            if _TRACEBACK_END.match(line):
                return line
    for line in lines:
        if _ERRORISH.search(line):
            return line
    return lines[0]


def signature(text: str) -> str:
    """The signature of an error text ("" for a text with nothing in it)."""
    line = key_line(text)
    line = _URL.sub("<url>", line)
    line = _UUID.sub("<id>", line)
    line = _TIME.sub("<time>", line)
    line = _PATH.sub("<path>", line)
    line = _HEX.sub("<id>", line)
    line = _NUMBER.sub("<n>", line)
    return _SPACES.sub(" ", line).strip().lower()[:MAX_LENGTH]


def command_key(command: str) -> str:
    """A shell command as two tries of the same approach compare: its words, spaces collapsed
    (a different path or number is a different command: `pytest tests/a.py` and `pytest
    tests/b.py` are two approaches)."""
    return _SPACES.sub(" ", command).strip()[:1000]
