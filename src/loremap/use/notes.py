"""Writing, reading, listing and forgetting notes: one function each for every front end.

Each reconciles first as its caller's freshness asks, and returns what it did with the warnings
that belong with it (the notices of opening the index included). On a shared database a
teammate's note that `sync pull` has not brought here yet is still readable (from the
database's own text) and can be forgotten (it is fetched into the vault first, as a pull of that
one note would).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from loremap.errors import InvalidInput, NotFound
from loremap.memory.drafts import Draft
from loremap.memory.paths import is_path_target, repo_path
from loremap.model import Edge, IndexedNote, Note, NoteType, Status, check_id
from loremap.use.code import ModulePage, module_page
from loremap.use.fresh import Freshness, refresh

if TYPE_CHECKING:
    from loremap.app import App
    from loremap.codemap.views import FileView


class Written(NamedTuple):
    id: str
    path: str
    superseded: str | None  # the id of the note this one replaced (rewritten as superseded)


class Remembered(NamedTuple):
    notes: list[Written]
    warnings: list[str]


def remember(app: App, drafts: Sequence[Draft], freshness: Freshness, personal: bool = False,
             quarantine: bool = False, label: str | None = "facts[{i}]") -> Remembered:
    """Write the drafts as notes, all or none (every one is checked before the first is
    written, and they land as one batch: `Memory.remember_all`), with a warning for each
    active note of the same type whose title says nearly the same. `label`
    names a draft in an error (`{i}` is its position); None leaves a single draft to the
    write's own checks, whose messages name the command's options."""
    from loremap.search.similar import similar_notes, similar_warning

    if not drafts:
        raise InvalidInput("nothing to remember: give at least one note")
    if not personal and app.loremap_dir is None:
        raise InvalidInput("not in a loremap project: run `loremap init` in the repository, or "
                           "write it to your personal vault (--personal)")
    warnings = refresh(app, freshness)
    max_bytes = app.settings.get_int("vault.max_note_bytes")
    if label is not None or len(drafts) > 1:
        for i, draft in enumerate(drafts):
            app.memory.check(draft, (label or "notes[{i}]").format(i=i), max_bytes)
    similar = [[] if draft.supersedes else similar_notes(
        app.store, app.memory.analyzer, NoteType.parse(draft.type).value, draft.title)
        for draft in drafts]
    outcomes = app.memory.remember_all(drafts, personal=personal, quarantine=quarantine)
    written: list[Written] = []
    for draft, outcome, alike in zip(drafts, outcomes, similar, strict=True):
        superseded = draft.supersedes if outcome.counts.get("superseded") else None
        written.append(Written(outcome.ids[0], outcome.paths[0], superseded))
        warnings += outcome.warnings
        warnings += [similar_warning(other, title) for other, title in alike]
    return Remembered(written, warnings)


class NotePage(NamedTuple):
    """A note as its file holds it (or, on a shared database, as the database holds a note
    not yet pulled here), and the nodes that link to it."""

    note: Note
    scope: str
    path: str
    text: str
    linked_from: list[Edge]
    in_database_only: bool = False


class FilePage(NamedTuple):
    view: FileView


Page = NotePage | FilePage | ModulePage


class Read(NamedTuple):
    page: Page
    warnings: list[str]


def read(app: App, target: str, freshness: Freshness, cwd: Path | None = None,
         session: str | None = None) -> Read:
    """A note by id, a file of the code map or a module page by path (relative to `cwd`, or to
    the repository root when `cwd` is None); with the agent's `session`, what it opened is
    logged for `loremap calibrate`."""
    target = target.strip()
    if not target:
        raise InvalidInput("read what? give a note id, a file path or a module path")
    warnings = refresh(app, freshness)
    named = not is_path_target(target)
    page: Page | None = _note_page(app, target) if named and _valid_id(target) else None
    if page is None and app.root is not None and (not named or _valid_id(target)):
        page = _code_page(app, target, app.root if cwd is None else cwd)
    if page is None:
        # An imported note keeps its old id (a Rubi slug, a basic-memory permalink) as an
        # alias: `read` of it opens the note (looked for only when nothing else is named so).
        aliased = app.memory.aliased(target)
        page = _note_page(app, aliased) if aliased is not None else None
    if page is None and named and _is_id(target):
        raise NotFound(f"nothing named '{target}': no note with id '{target}', and no module of "
                       "that name in the code map (try search, or map for the modules)")
    if page is None:
        raise NotFound(f"{target} is not in the code map as a file or a module (run `loremap "
                       "index`; binary, generated and vendored files are left out)")
    if session:
        from loremap.use.recall import logged

        logged(app, session, opened=page_node(page))
    return Read(page, warnings)


def page_node(page: Page) -> str:
    """The id of the index node a page shows (a note's id, a file's path, a module's folder
    with its `/`)."""
    if isinstance(page, NotePage):
        return page.note.id
    if isinstance(page, FilePage):
        return page.view.path
    return (page.module or ".") + "/"


def _valid_id(target: str) -> bool:
    try:
        return bool(check_id(target))
    except InvalidInput:
        return False


def _is_id(target: str) -> bool:
    """A target without a `/` or a `.` names a note (or a top-level module): it must be a
    valid id, which refuses anything that would leave the vault."""
    return not is_path_target(target) and bool(check_id(target))


def _note_page(app: App, note_id: str) -> NotePage | None:
    for vault in app.memory.vaults:
        if vault.exists(note_id):
            loaded = vault.read(note_id)  # the bytes it checked and parsed, never read twice
            return NotePage(loaded.note, vault.scope, vault.display(loaded.file.path),
                            loaded.text, app.memory.linked_from(note_id))
    doc = _shared_text(app, note_id)
    if doc is None:
        return None
    from loremap.vault.frontmatter import parse_note

    note = parse_note(doc, f"{note_id} (shared database)")
    return NotePage(note, "project", f".loremap/notes/{note_id}.md", doc,
                    app.memory.linked_from(note_id), in_database_only=True)


def _shared_text(app: App, note_id: str) -> str | None:
    """The database's text of a project note this vault has not pulled yet."""
    if not app.shared:
        return None
    from loremap.store.postgres.store import PostgresStore

    store = app.store
    assert isinstance(store, PostgresStore)
    doc = store.doc(note_id)
    return None if doc is None or doc.deleted else doc.text


def _code_page(app: App, target: str, cwd: Path) -> FilePage | ModulePage | None:
    from loremap.codemap.views import describe_file

    assert app.root is not None
    path = target if target in (".", "./") else repo_path(target, app.root, cwd)
    if path not in (".", "./"):
        view = describe_file(app.store, path)
        if view is not None:
            return FilePage(view)
    return module_page(app, "" if path in (".", "./") else path)


def render_page(page: Page) -> list[str]:
    """The page as a person or an agent reads it."""
    if isinstance(page, NotePage):
        where = (f"{page.path} (in the shared database; `loremap sync pull` brings the file)"
                 if page.in_database_only else page.path)
        out = [f"# {where}", page.text.rstrip("\n")]
        if page.linked_from:
            out += ["", "Linked from:", *(f"- {e.src} ({e.rel})" for e in page.linked_from)]
        return out
    if isinstance(page, FilePage):
        from loremap.codemap.views import file_lines

        return file_lines(page.view)
    return [page.text.rstrip("\n")]


class Forgotten(NamedTuple):
    id: str
    purged: bool
    path: str
    warnings: list[str]
    erased: bool = False
    scrubbed: tuple[str, ...] = ()  # files whose quotes of an erased note were removed

    @property
    def action(self) -> str:
        return "erased" if self.erased else "purged" if self.purged else "archived"


def forget(app: App, note_id: str, freshness: Freshness, reason: str | None = None,
           purge: bool = False, erase: bool = False) -> Forgotten:
    """Archive the note (kept in its file, never served as current), purge it, or erase it
    completely (`erase`, which needs a `reason` and implies the purge: `Memory.erase`)."""
    note_id = check_id(note_id.strip())
    if erase:
        if not reason or not reason.strip():
            raise InvalidInput("--erase needs --reason: say why the note is erased (kept in "
                               "the audit record); nothing was changed")
        warnings = refresh(app, freshness)
        outcome = app.memory.erase(note_id, reason)
        return Forgotten(note_id, True, outcome.paths[0], warnings + outcome.warnings, True,
                         tuple(outcome.paths[1:]))
    warnings = refresh(app, freshness)
    if not any(v.exists(note_id) for v in app.memory.vaults):
        _fetch_shared(app, note_id, warnings)
    outcome = app.memory.forget(note_id, reason=reason, purge=purge)
    return Forgotten(note_id, bool(outcome.counts.get("purged")), outcome.paths[0],
                     warnings + outcome.warnings)


class Counted(NamedTuple):
    """A procedure's track record after one outcome was counted."""

    id: str
    path: str
    successes: int
    failures: int
    lower_bound: float  # the Wilson lower bound of its success rate (search/track.py)
    warnings: list[str]


OUTCOMES = ("success", "failure")


def outcome(app: App, note_id: str, result: str, freshness: Freshness,
            text: str | None = None) -> Counted:
    """Count one success or failure of a procedure (its frontmatter's `successes` and
    `failures`), with an optional line of what happened; recall ranks procedures by it."""
    from loremap.search.track import lower_bound

    note_id = check_id(note_id.strip())
    if result not in OUTCOMES:
        raise InvalidInput(f"unknown outcome {result!r}: use success or failure")
    warnings = refresh(app, freshness)
    if not any(v.exists(note_id) for v in app.memory.vaults):
        _fetch_shared(app, note_id, warnings)
    note = app.memory.record_outcome(note_id, result == "success", text,
                                     app.settings.get_int("vault.max_note_bytes"))
    vault = app.memory.vault_of(note_id)
    return Counted(note_id, vault.display(vault.path_for(note_id)), note.successes,
                   note.failures, lower_bound(note.successes, note.failures), warnings)


def _fetch_shared(app: App, note_id: str, warnings: list[str]) -> None:
    """Trigger: the note is in the shared database but not in this vault. Why: `list` and
    `search` show it; saying it does not exist would be wrong. Outcome: fetch it here as
    `sync pull` would for that one note (then it is archived or purged like any other)."""
    if _shared_text(app, note_id) is None:
        return
    from loremap.sync.run import Sync

    Sync.of(app.memory, app.user.state).fetch(note_id, warnings)


class Listed(NamedTuple):
    notes: list[IndexedNote]
    warnings: list[str]
    hint: str  # what to do when the list is empty


def list_notes(app: App, freshness: Freshness, types: Sequence[NoteType] = (),
               statuses: Sequence[Status] = ()) -> Listed:
    """The notes, newest first (project and personal), and what to do when there are none."""
    warnings = refresh(app, freshness)
    notes = app.list_notes([t.value for t in types], [s.value for s in statuses])
    return Listed(notes, warnings, "" if notes else _empty_hint(app, bool(types or statuses)))


def _empty_hint(app: App, filtered: bool) -> str:
    if filtered:
        return "no notes match (drop --type/--status to see them all)"
    if app.loremap_dir is None:
        return ("no notes: this is not a loremap project (run `loremap init` in a repository, "
                "or `loremap remember --personal` for a note kept in every project)")
    from loremap.sync.pending import unpushed

    pending = unpushed(app.memory)
    if pending is not None and pending.ids:
        return f"no notes in the shared database {pending.location}: {pending.hint()}"
    return "no notes (write one with `loremap remember`)"
