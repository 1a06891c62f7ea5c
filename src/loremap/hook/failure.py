"""After a tool call failed, and before a command runs again: what the project learned.

`tool-failure` (Claude Code's `PostToolUseFailure`, whose payload carries the `error` text: for
Bash, "Exit code N" and the command's output) takes the error's signature
(`text/signature.py`), counts it in this clone's log of failures (`.loremap/cache/errors.jsonl`,
ignored by git; `loremap errors` reads it), and looks for the project's `error` notes that
record it. When one does, the agent reads that this failed before and what fixed it; when none
does but the same error came back, it is told how often and how to record the remedy once it
has one. Each signature is said once per session.

Before a Bash command (`pre-tool`), an error note that records that very command (`command`)
is said: the approach failed before, and this is what fixed it.

Gemini CLI has no failure event: its `AfterTool` (loremap's `post-tool`) follows every call,
failed or not. `after_tool` reads a failure from its `tool_response` (from the CLI's 0.61
source: `error.message` when the tool could not run; for `run_shell_command`, an `Exit Code: N`
line in `llmContent`, after the command's `Output:`) and answers as `tool-failure` does; any
other call goes on to the meter. Gemini's `BeforeTool` cannot add context (only `AfterTool`,
`BeforeAgent` and `SessionStart` can), so it gets no warning before a command; Codex's hooks
add context only at session start and prompts, so a Codex failure is not seen at all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from loremap.hook.context import (
    additional_context,
    fence,
    locate,
    open_app,
    shared_configured,
)
from loremap.store.rows import ErrorRow, error_row

MAX_NOTES = 3
SHELL_TOOLS = frozenset({"Bash", "run_shell_command"})  # Claude Code's, Gemini CLI's
_EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)\s*$", re.M)
_OUTPUT = re.compile(r"^Output: (.*?)(?=^(?:Error|Exit Code|Signal|Background PIDs|Process "
                     r"Group PGID): |</untrusted_context>|\Z)", re.M | re.S)


def after_tool(payload: Mapping[str, object], environ: Mapping[str, str]) -> str:
    """`post-tool`: a Gemini CLI call that failed is a `tool-failure`; the rest the meter's."""
    error = gemini_error(payload)
    if error is not None:
        return tool_failure({**payload, "error": error}, environ)
    from loremap.hook.meter import post_tool

    return post_tool(payload, environ)


def gemini_error(payload: Mapping[str, object]) -> str | None:
    """The error text of a failed Gemini CLI tool call (`AfterTool`), None for any other."""
    response = payload.get("tool_response")
    if payload.get("hook_event_name") != "AfterTool" or not isinstance(response, dict):
        return None
    error = response.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    content = response.get("llmContent")
    if payload.get("tool_name") != "run_shell_command" or not isinstance(content, str):
        return None
    code = _EXIT_CODE.search(content)
    if code is None or code.group(1) == "0":
        return None
    output = _OUTPUT.search(content)
    return f"Exit code {code.group(1)}\n{output.group(1).strip() if output else ''}".strip()


def tool_failure(payload: Mapping[str, object], environ: Mapping[str, str]) -> str:
    from loremap.text.signature import signature

    project = locate(payload, environ)
    error = payload.get("error")
    if project is None or not isinstance(error, str) or payload.get("is_interrupt") is True:
        return ""
    key = signature(error)
    if not key:
        return ""
    tool = str(payload.get("tool_name") or "")
    from loremap.sessions.failures import record

    seen = record(project.loremap_dir, key, tool, bash_command(payload))
    said = f"error:{key}"
    state = None
    if project.session_id is not None:
        from loremap.sessions.state import SessionState

        state = SessionState(project.loremap_dir, project.session_id)
        if state.warned(said):
            return ""
    notes = error_notes(project.loremap_dir, environ, key, None)
    if notes:
        lines = [f"This error is in the project's memory ({times(seen)} in this clone so "
                 f"far): `{key}`.", *describe(notes)]
    elif seen >= 2:
        lines = [f"This error has happened {times(seen)} in this clone with no remedy "
                 f"recorded: `{key}`. Once it is fixed, remember an error note with the error "
                 "text and the note that fixed it (its remedy), so the next session finds it."]
    else:
        return ""
    if state is not None:
        state.mark_warned(said)
        state.save()
    return additional_context("PostToolUseFailure", fence("error-notes", "\n".join(lines)))


def before_command(payload: Mapping[str, object], loremap_dir: Path,
                   environ: Mapping[str, str]) -> str:
    """What `pre-tool` says before a Bash command that an error note records as failed."""
    from loremap.text.signature import command_key

    command = bash_command(payload)
    if not command:
        return ""
    key = command_key(command)
    if shared_configured(loremap_dir, environ):
        from loremap.hook.pretool import SHARED_COMMANDS, shared_table

        table = shared_table(loremap_dir, environ, SHARED_COMMANDS,
                             lambda app: app.store.failed_commands())
        notes = ([error_row(row) for row in table.get(key, [])] if table is not None
                 else _local_error_notes(loremap_dir, "", key))
    else:
        notes = _local_error_notes(loremap_dir, "", key)
    if not notes:
        return ""
    lines = ["This command failed before in this project:", *describe(notes)]
    return additional_context("PreToolUse", fence("error-notes", "\n".join(lines)))


def describe(notes: list[ErrorRow]) -> list[str]:
    out = []
    for note in notes[:MAX_NOTES]:
        if note.remedy and note.remedy_title:
            fix = f"fixed by [{note.remedy_title}] ({note.remedy}): read it with the read tool"
        elif note.remedy:
            fix = f"its remedy {note.remedy} is not in the memory"
        else:
            fix = "no remedy recorded: read the note"
        out.append(f"- [error] {note.title} ({note.id}) — {fix}.")
    return out


def times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def bash_command(payload: Mapping[str, object]) -> str:
    given = payload.get("tool_input")
    if payload.get("tool_name") not in SHELL_TOOLS or not isinstance(given, dict):
        return ""
    command = given.get("command")
    return command if isinstance(command, str) else ""


def error_notes(loremap_dir: Path, environ: Mapping[str, str], key: str, command: str | None
                ) -> list[ErrorRow]:
    """The error notes recording `key` or `command`: read from the SQLite index without the
    App (a failure and a command are frequent), or asked of the shared database."""
    if shared_configured(loremap_dir, environ):
        from loremap.errors import StoreError

        try:
            with open_app(loremap_dir.parent, environ) as app:
                if app.shared:
                    return app.store.error_notes(key, command)
        except StoreError:
            return []
    return _local_error_notes(loremap_dir, key, command)


def _local_error_notes(loremap_dir: Path, key: str, command: str | None) -> list[ErrorRow]:
    """`error_notes` from the project's SQLite index, on a read-only connection."""
    import sqlite3
    from contextlib import closing

    from loremap.store.sqlite.code import CodeReader
    from loremap.vault.project import INDEX_FILE

    index = loremap_dir / INDEX_FILE
    if not index.is_file():
        return []
    uri = f"{index.resolve().as_uri()}?mode=ro"
    try:
        with closing(sqlite3.connect(uri, uri=True, timeout=2.0)) as conn:
            return CodeReader(conn).error_notes(key, command)
    except sqlite3.OperationalError:  # an index of an older schema: nothing recorded yet
        return []

