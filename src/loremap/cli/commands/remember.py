"""`loremap remember`: write one note (body from -m, --body-file or stdin) and index it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from loremap.app import App
from loremap.cli.output import emit_json, lines, warn
from loremap.errors import InvalidInput
from loremap.memory.service import Draft
from loremap.model import NoteType


def _body(args: argparse.Namespace) -> str:
    if args.message is not None:
        return str(args.message)
    if args.body_file == "-" or (args.body_file is None and not sys.stdin.isatty()):
        data = sys.stdin.buffer.read()
        source = "stdin"
    elif args.body_file is not None:
        try:
            data = Path(args.body_file).read_bytes()
        except OSError as exc:
            raise InvalidInput(f"cannot read --body-file {args.body_file}: {exc.strerror}") \
                from None
        source = args.body_file
    else:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"the body from {source} is not UTF-8 (byte 0x{data[exc.start]:02x} "
                           f"at offset {exc.start})") from None


def _links(raw: list[str]) -> list[tuple[str, str]]:
    out = []
    for item in raw:
        rel, sep, target = item.partition(":")
        if not sep or not rel.strip() or not target.strip():
            raise InvalidInput(f"--link {item!r}: write REL:TARGET, e.g. about:concept-auth")
        out.append((rel.strip(), target.strip()))
    return out


def run(args: argparse.Namespace) -> int:
    draft = Draft(type=args.type, title=args.title, body=_body(args), files=args.files,
                  links=_links(args.links), supersedes=args.supersedes, tags=args.tags,
                  source=args.source)
    from loremap.search.similar import similar_notes, similar_warning

    app = App.open(require_project=not args.personal)
    try:
        app.memory.reconcile()
        similar = [] if draft.supersedes else similar_notes(
            app.store, app.memory.analyzer, NoteType.parse(draft.type).value, draft.title)
        outcome = app.memory.remember(draft, personal=args.personal, quarantine=args.quarantine)
        outcome.warnings[:0] = app.notices
        outcome.warnings += [similar_warning(other, title) for other, title in similar]
    finally:
        app.close()
    if args.json:
        emit_json({"id": outcome.ids[0], "path": outcome.paths[0], "warnings": outcome.warnings})
        return 0
    warn(outcome.warnings)
    lines([f"remembered {outcome.ids[0]} -> {outcome.paths[0]}"])
    return 0
