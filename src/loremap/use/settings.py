"""Writing a project setting into `.loremap/config.toml`, for the commands that set one
(`embed enable`, `calibrate`)."""

from __future__ import annotations

from pathlib import Path

from loremap.config import SETTINGS
from loremap.errors import InvalidInput


def write_setting(config_file: Path, name: str, value: str) -> None:
    """Set `name` (`section.key`) to `value` in `config_file`, keeping its comments and
    layout (tomlkit); written atomically. An environment variable that overrides it stays
    in force (`embed status` shows what is used)."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    from loremap.vault.fs import atomic_write

    if name not in {s.name for s in SETTINGS}:
        raise InvalidInput(f"unknown setting {name!r}")
    section, _, key = name.partition(".")
    text = config_file.read_text(encoding="utf-8") if config_file.is_file() else ""
    try:
        doc = tomlkit.parse(text)
    except ParseError as exc:
        raise InvalidInput(f"{config_file}: not valid TOML ({exc})") from None
    table = doc.get(section)
    if table is None:
        table = tomlkit.table()
        doc[section] = table
    if not isinstance(table, dict):
        raise InvalidInput(f"{config_file}: [{section}] is not a table")
    table[key] = value
    atomic_write(config_file, tomlkit.dumps(doc).encode("utf-8"))
