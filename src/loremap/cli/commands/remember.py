"""`loremap remember`: write one note (body from -m, --body-file or stdin) and index it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from loremap.app import App
from loremap.cli.output import emit_json, lines, warn
from loremap.errors import InvalidInput
from loremap.memory.drafts import Draft
from loremap.use.fresh import ALWAYS
from loremap.use.notes import remember


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
    body = _body(args)
    if not body.strip():
        raise InvalidInput("the note has no body: give what was learned with -m TEXT, "
                           "--body-file PATH or on stdin")
    draft = Draft(type=args.type, title=args.title, body=body, files=args.files,
                  links=_links(args.links), supersedes=args.supersedes, tags=args.tags,
                  source=args.source, cwd=Path.cwd(), error=args.error or "",
                  remedy=args.remedy, command=args.failed_command)
    with App.open(require_project=not args.personal) as app:
        done = remember(app, [draft], ALWAYS, personal=args.personal,
                        quarantine=args.quarantine, label=None)
    note = done.notes[0]
    if args.json:
        emit_json({"id": note.id, "path": note.path, "superseded": note.superseded,
                   "warnings": done.warnings})
        return 0
    warn(done.warnings)
    lines([f"remembered {note.id} -> {note.path}"])
    if note.superseded:
        lines([f"superseded {note.superseded}: its file now says superseded_by {note.id}"])
    return 0
