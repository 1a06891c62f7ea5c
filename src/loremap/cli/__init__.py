"""`loremap`: the command line. Parses arguments, runs one command, converts errors once.

Subcommand modules load only when their command runs, so `--help` and `--version` stay fast.
Exit codes: 0 success, 1 a `UserError` (one line on stderr), 2 bad usage (argparse),
3 an unexpected error (the traceback goes to the log file named on stderr), 130 Ctrl-C.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `loremap` console script."""
    from loremap.cli.parser import build_parser

    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(arguments).parse_args(arguments)
    if not getattr(args, "command", None):
        build_parser().print_help()
        return 0
    from loremap.errors import UserError

    try:
        module = importlib.import_module(f"loremap.cli.commands.{args.command.replace('-', '_')}")
        code: int = module.run(args)
        return code
    except UserError as exc:
        print(f"loremap: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("loremap: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Trigger: the reader went away (`loremap map | head`). Why: not an error of ours.
        # Outcome: silence the rest of the output, as other command-line tools do.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # noqa: BLE001 - the one place that turns bugs into exit 3
        from loremap.logs import log_exception

        where = log_exception(exc)
        print(f"loremap: internal error: {type(exc).__name__}: {exc} (details in {where})",
              file=sys.stderr)
        return 3
