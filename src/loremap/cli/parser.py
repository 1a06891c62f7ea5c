"""The argument parser of every command, kept apart from the commands' code (loaded lazily)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import NoReturn

from loremap import __version__

NOTE_TYPES = ("decision", "bug", "gotcha", "concept", "procedure", "error", "episode",
              "preference")
STATUSES = ("active", "superseded", "archived", "quarantined")

COMMANDS: dict[str, str] = {
    "init": "create .loremap/ in this repository and build the index",
    "index": "update the code map (files, imports, ranks, co-change) and the map pages",
    "map": "print the map of the repository, or of one module",
    "remember": "write a note (decision, bug, gotcha, ...) and index it",
    "show": "print one note with its links, or what the map knows of a file",
    "list": "list notes, newest first",
    "search": "search the notes (BM25)",
    "forget": "archive a note, or delete it with --purge",
    "reindex": "drop the index and rebuild it from the notes",
    "doctor": "check the vault and the index; --fix repairs what it can",
}


class _Parser(argparse.ArgumentParser):
    """argparse with loremap's error convention: one line on stderr (exit 2 for bad usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"loremap: error: {message} (see `{self.prog} --help`)\n")


def _json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def _remember(p: argparse.ArgumentParser) -> None:
    p.add_argument("--type", "-t", required=True, choices=NOTE_TYPES, metavar="TYPE",
                   help=f"kind of note: {', '.join(NOTE_TYPES)}")
    p.add_argument("--title", required=True, help="one line; the note id is built from it")
    body = p.add_mutually_exclusive_group()
    body.add_argument("-m", "--message", help="the note body (else --body-file, else stdin)")
    body.add_argument("--body-file", metavar="PATH", help="read the body from a file ('-': stdin)")
    p.add_argument("--file", "-f", dest="files", action="append", default=[], metavar="PATH",
                   help="a repository file the note is about (repeatable)")
    p.add_argument("--link", "-l", dest="links", action="append", default=[],
                   metavar="REL:TARGET",
                   help="a typed link, e.g. about:concept-authentication (repeatable)")
    p.add_argument("--supersedes", metavar="ID", help="the note this one replaces")
    p.add_argument("--tag", dest="tags", action="append", default=[], help="a tag (repeatable)")
    p.add_argument("--source", choices=("human", "agent", "import", "auto"), default="human",
                   help="who wrote it (default: human)")
    p.add_argument("--personal", action="store_true",
                   help="write to the personal vault (all your projects) instead of the project")
    p.add_argument("--quarantine", action="store_true",
                   help="if the text holds a secret, store it redacted as quarantined")


def _filters(p: argparse.ArgumentParser, status_help: str) -> None:
    p.add_argument("--type", "-t", dest="types", action="append", default=[],
                   choices=NOTE_TYPES, metavar="TYPE", help="only this type (repeatable)")
    p.add_argument("--status", "-s", dest="statuses", action="append", default=[],
                   choices=STATUSES, metavar="STATUS", help=status_help)


def _search(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", nargs="+",
                   help="words, identifiers, paths; any text is safe (no quotes needed)")
    _filters(p, "search this status (repeatable; default: active)")
    p.add_argument("--kind", "-k", dest="kinds", action="append", default=[],
                   choices=("note", "file", "module"),
                   help="what to search: notes (default), code files, modules (repeatable)")
    p.add_argument("--limit", "-n", type=int, default=None, help="number of results")


def _forget(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", help="note id")
    p.add_argument("--reason", help="why it is forgotten (kept in the note)")
    p.add_argument("--purge", action="store_true",
                   help="delete the file and every index row of it")


_ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], object]] = {
    "init": lambda p: None,
    "index": lambda p: None,
    "map": lambda p: p.add_argument("module", nargs="?", default=None,
                                    help="a folder of the repository (default: the whole map)"),
    "remember": _remember,
    "show": lambda p: p.add_argument("id", metavar="ID|PATH", help="a note id or a file path"),
    "list": lambda p: _filters(p, "only this status (repeatable; default: all)"),
    "search": _search,
    "forget": _forget,
    "reindex": lambda p: None,
    "doctor": lambda p: p.add_argument("--fix", action="store_true",
                                       help="repair what can be repaired"),
}


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given `argv`, only the command it names gets its arguments.

    Every command is listed (for `--help` and "invalid choice"), but building the options of
    all of them costs more than running a search on a small vault, so only the one in use is.
    """
    parser = _Parser(
        prog="loremap",
        description="Project memory for AI coding agents: the map of the code and the lore of "
                    "the project, as markdown in the repository.",
    )
    parser.add_argument("--version", action="version", version=f"loremap {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    wanted = next((a for a in argv or () if not a.startswith("-")), None)
    for name, text in COMMANDS.items():
        if argv is None or name == wanted:
            command = sub.add_parser(name, help=text, description=text)
            _ARGUMENTS[name](command)
            _json(command)
        else:
            sub.add_parser(name, help=text)
    return parser
