"""Writing a project setting into `.loremap/config.toml`, for the commands that set one
(`embed enable`, `calibrate`)."""

from __future__ import annotations

from pathlib import Path

from loremap.config import SETTINGS
from loremap.errors import InvalidInput


def write_setting(config_file: Path, name: str, value: str) -> None:
    """Set `name` (`section.key`) to `value` in `config_file` (see `write_settings`)."""
    write_settings(config_file, {name: value})


def write_settings(config_file: Path, values: dict[str, str]) -> None:
    """Set each `section.key` of `values` in `config_file` in one atomic write, keeping its
    comments and layout (tomlkit): all of them or, on an error, none. An environment
    variable that overrides one stays in force (`embed status` shows what is used)."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    from loremap.vault.fs import atomic_write

    known = {s.name for s in SETTINGS}
    for name in values:
        if name not in known:
            raise InvalidInput(f"unknown setting {name!r}")
    text = config_file.read_text(encoding="utf-8") if config_file.is_file() else ""
    try:
        doc = tomlkit.parse(text)
    except ParseError as exc:
        raise InvalidInput(f"{config_file}: not valid TOML ({exc})") from None
    for name, value in values.items():
        section, _, key = name.partition(".")
        table = doc.get(section)
        if table is None:
            table = tomlkit.table()
            doc[section] = table
        if not isinstance(table, dict):
            raise InvalidInput(f"{config_file}: [{section}] is not a table")
        table[key] = value
    atomic_write(config_file, tomlkit.dumps(doc).encode("utf-8"))
