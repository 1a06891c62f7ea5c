"""One markdown file of another tool's folder, read the way every folder importer reads it
(Rubi, basic-memory): never through a symlink, never past `MAX_FILE_BYTES`, its YAML
frontmatter parsed as foreign data (`vault.frontmatter.foreign_frontmatter`), and anything
wrong said as a `Skipped` in one line naming the file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from loremap.errors import MalformedNote, UnsafePath
from loremap.imports.items import Skipped

MAX_FILE_BYTES = 1024 * 1024  # a source file larger than this is not read


def read_markdown(file: Path, where: str) -> tuple[dict[str, Any], str] | Skipped:
    """The frontmatter and the rest of `file` (shown as `where`), or why it was not read."""
    from loremap.vault.frontmatter import foreign_frontmatter
    from loremap.vault.fs import read_nofollow

    if file.is_symlink():
        return Skipped(where, f"refused: a symlink to {os.readlink(file)}; loremap does not "
                       "follow links in the source folder")
    size = file.lstat().st_size
    if size > MAX_FILE_BYTES:
        return Skipped(where, f"the file is {size:,} bytes, over the importer's "
                       f"{MAX_FILE_BYTES:,}-byte limit: not read")
    try:
        text = read_nofollow(file)[0].decode("utf-8")
    except UnsafePath as exc:
        return Skipped(where, str(exc))
    except (OSError, UnicodeDecodeError) as exc:
        return Skipped(where, f"unreadable: {exc}")
    if not text.lstrip("\ufeff").startswith("---"):
        return {}, text
    try:
        return foreign_frontmatter(text, where)
    except MalformedNote as exc:
        return Skipped(where, malformed(exc, where))


def malformed(exc: MalformedNote, where: str) -> str:
    """A YAML error as one line without the file name the report already gives
    ("line 2: malformed frontmatter: ...")."""
    text = str(exc).removeprefix(f"{where}:").strip()
    number, sep, rest = text.partition(": ")
    return f"line {number}: {rest}" if sep and number.isdigit() else text
