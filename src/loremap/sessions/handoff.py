"""Session handoffs: what one agent session leaves for the next, as files in `.loremap/handoffs/`.

A session that ends, or is about to be compacted, holds context the next one would otherwise
rebuild by re-reading the repository: what it set out to do, how far it got, what it decided,
what comes next. A handoff is that, saved by the agent, a person or a hook as one markdown file
named by the UTC time of saving. Only the newest open handoff is served: saving one closes the
others, and a new session resumes from the latest open one.

Hooks read the latest handoff at every session start and a hook may save one, so this module
stays on the standard library (no PyYAML; see `loremap.sessions.handoff_file`): a handoff is
read and written without the note machinery, and closing one edits its `status:` line in
place, so keys and sections a person added survive untouched.

No symlink is followed out of the repository: a handoff file that is a symlink is skipped (a
line in `handoff list`), and a `handoffs/` folder linked out of the repository refuses every
read and write with one line (`UnsafePath`), before anything is written.
"""

from __future__ import annotations

import builtins  # `Handoffs.list` hides the builtin in the class body
import datetime as dt
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from loremap.errors import InvalidInput, MalformedNote, NotFound, SecretFound, UnsafePath
from loremap.sessions.handoff_file import (
    ID_FORMAT,
    SOURCES,
    STAMPED_ID,
    STATUSES,
    Handoff,
    closed_text,
    parse_file,
    render_body,
    render_file,
    stamp,
)
from loremap.vault.fs import (
    atomic_write,
    check_folder,
    check_write,
    file_lock,
    link_target,
    read_nofollow,
)
from loremap.vault.layout import HANDOFFS_DIR, LOCK_FILE

if TYPE_CHECKING:
    from loremap.config import Settings

__all__ = ["SOURCES", "STATUSES", "Handoff", "HandoffDraft", "Handoffs", "as_dict", "order_key",
           "utc_now"]

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
# A hand-edited file may grow past the body limit by this much before it is refused.
_FILE_SLACK = 64 * 1024


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class HandoffDraft(NamedTuple):
    """What a caller asks to save."""

    goal: str
    state: str = ""
    decisions: Sequence[str] = ()
    next_steps: Sequence[str] = ()
    open_questions: Sequence[str] = ()
    files: Sequence[str] = ()
    session: str | None = None
    source: str = "agent"


def as_dict(handoff: Handoff) -> dict[str, object]:
    """`handoff` as JSON-ready data (lists, and `created_at` as `2026-11-30T21:40:05Z`)."""
    data: dict[str, object] = {k: list(v) if isinstance(v, tuple) else v
                               for k, v in handoff._asdict().items()}
    data["created_at"] = stamp(handoff.created_at)
    data["extra_sections"] = [{"heading": h, "text": t} for h, t in handoff.extra_sections]
    return data


def order_key(handoff_id: str) -> tuple[int, str, int]:
    """Sort key of an id, oldest first: saved ids by time then suffix (`-10` after `-9`);
    a file named by hand counts as older than every saved one."""
    match = STAMPED_ID.fullmatch(handoff_id)
    if match is None:
        return (0, handoff_id, 0)
    return (1, match[1], int(match[2] or 1))


def _utc(moment: dt.datetime) -> dt.datetime:
    if moment.tzinfo is None:  # a naive clock is taken to tell UTC
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).replace(microsecond=0)


def _text(value: str, name: str, one_line: bool = False) -> str:
    """`value` with line endings normalised and outer blank space removed; refused when it is
    not plain Unicode text (or not one line, when `one_line`)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be text, not {type(value).__name__}")
    if "\x00" in value:
        raise InvalidInput(f"{name} contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{name} contains text that is not valid Unicode") from None
    lines = value.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    text = "\n".join(line.rstrip() for line in lines).strip()
    if one_line and "\n" in text:
        raise InvalidInput(f"{name} must be one line")
    return text


def _items(values: Sequence[str], name: str, one_line: bool = False) -> tuple[str, ...]:
    if isinstance(values, str):
        values = (values,)
    cleaned = (_text(v, f"{name}[{i}]", one_line) for i, v in enumerate(values))
    return tuple(v for v in cleaned if v)


def _fields(handoff: Handoff) -> list[tuple[str, str]]:
    """(name, text) of every field a person or agent wrote, as named in error messages."""
    out = [("goal", handoff.goal), ("state", handoff.state)]
    for name in ("decisions", "next_steps", "open_questions", "files"):
        out += [(f"{name}[{i}]", item) for i, item in enumerate(getattr(handoff, name))]
    if handoff.session is not None:
        out.append(("session", handoff.session))
    return out


class Handoffs:
    """The handoffs of one project (`<loremap_dir>/handoffs/*.md`).

    Built from the App with `Handoffs.for_project(app.loremap_dir, app.settings)`.
    """

    def __init__(self, loremap_dir: Path, lock_timeout: float, max_bytes: int,
                 clock: Callable[[], dt.datetime] = utc_now) -> None:
        self.loremap_dir = loremap_dir
        self.directory = loremap_dir / HANDOFFS_DIR
        self.boundary = loremap_dir.parent  # the repository: no symlink may lead out of it
        self.lock_timeout = lock_timeout
        self.max_bytes = max_bytes
        self.clock = clock

    @classmethod
    def for_project(cls, loremap_dir: Path | None, settings: Settings,
                    clock: Callable[[], dt.datetime] = utc_now) -> Handoffs:
        """The handoffs of the project at `loremap_dir` (`App.loremap_dir`), with the vault's
        lock timeout and size limit; `NotFound` outside a project."""
        if loremap_dir is None:
            raise NotFound("no loremap project here: run `loremap init` in the repository")
        return cls(loremap_dir, settings.get_float("vault.lock_timeout_s"),
                   settings.get_int("vault.max_note_bytes"), clock)

    # --- reading ------------------------------------------------------------------------

    def load(self, handoff_id: str | None = None) -> Handoff:
        """The handoff `handoff_id`, or the latest open one; `NotFound` when there is none."""
        if handoff_id is None:
            latest = self.latest()
            if latest is None:
                raise NotFound("no open handoff in .loremap/handoffs (save one with "
                               "`loremap handoff save --goal ...`)")
            return latest
        return self._read(self.path_for(handoff_id))

    def latest(self) -> Handoff | None:
        """The newest open handoff, or None; files that cannot be read are skipped."""
        for path in self._paths():
            try:
                handoff = self._read(path)
            except (MalformedNote, NotFound, OSError):
                continue
            if handoff.status == "open":
                return handoff
        return None

    def list(self, limit: int | None = None) -> builtins.list[Handoff]:
        """Handoffs newest first (at most `limit`); files that cannot be read are skipped."""
        if limit is not None and limit < 0:
            raise InvalidInput(f"limit must be 0 or more, not {limit}")
        return self.scan()[0][:limit]

    def scan(self) -> tuple[builtins.list[Handoff], builtins.list[str]]:
        """Every readable handoff newest first, and one line for each file that is not."""
        found: builtins.list[Handoff] = []
        problems: builtins.list[str] = []
        for path in self._paths():
            try:
                found.append(self._read(path))
            except NotFound:
                continue  # removed since the directory was listed
            except MalformedNote as exc:
                problems.append(f"skipped {exc}")
            except OSError as exc:
                problems.append(f"skipped {self.display(path)}: {exc.strerror}")
        return found, problems

    def render(self, handoff: Handoff) -> str:
        """The markdown an agent reads: the body of the handoff's file."""
        return render_body(handoff)

    def path_for(self, handoff_id: str) -> Path:
        """The file of `handoff_id`, refusing any id that could leave `handoffs/`."""
        self._require_project()
        if not isinstance(handoff_id, str) or not _SAFE_ID.fullmatch(handoff_id.removesuffix(
                ".md")):
            raise InvalidInput(f"invalid handoff id {handoff_id!r}: use a name listed by "
                               "`loremap handoff list`, e.g. 2026-11-30T21-40-05Z")
        path = self.directory / f"{handoff_id.removesuffix('.md')}.md"
        if path.parent != self.directory:  # pragma: no cover - the pattern already forbids it
            raise InvalidInput(f"handoff id {handoff_id!r} would leave .loremap/handoffs")
        return path

    def display(self, path: Path) -> str:
        """A short path for messages: relative to the project root when possible."""
        try:
            return str(path.relative_to(self.loremap_dir.parent))
        except ValueError:
            return str(path)

    # --- writing ------------------------------------------------------------------------

    def save(self, draft: HandoffDraft) -> Handoff:
        """Write a new open handoff and close every other open one; return the new one.

        Refused, with nothing written, when the goal is empty, the text is over the size
        limit or holds something that looks like a credential.
        """
        self._require_project()
        handoff = self._checked(draft)
        with file_lock(self.loremap_dir / LOCK_FILE, self.lock_timeout, self.boundary):
            created = _utc(self.clock())
            handoff = handoff._replace(id=self._free_id(created), created_at=created)
            path = self.path_for(handoff.id)
            check_write(path, self.boundary)  # before the folder is made through a link
            self.directory.mkdir(exist_ok=True)
            # The new file first: a crash before the others are closed leaves two open
            # handoffs, and the newest (this one) is the one served.
            atomic_write(path, render_file(handoff).encode("utf-8"), self.boundary)
            for path in self._paths():
                if path.stem != handoff.id:
                    self._close_file(path, quiet=True)
        return handoff

    def close(self, handoff_id: str | None = None) -> Handoff:
        """Mark `handoff_id` (or the latest open handoff) closed; closing twice is harmless."""
        self._require_project()  # before the lock, which would create the folder
        with file_lock(self.loremap_dir / LOCK_FILE, self.lock_timeout, self.boundary):
            handoff = self.load(handoff_id)
            if handoff.status == "open":
                self._close_file(self.path_for(handoff.id), quiet=False)
        return handoff._replace(status="closed")

    # --- internals ----------------------------------------------------------------------

    def _require_project(self) -> None:
        if not self.loremap_dir.is_dir():
            raise NotFound(f"no loremap project at {self.loremap_dir.parent}: run `loremap init` "
                           "in the repository")

    def _paths(self) -> builtins.list[Path]:
        """The handoff files, newest first (hidden temp files skipped)."""
        self._require_project()
        check_folder(self.directory, self.boundary)
        try:
            entries = list(os.scandir(self.directory))
        except FileNotFoundError:
            return []
        # A symlink is listed so that reading it says why it is skipped.
        paths = [Path(e.path) for e in entries
                 if e.name.endswith(".md") and not e.name.startswith(".")
                 and (e.is_file() or e.is_symlink())]
        return sorted(paths, key=lambda p: order_key(p.stem), reverse=True)

    def _read(self, path: Path) -> Handoff:
        shown = self.display(path)
        check_folder(path.parent, self.boundary)
        try:
            data = read_nofollow(path)[0]
        except (FileNotFoundError, IsADirectoryError):
            raise NotFound(f"no handoff {path.stem} in .loremap/handoffs (see `loremap handoff "
                           "list`)") from None
        except UnsafePath as exc:
            target = link_target(path)
            raise MalformedNote(shown, str(exc) if target is None else f"a symlink to {target}: "
                                "not read (loremap follows no link)") from None
        if len(data) > self.max_bytes + _FILE_SLACK:
            raise MalformedNote(shown, f"file is {len(data)} bytes, over the "
                                f"{self.max_bytes}-byte limit (vault.max_note_bytes)")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedNote(shown, f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset "
                                f"{exc.start})") from None
        return parse_file(text, path.stem, shown)

    def _close_file(self, path: Path, quiet: bool) -> None:
        """Rewrite `path` with `status: closed`; when `quiet`, leave unreadable files alone."""
        try:
            handoff = self._read(path)
            if handoff.status == "closed":
                return
            text = closed_text(read_nofollow(path)[0].decode("utf-8"), self.display(path))
        except (MalformedNote, NotFound, OSError):
            if quiet:
                return
            raise
        atomic_write(path, text.encode("utf-8"), self.boundary)

    def _free_id(self, created: dt.datetime) -> str:
        base = created.strftime(ID_FORMAT)
        candidate, n = base, 2
        while (self.directory / f"{candidate}.md").exists():
            candidate, n = f"{base}-{n}", n + 1
        return candidate

    def _checked(self, draft: HandoffDraft) -> Handoff:
        """The draft cleaned and validated, as a handoff without id and time yet."""
        # Only saving scans for secrets; the readers hooks use stay off its import cost.
        from loremap.vault.secrets import scan

        goal = _text(draft.goal, "goal")
        if not goal:
            raise InvalidInput("a handoff needs a goal: what the session set out to do")
        if draft.source not in SOURCES:
            raise InvalidInput(f"unknown handoff source {draft.source!r}: use one of "
                               f"{', '.join(SOURCES)}")
        session = (None if draft.session is None
                   else _text(draft.session, "session", one_line=True) or None)
        handoff = Handoff(
            id="", goal=goal, state=_text(draft.state, "state"),
            decisions=_items(draft.decisions, "decisions"),
            next_steps=_items(draft.next_steps, "next_steps"),
            open_questions=_items(draft.open_questions, "open_questions"),
            files=tuple(dict.fromkeys(_items(draft.files, "files", one_line=True))),
            created_at=dt.datetime.fromtimestamp(0, dt.UTC), status="open", session=session,
            source=draft.source,
        )
        size = len(render_body(handoff).encode("utf-8"))
        if size > self.max_bytes:
            largest = max(_fields(handoff), key=lambda field: len(field[1]))[0]
            raise InvalidInput(f"the handoff is {size} bytes, over the limit of {self.max_bytes} "
                               f"(vault.max_note_bytes); shorten {largest}")
        for name, text in _fields(handoff):
            findings = scan(text)
            if findings:
                raise SecretFound(f"refused: {findings[0].kind} in {name} of the handoff; "
                                  "remove it and save again (nothing was written)")
        return handoff
