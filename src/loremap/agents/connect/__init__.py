"""`loremap connect AGENT`: register loremap with another agent, and take it back out.

A connect is two passes. The first reads every file the agent needs and computes its new text;
any file that is unreadable, binary or malformed stops the whole connect there, with one line
naming it, before anything is written. The second writes each changed file atomically after a
backup. `--dry-run` stops after the first pass and shows the diffs; `--undo` runs the same
passes with each edit's inverse, in reverse order (what was appended last is cut first, so the
file comes back byte for byte). Instructions in a file several agents read (AGENTS.md) stay
while another agent that reads them is still connected. What would not take effect is said in
one warning line each: a program name the agent would look up on PATH and not find, a setting
of the user's that turns our part off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loremap.agents.connect.agents import AGENTS, BY_NAME, MCP, Agent, Context
from loremap.agents.connect.edits import Edit, MarkedBlock
from loremap.agents.connect.programs import missing, missing_line
from loremap.agents.files import (
    read_text_or_none,
    remove_with_backup,
    unified_diff,
    write_with_backup,
)
from loremap.config import find_project_root
from loremap.errors import InvalidInput

NOTHING = "nothing was changed"


@dataclass(frozen=True)
class FileChange:
    """One file's text before and after (None: no file); `roles` are loremap's parts in it."""

    path: Path
    roles: tuple[str, ...]
    old: str | None
    new: str | None
    ours_only: bool = False  # the file holds nothing but what connect writes into a new one

    @property
    def action(self) -> str:
        if self.old == self.new:
            return "unchanged"
        if self.old is None:
            return "created"
        return "removed" if self.new is None else "updated"


def context(cwd: Path, environ: Mapping[str, str] | None = None) -> Context:
    """The context of a connect run from `cwd`: the project is its git root, else `cwd`."""
    env = os.environ if environ is None else environ
    return Context.from_env(find_project_root(cwd, env) or cwd.resolve(), env)


def agent_named(name: str) -> Agent:
    """The agent called `name`; a one-line error listing the known ones otherwise."""
    if name in BY_NAME:
        return BY_NAME[name]
    if name.lower() in ("claude", "claude-code", "claude code"):
        raise InvalidInput("Claude Code is connected with `loremap hooks install claude`")
    raise InvalidInput(f"unknown agent {name!r}; known agents: {', '.join(BY_NAME)}")


def _grouped(edits: list[Edit]) -> dict[Path, list[Edit]]:
    grouped: dict[Path, list[Edit]] = {}
    for edit in edits:
        grouped.setdefault(edit.path, []).append(edit)
    return grouped


def _state(edit: Edit, text: str | None) -> str:
    if edit.add(text) == text:
        return "connected"
    return "not connected" if edit.drop(text) == text else "outdated"


def _still_used(agent: Agent, ctx: Context, path: Path) -> list[str]:
    """The other agents that read instructions from `path` and are still connected."""
    users = []
    for other in AGENTS:
        edits = other.edits(ctx)
        if other is agent or not any(isinstance(e, MarkedBlock) and e.path == path
                                     for e in edits):
            continue
        try:
            connected = any(_state(e, read_text_or_none(e.path)) != "not connected"
                            for e in edits if e.role == MCP)
        except InvalidInput:
            connected = True  # cannot tell: keep the shared instructions
        if connected:
            users.append(other.title)
    return users


def _writable(path: Path) -> None:
    """Refuse before writing anything when `path` could not be replaced."""
    target = path.resolve() if path.is_symlink() else path
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise InvalidInput(f"cannot write {path}: permission denied; {NOTHING}")


def _fresh(edits: list[Edit]) -> str | None:
    """What connect writes into a file that does not exist yet."""
    text = None
    for edit in edits:
        text = edit.add(text)
    return text


def _undo(agent: Agent, ctx: Context, path: Path, edits: list[Edit], old: str | None,
          notes: list[str]) -> tuple[str | None, bool]:
    """The text of `path` without loremap's parts, and whether the file was ours alone."""
    blocks = [e for e in edits if isinstance(e, MarkedBlock)]
    users = _still_used(agent, ctx, path) if blocks else []
    shared = blocks if users else []
    if shared:
        notes.append(f"kept the instructions in {shown(path, ctx)}, still used by "
                     f"{', '.join(users)}")
    elif old is not None and old == _fresh(edits):
        return None, True  # exactly what connect creates: the file goes, without a backup
    new = old
    for edit in reversed(edits):
        if edit not in shared:
            new = edit.drop(new)
    return new, False


def warnings(agent: Agent, ctx: Context, texts: Mapping[Path, str | None]) -> list[str]:
    """One line for each part of `agent`'s files (`texts`, by path) that would not take
    effect: a setting of the user's that turns it off, a program PATH does not hold."""
    edits = agent.edits(ctx)
    out = [f"{shown(e.path, ctx)}: {line}" for e in edits
           for line in [e.warning(texts.get(e.path))] if line]
    names = missing(name for e in edits for name in e.needs)
    if names:
        out.append(missing_line(names, agent.title))
    return out


def plan(agent: Agent, ctx: Context, undo: bool) -> tuple[list[FileChange], list[str]]:
    """Every file's new text, and notes; raises `InvalidInput` before anything is written."""
    changes: list[FileChange] = []
    notes: list[str] = []
    for path, edits in _grouped(agent.edits(ctx)).items():
        old = new = read_text_or_none(path)
        ours_only = False
        try:
            if undo:
                new, ours_only = _undo(agent, ctx, path, edits, old, notes)
            else:
                for edit in edits:
                    new = edit.add(new)
        except InvalidInput as exc:
            message = str(exc)
            raise InvalidInput(message if NOTHING in message else f"{message}; {NOTHING}"
                               ) from None
        changes.append(FileChange(path, tuple(e.role for e in edits), old, new, ours_only))
    for change in changes:
        if change.action != "unchanged":
            _writable(change.path)
    return changes, notes


def diff(change: FileChange, shown: str) -> str:
    """A unified diff of the change (`/dev/null` for a created or removed file)."""
    return unified_diff(change.old, change.new, shown)


def shown(path: Path, ctx: Context) -> str:
    """`path` as the user thinks of it: relative to the project, or under `~`."""
    if path.is_relative_to(ctx.root):
        return str(path.relative_to(ctx.root))
    if path.is_relative_to(ctx.home):
        return "~/" + str(path.relative_to(ctx.home))
    return str(path)


def connect(name: str, cwd: Path, *, undo: bool = False, dry_run: bool = False,
            environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Connect (or with `undo`, disconnect) the agent `name`; the report of what was done."""
    agent = agent_named(name)
    ctx = context(cwd, environ)
    changes, notes = plan(agent, ctx, undo)
    files = []
    for change in changes:
        entry: dict[str, Any] = {"path": str(change.path), "shown": shown(change.path, ctx),
                                 "roles": list(change.roles), "action": change.action,
                                 "backup": None}
        if dry_run and change.action != "unchanged":
            entry["diff"] = diff(change, entry["shown"])
        elif change.action == "removed" and change.ours_only:
            change.path.unlink()  # only what we wrote: no backup to litter the project
            _remove_empty_folders(change.path.parent, ctx)
        elif change.action == "removed":
            entry["backup"] = _str(remove_with_backup(change.path))
        elif change.action != "unchanged":
            assert change.new is not None
            entry["backup"] = _str(write_with_backup(change.path, change.new))
        files.append(entry)
    changed = any(f["action"] != "unchanged" for f in files)
    if not undo and changed:
        notes += list(agent.notes)
    return {"agent": agent.name, "title": agent.title, "project": str(ctx.root),
            "action": "undo" if undo else "connect", "dry_run": dry_run, "changed": changed,
            "hooks": agent.hooks, "files": files, "notes": notes,
            "warnings": [] if undo else warnings(agent, ctx, {c.path: c.new for c in changes})}


def _remove_empty_folders(folder: Path, ctx: Context) -> None:
    """Remove the folders a connect created for a file it has now deleted, while empty."""
    keep = {ctx.root, ctx.home, ctx.config_home}
    while folder not in keep and folder != folder.parent and any(
            folder.is_relative_to(k) for k in keep):
        try:
            folder.rmdir()
        except OSError:  # not empty (or not ours to remove): stop
            return
        folder = folder.parent


def _str(path: Path | None) -> str | None:
    return None if path is None else str(path)


def status(agent: Agent, ctx: Context) -> dict[str, Any]:
    """Whether `agent` is connected, file by file (an unreadable file is reported, not fatal)."""
    files = []
    texts: dict[Path, str | None] = {}
    for edit in agent.edits(ctx):
        try:
            texts[edit.path] = read_text_or_none(edit.path)
            state = _state(edit, texts[edit.path])
        except InvalidInput as exc:
            state = f"error: {exc}"
        files.append({"path": str(edit.path), "shown": shown(edit.path, ctx), "role": edit.role,
                      "state": state})
    states = {f["state"] for f in files}
    if any(s.startswith("error") for s in states):
        overall = "error"
    elif len(states) == 1:
        overall = states.pop()
    else:
        overall = "partly connected"
    found = warnings(agent, ctx, texts) if overall in ("connected", "partly connected") else []
    return {"agent": agent.name, "title": agent.title, "state": overall, "hooks": agent.hooks,
            "files": files, "notes": list(agent.notes), "warnings": found}


def list_agents(cwd: Path, name: str | None = None,
                environ: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The status of every agent (or of the one named)."""
    ctx = context(cwd, environ)
    agents = [agent_named(name)] if name else list(AGENTS)
    return [status(agent, ctx) for agent in agents]
