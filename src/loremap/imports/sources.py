"""Where each importer reads from: `read_source(tool, ...)` is the reader of a tool over its
source (a folder, or for cuba-memorys a sync bundle or a database URL), as an iterable of the
`Item`, `Skipped` and `Deleted` records `imports/run.py` writes. The cuba-memorys reader
(`imports/cuba.py`) is called when this installation has it; without it the command says so
in one line."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from loremap.errors import InvalidInput

if TYPE_CHECKING:
    from loremap.imports.run import Entry


TOOLS = ("rubi", "basic-memory", "cuba")


def read_source(tool: str, path: str | None = None, bundle: str | None = None,
                database: str | None = None) -> Iterable[Entry]:
    """The reader of `tool` over its source: a folder (`path`), or for cuba-memorys a sync
    bundle or a database URL."""
    from pathlib import Path

    if tool != "cuba" and (bundle is not None or database is not None):
        raise InvalidInput(f"--bundle and --database are cuba's; import {tool} reads a folder: "
                           f"loremap import {tool} PATH")
    if tool == "cuba" and path is not None:
        raise InvalidInput("import cuba reads --bundle DIR or --database URL, not a PATH")
    if tool == "rubi":
        from loremap.imports.rubi import read_vault

        return read_vault(Path(_given(path, "rubi PATH")))
    if tool == "basic-memory":
        from loremap.imports.basic_memory import read_project

        return read_project(Path(_given(path, "basic-memory PATH")))
    if tool == "cuba":
        return _cuba(bundle, database)
    raise InvalidInput(f"unknown importer {tool!r}: use one of {', '.join(TOOLS)}")


def _given(path: str | None, usage: str) -> str:
    if not path:
        raise InvalidInput(f"import {usage.split()[0]} needs a folder: loremap import {usage}")
    return path


def _cuba(bundle: str | None, database: str | None) -> Iterable[Entry]:
    if (bundle is None) == (database is None):
        raise InvalidInput("import cuba needs one source: --bundle DIR or --database URL")
    import importlib

    try:
        cuba = importlib.import_module("loremap.imports.cuba")
    except ModuleNotFoundError as exc:
        if exc.name != "loremap.imports.cuba":
            raise
        raise InvalidInput("the cuba-memorys reader is unavailable in this version of "
                           "loremap (nothing was imported)") from None
    from pathlib import Path

    entries: Iterable[Entry] = (cuba.read_bundle(Path(bundle)) if bundle is not None
                                else cuba.read_database(database))
    return entries
