"""The argument parser of every command, kept apart from the commands' code (loaded lazily)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

from loremap import __version__

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

# The model's vocabularies (NoteType, Status, Source, NodeKind), written out so that building
# the parser imports nothing; tests/test_vocabulary.py ties each to its enum.
NOTE_TYPES = ("decision", "bug", "gotcha", "concept", "procedure", "error", "episode",
              "preference")
STATUSES = ("active", "superseded", "archived", "quarantined")
SOURCES = ("agent", "human", "import", "auto")
KINDS = ("note", "file", "module")
OUTCOMES = ("success", "failure")
ROLES = ("read-only", "read-write")  # loremap.actor.ROLES

COMMANDS: dict[str, str] = {
    "init": "create .loremap/ in this repository and build the index",
    "index": "update the code map (files, imports, ranks, co-change) and the map pages",
    "map": "print the map of the repository, or of one module",
    "remember": "write a note (decision, bug, gotcha, ...) and index it",
    "show": "print one note with its links, or what the map knows of a file",
    "list": "list notes, newest first",
    "search": "recall notes and code for a question, within a token budget",
    "eval": "score the search on a dataset of questions with known answers",
    "forget": "archive a note, delete it with --purge, or erase every trace with --erase",
    "outcome": "count whether following a procedure worked (success) or not (failure)",
    "errors": "the tool-call failures logged in this clone, how often, and what fixed them",
    "dedupe": "notes that say the same thing: copies merged with --apply, near ones listed",
    "calibrate": "fit when recall answers \"nothing relevant\" to questions with known answers",
    "verify": "what the memory says about a claim: its evidence, and a judge's verdict",
    "judge": "the local model that judges verify's claims: enable --model NAME|PATH, status, "
             "disable",
    "handoff": "save, show, list or close session handoffs (what a session leaves the next)",
    "reindex": "drop the index and rebuild it from the notes",
    "doctor": "check the vault, the index, the agents' wiring and the daemon; --fix repairs",
    "audit": "the tamper-evident record of every change to the notes: log, verify",
    "serve": "run the MCP server for agents (stdio; --http HOST:PORT for a shared daemon)",
    "dashboard": "see the memory in a browser: graph, search, health, timeline, tokens",
    "xray": "where an agent's tokens went, and what early compaction and trimming would save",
    "hooks": "install or remove loremap's hooks and MCP server in Claude Code's settings",
    "compaction": "show or set when Claude Code compacts a session (with a backup; --undo)",
    "slim": "propose moving long, rarely relevant sections of CLAUDE.md / AGENTS.md into notes",
    "connect": "register loremap with another agent (Codex, Gemini CLI, Cursor, ...); --list",
    "db": "the shared PostgreSQL memory: migrate, status, secure, local start|stop|status",
    "sync": "reconcile this vault with the shared database: push, pull, status, versions",
    "embed": "vectors for recall by meaning: enable [--model NAME], status, disable",
    "reembed": "embed every note and file again with the configured model (--stale-only)",
    "daemon": "the warm per-user process hooks and MCP sessions use: start, stop, status, units",
    "completions": "print the shell completion script (bash, zsh, tcsh, fish, powershell)",
    "bundle": "build loremap's Claude Desktop extension (.mcpb) from this installation",
    "import": "import notes from Rubi, basic-memory or cuba-memorys (--dry-run: show what)",
}

SHELLS = ("bash", "zsh", "tcsh", "fish", "powershell")


class _Parser(argparse.ArgumentParser):
    """argparse with loremap's error convention: one line on stderr (exit 2 for bad usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"loremap: error: {message} (see `{self.prog} --help`)\n")

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        """argparse's output on the command's own streams (`context`), not the process's."""
        from loremap.cli import context

        if message:
            stream = context.out() if file is None or file is sys.stdout else context.err()
            stream.write(message)

    def _check_value(self, action: argparse.Action, value: object) -> None:
        # Trigger: a value outside an argument's choices (`loremap serach`, `sync puhs`).
        # Why: the list of every choice buries the one the user meant.
        # Outcome: "invalid choice: 'serach'; did you mean 'search'?", exit 2 as before.
        choices = None if action.choices is None else [str(c) for c in action.choices]
        if choices is not None and str(value) not in choices:
            import difflib

            close = difflib.get_close_matches(str(value), choices, n=1)
            if close:
                raise argparse.ArgumentError(
                    action, f"invalid choice: {value!r}; did you mean {close[0]!r}?")
        super()._check_value(action, value)


def _json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    _quiet(p, argparse.SUPPRESS)


def _quiet(p: argparse.ArgumentParser, default: object) -> None:
    # SUPPRESS in the commands: `loremap -q index` and `loremap index -q` both work.
    p.add_argument("-q", "--quiet", action="store_true", default=default,
                   help="print only the result and errors: no progress, warnings or notices")


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
    p.add_argument("--source", choices=SOURCES, default="human",
                   help="who wrote it (default: human)")
    p.add_argument("--personal", action="store_true",
                   help="write to the personal vault (all your projects) instead of the project")
    p.add_argument("--quarantine", action="store_true",
                   help="if the text holds a secret, store it redacted as quarantined")
    p.add_argument("--error", metavar="TEXT",
                   help="an error note: the error text (its signature is kept, so the hooks "
                        "recognise it when it comes back)")
    p.add_argument("--remedy", metavar="ID",
                   help="an error note: the note (procedure, bug, decision) that fixed it")
    p.add_argument("--command", dest="failed_command", metavar="CMD",  # not `args.command`
                   help="an error note: the command that failed (warned about before it runs "
                        "again)")


def _filters(p: argparse.ArgumentParser, status_help: str) -> None:
    p.add_argument("--type", "-t", dest="types", action="append", default=[],
                   choices=NOTE_TYPES, metavar="TYPE", help="only this type (repeatable)")
    p.add_argument("--status", "-s", dest="statuses", action="append", default=[],
                   choices=STATUSES, metavar="STATUS", help=status_help)


def _date(value: str) -> str:
    import datetime as dt

    try:
        return dt.date.fromisoformat(value).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date (YYYY-MM-DD)") from None


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number >= 0")
    return number


def _scope(p: argparse.ArgumentParser) -> None:
    """What a search may return (shared by search and eval)."""
    _filters(p, "only this status (repeatable; default: active, plus superseded with "
                "--history or --as-of)")
    p.add_argument("--kind", "-k", dest="kinds", action="append", default=[],
                   choices=KINDS,
                   help="only notes, code files or modules (repeatable; default: all)")
    p.add_argument("--file", "-f", dest="paths", action="append", default=[], metavar="PATH",
                   help="only code under this path and notes about it (repeatable)")
    p.add_argument("--tuning", metavar="KEY=VALUE,...",
                   help="search engine settings for this run (see docs/search.md)")


def _search(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", nargs="+",
                   help="a question, words, identifiers, paths; any text is safe")
    p.add_argument("--terms", nargs="+", action="extend", default=[], metavar="TERM",
                   help="more words to search with (synonyms, names): they weigh like the query")
    _scope(p)
    p.add_argument("--as-of", type=_date, metavar="DATE",
                   help="what was valid on that day (YYYY-MM-DD), superseded notes included")
    p.add_argument("--history", action="store_true",
                   help="include superseded notes (marked as such)")
    p.add_argument("--budget", "-b", type=_positive, default=None, metavar="TOKENS",
                   help="token budget of the answer (default: search.budget; 0: no limit)")
    p.add_argument("--limit", "-n", type=_positive, default=None, help="items at most")


def _eval(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", metavar="FILE.jsonl",
                   help='one {"query": ..., "terms": [...], "gold": [ids or paths]} per line')
    _scope(p)
    p.add_argument("--compare", metavar="KEY=VALUE,...",
                   help="a second configuration to score on the same queries (e.g. ppr=0)")


def _forget(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", help="note id")
    p.add_argument("--reason", help="why it is forgotten (kept in the note)")
    p.add_argument("--purge", action="store_true",
                   help="delete the file and every index row of it")
    p.add_argument("--erase", action="store_true",
                   help="erase it completely (needs --reason; implies --purge): file, index "
                        "rows, every shared version, quotes in handoffs, sessions and logs, "
                        "audit titles; other clones erase it at their next sync")


def _calibrate(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", metavar="FILE.jsonl",
                   help='questions with the ids that answer them ({"query": ..., "gold": '
                        '[ids]}) and questions the memory cannot answer ("gold": []); '
                        "default: the questions the agents asked here and what they opened "
                        "next (.loremap/cache/queries.jsonl)")
    p.add_argument("--apply", action="store_true",
                   help="write the fitted threshold to .loremap/config.toml")


def _outcome(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", help="the procedure's note id")
    p.add_argument("result", choices=OUTCOMES, help="what following it did")
    p.add_argument("--note", "-m", metavar="TEXT",
                   help="what happened, one line (added to the note's Outcomes section)")


def _handoff(p: argparse.ArgumentParser) -> None:
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    def action(name: str, text: str) -> argparse.ArgumentParser:
        sub = actions.add_parser(name, help=text, description=text)
        # SUPPRESS: `loremap handoff --json show` and `... show --json` both work.
        sub.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                         help="print machine-readable JSON")
        return sub

    save = action("save", "save a handoff (and close the open one)")
    save.add_argument("--goal", required=True, help="what the session set out to do")
    save.add_argument("--state", default="", help="where it got to: done, half-done, broken")
    save.add_argument("--decision", dest="decisions", action="append", default=[],
                      metavar="TEXT", help="a decision taken, and why (repeatable)")
    save.add_argument("--next", dest="next_steps", action="append", default=[], metavar="TEXT",
                      help="a next step (repeatable)")
    save.add_argument("--question", dest="questions", action="append", default=[],
                      metavar="TEXT", help="an open question (repeatable)")
    save.add_argument("--file", "-f", dest="files", action="append", default=[],
                      metavar="PATH", help="a file the next session should look at (repeatable)")
    save.add_argument("--session", metavar="ID", help="the agent's session id")
    save.add_argument("--source", choices=("human", "agent", "auto"), default="human",
                      help="who wrote it (default: human)")
    for name, text in (("show", "print a handoff (default: the latest open one)"),
                       ("close", "mark a handoff closed (default: the latest open one)")):
        action(name, text).add_argument("id", nargs="?", default=None, metavar="ID",
                                         help="a handoff id from `loremap handoff list`")
    action("list", "list handoffs, newest first").add_argument(
        "--limit", "-n", type=_positive, default=None, help="at most N (0: all)")


def _audit(p: argparse.ArgumentParser) -> None:
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    log = actions.add_parser("log", help="the records, oldest first",
                             description="the records of the audit chain, oldest first")
    log.add_argument("--note", metavar="ID", help="only the records of this note")
    log.add_argument("--since", type=_date, metavar="DATE",
                     help="only the records from this day on (YYYY-MM-DD, UTC)")
    check = actions.add_parser("verify", help="walk the chain and name its first broken link",
                               description="walk the audit chain and name its first broken "
                                           "link; exit 1 when it is broken")
    check.add_argument("--anchor", metavar="SEQ:HASH",
                       help="also check that the chain still holds this record (a head that "
                            "`verify` printed earlier, kept elsewhere)")
    for sub in (log, check):
        sub.add_argument("--personal", action="store_true",
                         help="the personal vault's chain instead of the project's")
        # SUPPRESS: `loremap audit --json log` and `... log --json` both work.
        sub.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                         help="print machine-readable JSON")


def _whole(least: int, hint: str = "") -> Callable[[str], int]:
    """An argument type: a whole number of at least `least` (`hint` says what to do instead)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be {least} or more{hint}")
        return value

    return parse


_days = _whole(1, " (leave --days out for all days)")


class _Given(argparse.Action):
    """Stores the value and records that it was given (`days_given`): `xray --days N trim`
    must not be taken for `xray trim --days N`."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def _xray(p: argparse.ArgumentParser) -> None:
    p.add_argument("--days", type=_count, default=30, metavar="N", action=_Given,
                   help="the last N days (default 30; 0: all)")
    p.add_argument("--project", metavar="PATH", help="only the sessions run in this folder")
    p.add_argument("--html", metavar="FILE", help="also write the report as one HTML page")
    p.add_argument("--prices", metavar="FILE",
                   help="dollars per model from this TOML file instead of the shipped table")
    actions = p.add_subparsers(dest="action", metavar="trim")
    trim = actions.add_parser("trim", help="deny never-used MCP servers and optional built-in "
                                           "tools in a project's .claude/settings.local.json")
    trim.add_argument("trim_project", metavar="PROJECT", help="the project folder")
    what = trim.add_mutually_exclusive_group()
    what.add_argument("--apply", action="store_true", help="write the change (with a backup)")
    what.add_argument("--undo", action="store_true", help="remove what --apply added")
    trim.add_argument("--days", dest="trim_days", type=_days, default=None, metavar="N",
                      help="only the transcripts of the last N days count (default: all)")
    trim.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                      help="print machine-readable JSON")


def _claude_scope(p: argparse.ArgumentParser, user: str, project: str) -> None:
    """Which of Claude Code's settings files a command edits, and --dry-run."""
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--user", dest="scope", action="store_const", const="user", help=user)
    scope.add_argument("--project", dest="scope", action="store_const", const="project",
                       help=project)
    p.add_argument("--dry-run", action="store_true", help="print the change, write nothing")


def _hooks(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("install", "uninstall", "status"),
                   help="install, uninstall, or show what is installed")
    p.add_argument("agent", choices=("claude",), help="the agent (claude: Claude Code)")
    _claude_scope(p, "all your projects: ~/.claude/settings.json (the default)",
                  "this repository only: .claude/settings.json and .mcp.json")


def _compaction(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=("set", "show"), default="show",
                   help="set the window, or show it (the default)")
    p.add_argument("tokens", nargs="?", default=None, metavar="TOKENS",
                   help="Claude Code's autoCompactWindow: 100000-1000000 (150k, 1M) or auto")
    p.add_argument("--undo", action="store_true",
                   help="restore the value loremap replaced")
    _claude_scope(p, "~/.claude/settings.json (the default)",
                  "this repository's .claude/settings.local.json")


def _slim(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="the instruction file, e.g. CLAUDE.md or AGENTS.md")
    p.add_argument("--apply", action="store_true",
                   help="write the notes and the slimmer file (the old one is backed up)")
    p.add_argument("--min-tokens", type=_count, default=None, metavar="N",
                   help="only propose sections of at least N tokens (default 300)")


def _connect(p: argparse.ArgumentParser) -> None:
    p.add_argument("agent", nargs="?", default=None, metavar="AGENT",
                   help="codex, gemini, cursor, vscode, windsurf, cline, opencode, continue, "
                        "goose, zed or claude-desktop")
    p.add_argument("--list", action="store_true",
                   help="list the agents and whether loremap is connected to each")
    p.add_argument("--dry-run", action="store_true", help="print the changes, write nothing")
    p.add_argument("--undo", action="store_true", help="remove what connect added")


def _db(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("migrate", "status", "secure", "local"),
                   help="migrate: create or upgrade the schema; status: versions and projects; "
                        "secure: create the unprivileged role and row-level security; local: "
                        "a PostgreSQL server on this machine")
    p.add_argument("local_action", nargs="?", choices=("start", "stop", "status"), default=None,
                   metavar="start|stop|status", help="with `local`: start, stop or show it")
    p.add_argument("--role", default="loremap_app", metavar="NAME",
                   help="with `secure`: the role the runtime connects as (default loremap_app)")
    p.add_argument("--password-env", default=None, metavar="VAR",
                   help="with `secure`: set the role's password from this environment variable")


def _sync(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("push", "pull", "status", "versions"),
                   help="push: send this vault's changes; pull: fetch the others'; status: what "
                        "would move; versions: a note's previous versions")
    p.add_argument("id", nargs="?", default=None, metavar="ID",
                   help="with `versions`: the note id")
    p.add_argument("--dry-run", action="store_true", help="report what would move, change nothing")
    p.add_argument("--confirm", action="store_true",
                   help="allow a sync that deletes at least 25 notes and more than 10%% of them")


def _import(p: argparse.ArgumentParser) -> None:
    p.add_argument("tool", choices=("rubi", "basic-memory", "cuba"),
                   help="rubi: a .rubi/ folder or a _pessoal one; basic-memory: a project "
                        "folder; cuba: cuba-memorys, with --bundle or --database")
    p.add_argument("path", nargs="?", default=None, metavar="PATH",
                   help="with rubi and basic-memory: the folder to read")
    p.add_argument("--bundle", metavar="DIR", default=None,
                   help="with cuba: a sync bundle (`cuba-memorys sync export`)")
    p.add_argument("--database", metavar="URL", default=None,
                   help="with cuba: its PostgreSQL database")
    p.add_argument("--dry-run", action="store_true",
                   help="show what would be written (counts, the first notes, every item "
                        "skipped and why); write nothing")


def _judge(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("enable", "status", "disable"),
                   help="enable: download (a Hugging Face name) or take (a folder) an NLI "
                        "cross-encoder and make it verify's judge; status: which judge and "
                        "whether it loads; disable: no local judge")
    p.add_argument("--model", metavar="NAME|PATH",
                   help="with enable: a Hugging Face NLI cross-encoder such as "
                        "cross-encoder/nli-distilroberta-base (downloaded now, with a "
                        "progress bar), or a model folder")


def _embed(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("enable", "status", "disable"),
                   help="enable: turn vectors on and embed everything; status: model, "
                        "dimension, coverage; disable: turn them off and drop the vectors")
    p.add_argument("--model", metavar="NAME", default=None,
                   help="with `enable`: `local` (default: the all-MiniLM-L6-v2 of the "
                        "loremap[embed] extra), a Hugging Face model such as "
                        "BAAI/bge-small-en-v1.5 (downloaded now, with a progress bar), a model "
                        "folder, or endpoint:MODEL (a server at embed.url)")


def _serve(p: argparse.ArgumentParser) -> None:
    p.add_argument("--http", metavar="HOST:PORT", default=None,
                   help="serve streamable HTTP on this address instead of stdio (a non-loopback "
                        "address needs --tokens or LOREMAP_HTTP_TOKEN)")
    tokens_help = ("the tokens file of --http: one named key per client, read-only or "
                   "read-write (default: LOREMAP_HTTP_TOKENS)")
    p.add_argument("--tokens", metavar="FILE", default=None, help=tokens_help)
    sub = p.add_subparsers(dest="serve_action", metavar="token", parser_class=type(p))
    token = sub.add_parser("token", help="manage the tokens file: add, list, revoke",
                           description="manage the keys of `loremap serve --http --tokens FILE`")
    actions = token.add_subparsers(dest="token_action", metavar="ACTION", required=True,
                                   parser_class=type(p))

    def action(name: str, text: str) -> argparse.ArgumentParser:
        sub = actions.add_parser(name, help=text, description=text)
        # SUPPRESS: given before or after the action, either works.
        sub.add_argument("--tokens", metavar="FILE", default=argparse.SUPPRESS, help=tokens_help)
        sub.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                         help="print machine-readable JSON")
        return sub

    add = action("add", "add a key and print its token (once: only its hash is kept)")
    add.add_argument("name", help="who or what uses it (the actor the audit records)")
    add.add_argument("--role", required=True, choices=ROLES,
                     help="read-only: recall, read, map, ...; read-write: remember, forget, ...")
    action("list", "list the keys: name, role, when added")
    action("revoke", "remove a key: the server refuses its token from the next request").\
        add_argument("name", help="the key's name")


def _dashboard(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=_positive, default=8765, metavar="N",
                   help="the port to listen on (default 8765; 0: any free port)")
    p.add_argument("--host", default="127.0.0.1", metavar="H",
                   help="the address to listen on (default 127.0.0.1; any other needs "
                        "--tokens or LOREMAP_HTTP_TOKEN)")
    p.add_argument("--tokens", metavar="FILE", default=None,
                   help="the tokens file of `serve --http` (default: LOREMAP_HTTP_TOKENS): any "
                        "of its keys, read-only or read-write, may look")
    p.add_argument("--writes", action="store_true",
                   help="let the page forget notes and count procedures' outcomes (with keys: "
                        "read-write ones only)")
    p.add_argument("--open", action="store_true", help="open it in the default browser")


def _daemon(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("start", "stop", "status", "run", "units"),
                   help="start: in the background (a hook or `loremap serve` also starts it on "
                        "first need); stop; status: pid, memory, projects, stale or not; run: "
                        "in the foreground; units: the systemd user units for socket activation")
    p.add_argument("--write", action="store_true",
                   help="with `units`: write them to ~/.config/systemd/user/ instead of printing")


_count = _whole(0)


_ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], object]] = {
    "init": lambda p: None,
    "index": lambda p: None,
    "map": lambda p: p.add_argument("module", nargs="?", default=None,
                                    help="a folder of the repository (default: the whole map)"),
    "remember": _remember,
    "show": lambda p: p.add_argument("id", metavar="ID|PATH", help="a note id or a file path"),
    "list": lambda p: _filters(p, "only this status (repeatable; default: all)"),
    "search": _search,
    "eval": _eval,
    "forget": _forget,
    "outcome": _outcome,
    "errors": lambda p: None,
    "calibrate": _calibrate,
    "verify": lambda p: p.add_argument("claim", nargs="+", help="the claim, in words"),
    "dedupe": lambda p: p.add_argument(
        "--apply", action="store_true",
        help="merge the notes whose text is the same (the copy's title becomes an alias, the "
             "copy is superseded); near ones are only listed"),
    "handoff": _handoff,
    "reindex": lambda p: None,
    "doctor": lambda p: p.add_argument("--fix", action="store_true",
                                       help="repair what can be repaired"),
    "audit": _audit,
    "serve": _serve,
    "dashboard": _dashboard,
    "xray": _xray,
    "hooks": _hooks,
    "compaction": _compaction,
    "slim": _slim,
    "connect": _connect,
    "db": _db,
    "sync": _sync,
    "embed": _embed,
    "judge": _judge,
    "reembed": lambda p: p.add_argument(
        "--stale-only", action="store_true",
        help="only the notes and files that have no vector of the configured model"),
    "daemon": _daemon,
    "completions": lambda p: p.add_argument("shell", choices=SHELLS,
                                            help="the shell the script is for"),
    "import": _import,
    "bundle": lambda p: p.add_argument(
        "--output", "-o", metavar="FILE", default=None,
        help="where to write the bundle (default: ./loremap-VERSION.mcpb)"),
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
    _quiet(parser, False)
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
