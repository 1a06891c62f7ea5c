"""`loremap completions SHELL`: the completion script of the whole command line, for bash, zsh,
tcsh, fish or PowerShell.

shtab writes it from the parser itself (every command with its options and choices), so the
script cannot drift from the commands; the note types, statuses and kinds complete from the
same vocabularies the parser uses. Install: `loremap completions bash >
~/.local/share/bash-completion/completions/loremap` (docs/cli.md has the other shells).
"""

from __future__ import annotations

import argparse

from loremap.cli.output import emit_json
from loremap.cli.parser import build_parser


def run(args: argparse.Namespace) -> int:
    import shtab

    from loremap.cli import context

    script = shtab.complete(build_parser(), shell=args.shell)
    if args.json:
        emit_json({"shell": args.shell, "script": script})
    else:
        context.out().write(script if script.endswith("\n") else script + "\n")
    return 0
