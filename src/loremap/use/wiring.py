"""What `loremap doctor` says of the agents' wiring: for every hook and MCP server that runs
loremap here or for this user (use/wired.py), can it start, and is it this installation.

A wired program is checked as the agent will start it: a path must exist, be executable and,
for a script, have its `#!` interpreter; a bare name must resolve on PATH (this shell's: an
agent started elsewhere may see another). A path that no longer exists, or runs a deleted
interpreter, is a stale binary and an error (the agent's loremap fails to start); a path into
another installation is a stale binary too, a warning (it runs, but not the loremap that is
checking). An agent with nothing wired is not mentioned; nothing wired at all is one `ok` line.

`--fix` rewrites only a wired program that cannot run, and only when this installation's
program is an absolute path: it applies, to that one file, the edit `loremap connect AGENT` or
`loremap hooks install claude` makes (the fields loremap writes, a backup kept). It leaves a
program of another installation that still runs (which of two installs to use is a choice), a
name missing from PATH (PATH is the user's environment, and the plugin runs names), a settings
file Claude Code ignores, hooks wired twice or in part, and servers added by hand
(`claude mcp add -s local`): each finding names the command that settles it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from loremap.agents.connect import context
from loremap.agents.connect.agents import HOOKS, MCP, Context
from loremap.agents.connect.edits import HOOK_PROGRAM
from loremap.errors import UserError
from loremap.memory.doctor import Finding
from loremap.use.wired import CLAUDE, PLUGIN, Wired, claude, connected

CHECK = "wiring"
STALE = "stale-binary"


class Verdict(NamedTuple):
    """What doctor says of one wired command."""

    level: str      # "ok" | "warning" | "error"
    check: str
    message: str    # the problem; "" when the command is sound
    broken: bool    # cannot run as written: `--fix` may rewire it


_SOUND = Verdict("ok", CHECK, "", False)
_FOLDER_VARIABLES = ("${workspaceFolder}", "${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR")


def _interpreter_gone(path: Path) -> str | None:
    """The interpreter a script's `#!` line names, when it is an absolute path that is gone
    (a virtual environment rebuilt or deleted under a console script)."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(512)
    except OSError:
        return None
    words = first[2:].decode("utf-8", "replace").split() if first.startswith(b"#!") else []
    gone = bool(words) and words[0].startswith("/") and not os.path.exists(words[0])
    return words[0] if gone else None


def _subject(w: Wired) -> str:
    """"the hooks of Codex CLI in ~/.codex/hooks.json run": what every message starts with."""
    return f"the {w.role} of {w.agent} in {w.shown} {'run' if w.role == HOOKS else 'runs'}"


def _stale(w: Wired) -> str:
    return f"stale {'server binary' if w.role == MCP else 'hook program'}: {_subject(w)}"


def _mine(w: Wired, ctx: Context) -> str:
    return ctx.hook if w.expected == HOOK_PROGRAM else ctx.server


def _expanded(program: str, ctx: Context) -> str:
    """`program` with what its agent expands: `~/`, and the project folder's variables (VS
    Code's and Cursor's `${workspaceFolder}`, Claude Code's `$CLAUDE_PROJECT_DIR`)."""
    if program.startswith("~/"):
        program = str(ctx.home) + program[1:]
    for variable in _FOLDER_VARIABLES:
        program = program.replace(variable, str(ctx.root))
    return program


def _located(w: Wired, ctx: Context, environ: Mapping[str, str]) -> Path | Verdict:
    """Where the wired program is, or the verdict when it is nowhere."""
    program = _expanded(w.program, ctx)
    if "/" not in program:
        found = shutil.which(program, path=environ.get("PATH", os.defpath))
        if found is not None:
            return Path(found)
        # Trigger: a bare name PATH does not resolve. Why: the plugin runs names, and so may a
        # hand-written entry; the agent's PATH may differ from this shell's. Outcome: an
        # error, without a fix: PATH is the user's environment.
        plugin, here = w.shown.startswith(PLUGIN), _mine(w, ctx)
        why = " (the plugin runs its programs by name)" if plugin else ""
        put = f", or put {os.path.dirname(here)} on PATH" if os.path.isabs(here) else ""
        rewire = (f", or re-run {w.rewire} to write this installation's path"
                  if not plugin and not w.path.is_relative_to(ctx.root) else "")
        return Verdict("error", CHECK, f"{_subject(w)} `{program}`, which is not on PATH{why}: "
                       f"install loremap where {w.agent} finds it (`pipx install ./loremap`)"
                       f"{put}{rewire}", False)
    path = Path(program) if os.path.isabs(program) else ctx.root / program
    if not path.exists():  # a dangling symlink too
        return Verdict("error", STALE, f"{_stale(w)} {program}, which no longer exists; re-run "
                       f"{w.rewire}", True)
    return path


def judge(w: Wired, ctx: Context, environ: Mapping[str, str]) -> Verdict:
    """Whether `w` starts, and whether it is this installation's program."""
    if not w.program or "$" in _expanded(w.program, ctx):
        return _SOUND  # a URL, or a variable only the agent knows: nothing to look at here
    located = _located(w, ctx, environ)
    if isinstance(located, Verdict):
        return located
    if not located.is_file() or not os.access(located, os.X_OK):
        return Verdict("error", CHECK, f"{_subject(w)} {located}, which is not an executable "
                       "file", False)
    gone = _interpreter_gone(located)
    if gone is not None:
        return Verdict("error", STALE, f"{_stale(w)} {located}, whose interpreter {gone} no "
                       f"longer exists; re-run {w.rewire}", "/" in w.program)
    mine = _mine(w, ctx)
    if (os.path.basename(w.program) == w.expected and os.path.isabs(mine)
            and located.resolve() != Path(mine).resolve()):
        named = w.program if "/" in w.program else f"`{w.program}` (on PATH: {located})"
        return Verdict("warning", STALE, f"{_stale(w)} {named}, another installation than this "
                       f"one ({mine}); re-run {w.rewire} with this one to use it (`doctor --fix` "
                       "leaves it: both run)", False)
    return _SOUND


def _repaired(w: Wired, verdict: Verdict, ctx: Context, fix: bool) -> Finding:
    mine = _mine(w, ctx)
    if not (fix and verdict.broken and w.repair is not None and os.path.isabs(mine)
            and os.access(mine, os.X_OK)):
        return Finding(verdict.level, verdict.check, verdict.message)
    try:
        done = w.repair()
    except (UserError, OSError) as exc:
        return Finding(verdict.level, verdict.check, f"{verdict.message}; --fix could not: "
                       f"{exc}")
    return Finding(verdict.level, verdict.check, f"{verdict.message}; --fix: {done}", fixed=True)


def _part(w: Wired) -> str:
    events = f" ({len(w.events)} events)" if len(w.events) > 1 else (
        f" ({w.events[0]})" if w.events else "")
    return f"{w.role} in {w.shown}{events}"


def _agent_findings(agent: str, wired: list[Wired], expected: tuple[str, ...], ctx: Context,
                    environ: Mapping[str, str], fix: bool) -> list[Finding]:
    out, sound = [], []
    for w in wired:
        verdict = judge(w, ctx, environ)
        if verdict.message:
            out.append(_repaired(w, verdict, ctx, fix))
        else:
            sound.append(_part(w))
    hooked = {event for w in wired if w.role == HOOKS for event in w.events}
    missing = [event for event in expected if event not in hooked]
    if missing and (hooked or agent != CLAUDE):
        rewire = next(w.rewire for w in wired if w.role == (HOOKS if hooked else MCP))
        out.append(Finding("warning", CHECK, f"{agent}: loremap's hooks for {', '.join(missing)} "
                           f"are missing (wired in part); re-run {rewire}"))
    if sound:
        parts = "; ".join(dict.fromkeys(sound))
        out.insert(0, Finding("ok", CHECK, f"{agent} runs loremap: {parts}"))
    return out


def _claude_overall(wired: list[Wired]) -> list[Finding]:
    """Claude Code's hooks wired twice (the plugin and settings, or two programs), or hooks
    without any MCP server."""
    out = []
    sources: dict[str, set[str]] = {}
    for w in wired:
        for event in w.events:
            sources.setdefault(event, set()).add(w.shown if w.shown.startswith(PLUGIN)
                                                 else w.program)
    twice = [event for event, found in sources.items() if len(found) > 1]
    if twice:
        places = sorted({w.shown for w in wired if w.role == HOOKS})
        out.append(Finding("warning", CHECK, f"{CLAUDE}: loremap's hooks for {', '.join(twice)} "
                           f"are wired more than once ({', '.join(places)}), so each runs "
                           "twice: keep one (the plugin, or `loremap hooks install claude`)"))
    if sources and not any(w.role == MCP for w in wired):
        out.append(Finding("warning", CHECK, f"{CLAUDE}: the hooks run, but no MCP server runs "
                           "`loremap serve`, so the agent cannot call recall or remember; "
                           "`loremap hooks install claude` adds it"))
    return out


def wiring(cwd: Path, environ: Mapping[str, str], fix: bool = False) -> list[Finding]:
    """Every agent wired to loremap from `cwd` (its project) and for this user, checked."""
    ctx = context(cwd, environ)
    out: list[Finding] = []
    any_wired = False
    for reading in (claude(ctx, environ), connected(ctx)):
        out += reading.problems
        by_agent: dict[str, list[Wired]] = {}
        for w in reading.wired:
            by_agent.setdefault(w.agent, []).append(w)
        any_wired |= bool(by_agent)
        for agent, wired in by_agent.items():
            expected = reading.expected.get(agent, ())
            out += _agent_findings(agent, wired, expected, ctx, environ, fix)
            if agent == CLAUDE:
                out += _claude_overall(wired)
    if not any_wired and not out:
        out.append(Finding("ok", CHECK, "no agent runs loremap here or for this user (the "
                           "Claude Code plugin, `loremap hooks install claude` or `loremap "
                           "connect AGENT` wire one)"))
    return out
