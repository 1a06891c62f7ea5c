"""A file's one-line summary, taken from the comment or docstring at its top.

Both parsers (tree-sitter and the regex fallback) describe a file by the first paragraph of its
leading comment block, skipping licence headers, editor modelines, encoding cookies, build tags
and linter pragmas; the Python module docstring goes through the same paragraph rule. It is
plain text handling, kept apart so `parse` and `fallback` share it without importing each other
for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

_DOCSTRING_MAX = 300

_LINE_MARKERS = {
    "python": ("#",), "ruby": ("#",), "shell": ("#",), "css": (),
}
_DEFAULT_LINE_MARKERS = ("//",)
_BLOCK_LANGUAGES_WITHOUT = frozenset({"python", "ruby", "shell"})
_DIRECTIVE = re.compile(  # editor modelines, encoding cookies, build tags, linter pragmas
    r"-\*-.*-\*-|^(?:vim?|ex):|^(?:frozen_string_literal|encoding|coding|warn_indent|"
    r"shareable_constant_value|typed):|^go:\w|^\+build\b|^(?:eslint|jshint|jslint)\b|"
    r"^prettier-ignore|^@ts-|^@flow\b|^#(?:end)?region\b|^<reference\b|"
    r"^(?:pylint|mypy|type|flake8|isort|fmt|ruff|pyright)\s*:|^noqa\b|^shellcheck\s+\w+=")
LICENSE_HEADER = re.compile(r"^(?:copyright|spdx|licen[cs]e|\(c\)|©|all rights reserved)",
                            re.IGNORECASE)
_HEAD_BYTES = 16384


def comment_docstring(language: str, data: bytes) -> str:
    """The first paragraph of the first leading comment block that is not a licence header."""
    for block in _leading_comment_blocks(language, data[:_HEAD_BYTES].decode(
            "utf-8", errors="replace")):
        paragraph = first_paragraph(block)
        if paragraph and not LICENSE_HEADER.match(paragraph):
            return paragraph
    return ""


def _leading_comment_blocks(language: str, text: str) -> list[list[str]]:
    line_markers = _LINE_MARKERS.get(language, _DEFAULT_LINE_MARKERS)
    allow_blocks = language not in _BLOCK_LANGUAGES_WITHOUT
    blocks: list[list[str]] = []
    current: list[str] = []
    lines = iter(text.splitlines())
    for index, raw in enumerate(lines):
        line = raw.strip()
        if index == 0 and (line.startswith("#!") or line.startswith("<?php")):
            line = line.removeprefix("<?php").strip() if line.startswith("<?php") else ""
        if not line:
            if current:
                blocks.append(current)
                current = []
            continue
        marker = next((m for m in line_markers if line.startswith(m)), None)
        if marker is not None:
            body = line[len(marker):].lstrip("/!#").strip()
            if not _DIRECTIVE.search(body):
                current.append(body)
            continue
        if allow_blocks and line.startswith("/*"):
            if current:
                blocks.append(current)
            current = []
            blocks.append(_block_comment(line, lines))
            continue
        break
    if current:
        blocks.append(current)
    return blocks


def _block_comment(first: str, rest: Iterator[str]) -> list[str]:
    body: list[str] = []
    line = first[2:]
    while True:
        end = line.find("*/")
        piece = line if end < 0 else line[:end]
        body.append(piece.strip().lstrip("*!").strip())
        if end >= 0:
            return body
        following = next(rest, None)
        if following is None:
            return body
        line = following


def first_paragraph(lines: Iterable[str]) -> str:
    """The first run of lines with words in them, joined on one line and capped in length.

    A markdown heading standing alone (`//! # Serde JSON` atop a crate) is a title, not a
    summary: it is skipped when prose follows.
    """
    words: list[str] = []
    heading = ""
    for line in lines:
        stripped = line.strip()
        if not any(char.isalnum() for char in stripped):
            if words:
                break
            continue
        if not words and stripped.startswith("#") and stripped.lstrip("#").startswith(" "):
            heading = heading or stripped.lstrip("#").strip()
            continue
        words.extend(stripped.split())
    if not words and heading:
        words = heading.split()
    text = " ".join(words)
    if len(text) > _DOCSTRING_MAX:
        text = text[:_DOCSTRING_MAX - 1].rstrip() + "…"
    return text
