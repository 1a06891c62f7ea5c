"""`loremap`: the command line. Parses arguments, runs one command, converts errors once.

Subcommand modules load only when their command runs, so `--help` and `--version` stay fast.
Exit codes: 0 success, 1 a `UserError` (one line on stderr), 2 bad usage (argparse),
3 an unexpected error (the traceback goes to the log file named on stderr), 130 Ctrl-C.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

# Commands that only read: a running daemon may run them for this process (warm imports and
# Apps), with this process's folder and environment, printing into its answer.
READS = frozenset({"search", "map", "show", "list"})


# Commands whose module cannot bear their name (`import` is a Python keyword).
_MODULES = {"import": "imports"}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `loremap` console script."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if argv is None and arguments and arguments[0] in READS:
        handed = _through_daemon(arguments)
        if handed is not None:
            return handed
    return run(arguments)


def run(arguments: list[str]) -> int:
    """Parse and run one command (in this process, or on a daemon thread for a caller)."""
    from loremap.cli import context
    from loremap.cli.parser import build_parser

    try:
        args = build_parser(arguments).parse_args(arguments)
    except SystemExit as exc:  # usage errors, --help, --version: argparse has printed them
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    if not getattr(args, "command", None):
        build_parser().print_help(context.out())
        return 0
    from loremap.audit import Actor, acting_as
    from loremap.errors import UserError

    try:
        name = _MODULES.get(args.command, args.command.replace("-", "_"))
        module = importlib.import_module(f"loremap.cli.commands.{name}")
        with context.quieted(bool(args.quiet)), acting_as(Actor("human")):  # in the audit
            code: int = module.run(args)
        return code
    except UserError as exc:
        _end_progress()
        print(f"loremap: error: {exc}", file=context.err())
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
        from loremap.use.faults import explain

        _end_progress()
        fault = explain(exc, context.cwd(), context.environ())
        if fault is not None:  # a full disk, a damaged index: not a bug of ours
            print(f"loremap: error: {fault}", file=context.err())
            return 1
        from loremap.logs import log_exception

        where = log_exception(exc)
        print(f"loremap: internal error: {type(exc).__name__}: {exc} (details in {where})",
              file=context.err())
        return 3


def _end_progress() -> None:
    """A progress bar the failed command left half drawn ends its line first (nothing to do,
    and nothing imported, when no bar was drawn)."""
    drawing = sys.modules.get("loremap.codemap.index")
    if drawing is not None:
        drawing.end_progress()


def _through_daemon(arguments: list[str]) -> int | None:
    """A read command run by the daemon for this process: its exit code once its output is
    printed, or None (no daemon answered, or the command asks for help: run it here)."""
    import os

    from loremap import wire

    if not wire.enabled(os.environ) or any(a in ("-h", "--help") for a in arguments):
        return None
    try:
        answer = wire.ask({"op": "cli", "argv": arguments, "cwd": os.getcwd(),
                           "env": wire.request_environ(os.environ)}, os.environ,
                          answer_s=120.0)
    except wire.Refused:
        return None
    if answer is None:
        wire.spawn(os.environ)
        return None
    if not answer.get("ok"):
        return None  # a daemon runs but cannot serve this command (`wire.ask`)
    try:
        sys.stdout.write(str(answer.get("stdout", "")))
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.stderr.write(str(answer.get("stderr", "")))
    return int(answer.get("code", 0))
