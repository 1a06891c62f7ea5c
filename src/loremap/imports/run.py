"""The one import path: what a reader yields becomes notes, every importer alike.

`run_import(app, tool, entries)` takes the `Item`s, `Skipped`s and `Deleted`s of a reader
(`imports/rubi.py`, `imports/basic_memory.py`, `imports/cuba.py`) and:

1. reconciles the index with the note files, then finds the notes this tool's earlier imports
   wrote (`source: import:<tool>`, `origin`), project and personal vault alike;
2. gives each item its id: the one its origin already has here, else the slug it asks for when
   that is a free, valid id, else a generated one (`<type>-<title>`), the slug kept as an alias
   so a search or a `read` of the old name still finds it;
3. resolves each link, supersession and remedy given as an origin id (or a note id, or a
   repository path); one to nothing is dropped with a line saying so;
4. checks each item as a written note is checked (`drafts.check_draft`), after the secret scan
   (`drafts.redacted`): a secret is redacted and the note quarantined, never stored in clear;
   an item that fails is skipped with the reason, the rest imported;
5. compares each item's digest with the one its note recorded: equal, nothing is written; a
   `Deleted` archives the note imported from its origin (and is silent when there is none);
6. writes through `Memory.import_notes` (one batch per vault, one audit record per change), or
   with `dry_run` reports what it would write and writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple

from loremap.errors import InvalidInput, SecretFound
from loremap.imports.items import Deleted, Item, Skipped
from loremap.imports.report import Planned, Report
from loremap.memory.drafts import Draft, check_draft, redacted
from loremap.memory.imported import Arrival, Gone
from loremap.memory.paths import check_path_target, is_path_target
from loremap.model import Note, NoteType, Status
from loremap.model.note import ID_PATTERN, IMPORT_TOOL

if TYPE_CHECKING:
    from loremap.app import App

Entry = Item | Skipped | Deleted
LARGE = 100  # notes to write from which an import draws its progress bar
_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}:\d{2})(?:\.\d+)?(Z|[+-]00:?00)?)?")


class _Known(NamedTuple):
    """A note an earlier import of the tool wrote."""

    note: Note
    personal: bool


def run_import(app: App, tool: str, entries: Iterable[Entry], dry_run: bool = False,
               progress: Callable[[int, int], None] | None = None) -> Report:
    """Import what a reader yields (module docstring); `progress(done, total)` as notes land."""
    if not IMPORT_TOOL.fullmatch(tool):
        raise InvalidInput(f"unknown importer name {tool!r}")
    warnings = app.take_notices() + app.reconcile()
    items, skipped, deleted = _collect(entries)
    if any(not item.personal for item in items) and app.memory.project is None:
        raise InvalidInput("not in a loremap project: run `loremap init` in the repository "
                           "first (nothing was imported)")
    known = _known(app, tool, warnings)
    _pulled(app, tool, known)
    ids = _ids(app, items, known)
    plan, unchanged = _plan(app, items, ids, known, skipped, warnings)
    removals = [(origin, known[origin]) for origin in dict.fromkeys(d.origin for d in deleted)
                if origin in known and known[origin].note.status is not Status.ARCHIVED]
    notes = [Planned(a.id, a.draft.type, a.draft.title, how, i.personal) for i, a, how in plan]
    notes += [Planned(k.note.id, k.note.type.value, k.note.title, "archived", k.personal)
              for _, k in removals]
    if not dry_run:
        for personal in (False, True):
            wanted = [a for i, a, _ in plan if i.personal is personal]
            gone = [Gone(k.note.id, tool, o) for o, k in removals if k.personal is personal]
            if wanted or gone:
                app.memory.import_notes(wanted, gone, personal=personal,
                                        progress=progress if len(plan) >= LARGE else None)
    return Report(tool, dry_run, notes, unchanged, skipped, warnings)


def _collect(entries: Iterable[Entry]) -> tuple[list[Item], list[Skipped], list[Deleted]]:
    """The reader's entries by kind; an origin seen twice is skipped the second time, and an
    origin the source deleted is not imported."""
    items: dict[str, Item] = {}
    skipped: list[Skipped] = []
    deleted: list[Deleted] = []
    for entry in entries:
        if isinstance(entry, Skipped):
            skipped.append(entry)
        elif isinstance(entry, Deleted):
            deleted.append(entry)
        elif entry.origin in items:
            skipped.append(Skipped(entry.where, f"the origin id {entry.origin!r} is also "
                                   f"{items[entry.origin].where}'s: only the first is imported",
                                   entry.origin))
        else:
            items[entry.origin] = entry
    gone = {d.origin for d in deleted}
    return [i for i in items.values() if i.origin not in gone], skipped, deleted


def _known(app: App, tool: str, warnings: list[str]) -> dict[str, _Known]:
    """origin -> the note an earlier import of `tool` wrote, from the vault files."""
    from loremap.errors import MalformedNote

    out: dict[str, _Known] = {}
    for vault in app.memory.vaults:
        for file in vault.scan():
            try:
                note = vault.load(file).note
            except (MalformedNote, OSError):
                continue  # reconcile has said so already
            if note.origin_tool == tool and note.origin and note.origin not in out:
                out[note.origin] = _Known(note, vault is app.memory.personal)
    return out


def _pulled(app: App, tool: str, known: dict[str, _Known]) -> None:
    """Refuse an import on a shared database that holds notes an import from `tool` wrote
    elsewhere and this clone has not pulled: they would be imported a second time."""
    if not app.shared:
        return
    from loremap.store.postgres.store import PostgresStore

    store = app.store
    assert isinstance(store, PostgresStore)
    here = {k.note.id for k in known.values()}
    marker = f"\nsource: import:{tool}\n"
    missing = [doc.id for doc in store.docs().values()
               if not doc.deleted and marker in doc.text and doc.id not in here]
    if missing:
        raise InvalidInput(f"the shared database holds {len(missing)} notes imported from "
                           f"{tool} that this clone has not pulled (e.g. {missing[0]}): run "
                           "`loremap sync pull` first (nothing was imported)")


def _ids(app: App, items: list[Item], known: dict[str, _Known]) -> dict[str, str]:
    """origin -> the loremap id each item lands under."""
    ids: dict[str, str] = {o: k.note.id for o, k in known.items()}
    ours = set(ids.values())
    used = set(ours)

    def taken(candidate: str) -> bool:
        return candidate in used or app.memory.taken(candidate)

    for item in items:
        if item.origin in ids:
            continue
        slug = item.slug
        if slug and ID_PATTERN.fullmatch(slug) and "--" not in slug and not taken(slug) \
                and not _secret(slug):
            note_id = slug
        else:
            try:
                note_id = _new_id(item, taken)
            except InvalidInput:
                continue  # the item is skipped with the reason by _arrival
        ids[item.origin] = note_id
        used.add(note_id)
    return ids


def _new_id(item: Item, taken: Callable[[str], bool]) -> str:
    """`<type>-<title>`, from the title with any secret redacted (a key is no file name)."""
    from loremap.vault.ids import new_id
    from loremap.vault.secrets import redact, scan

    found = scan(item.title)
    title = redact(item.title, found) if found else item.title
    return new_id(NoteType.parse(item.type), title, taken)


def _target(target: str, ids: dict[str, str], app: App) -> str | None:
    """A link target as loremap names it: an origin's id, a note id, or a repository path."""
    if target in ids:
        return ids[target]
    if is_path_target(target):
        return target if _in_repository(target, app) else None
    if ID_PATTERN.fullmatch(target) and app.memory.taken(target):
        return target
    return None


def _plan(app: App, items: list[Item], ids: dict[str, str], known: dict[str, _Known],
          skipped: list[Skipped], warnings: list[str]
          ) -> tuple[list[tuple[Item, Arrival, str]], int]:
    """The arrivals to write, each with `new` or `updated`, and how many are unchanged.

    An item whose digest (over its fields with every id resolved, before any check) equals
    the one its note recorded is unchanged: it was checked when that note was written. The
    others are checked as a written note; when one fails, the plan is made again without it,
    so no link or supersession points at a note that is not there."""
    live = dict(ids)
    failures: list[Skipped] = []
    while True:
        lines: list[Skipped] = []
        notices: list[str] = []
        raw = []
        for item in items:
            arrival = _resolved(app, item, live, lines, failures)
            if arrival is not None:
                raw.append((item, arrival))
        plan, unchanged, failed = [], 0, []
        for item, arrival in _chains(raw, live, lines):
            before = known.get(item.origin)
            if before is not None and before.note.origin_digest == arrival.digest:
                unchanged += 1
                continue
            checked = _checked(app, item, arrival, failures, notices)
            if checked is None:
                failed.append(item.origin)
                continue
            if before is not None and before.note.origin_digest == checked.digest:
                unchanged += 1  # a quarantined note: its digest is of the redacted text
                continue
            plan.append((item, checked, "new" if before is None else "updated"))
        if not failed:
            skipped += failures + lines
            warnings += notices
            return plan, unchanged
        for origin in failed:
            live.pop(origin, None)
        items = [item for item in items if item.origin not in failed]


def _resolved(app: App, item: Item, ids: dict[str, str], lines: list[Skipped],
              failures: list[Skipped]) -> Arrival | None:
    """The item's arrival with its links, files and remedy resolved, not yet checked (None:
    it has no id, or a status loremap has no word for)."""
    where = item.where or item.origin
    if item.origin not in ids:
        if not any(f.origin == item.origin for f in failures):
            try:
                NoteType.parse(item.type)
                why = f"no id can be made from the title {item.title!r}"
            except InvalidInput as exc:
                why = str(exc)
            failures.append(Skipped(where, why, item.origin))
        return None
    links: list[tuple[str, str]] = []
    for rel, target in item.links:
        resolved = _target(target, ids, app)
        if resolved is None:
            lines.append(Skipped(where, f"link {rel} -> {target}: no such note or path in "
                                 "the source (the link is left out)", item.origin))
        elif resolved != ids[item.origin]:
            links.append((rel, resolved))
    files = []
    for path in item.files:
        if is_path_target(path) and _in_repository(path, app):
            files.append(path)
        else:
            lines.append(Skipped(where, f"file {path}: not in this repository (left out of "
                                 "the note's files)", item.origin))
    remedy = None
    if item.remedy:
        remedy = _target(item.remedy, ids, app)
        if remedy is None or is_path_target(remedy):
            lines.append(Skipped(where, f"remedy {item.remedy}: no such note in the source",
                                 item.origin))
            remedy = None
    error = item.type == NoteType.ERROR.value
    draft = Draft(type=item.type, title=item.title, body=item.body, files=files,
                  links=list(dict.fromkeys(links)), tags=list(item.tags), source="import",
                  error=item.error if error else "", remedy=remedy if error else None)
    try:
        status = Status.parse(item.status)
    except InvalidInput as exc:
        failures.append(Skipped(where, str(exc), item.origin))
        return None
    aliases = tuple(a for a in (*item.aliases, *((item.slug,) if item.slug else ()))
                    if a and a != ids[item.origin] and not _secret(a))
    return Arrival(draft, ids[item.origin], item.tool, item.origin, "", status,
                   aliases=aliases, recorded_at=_time(item.recorded_at),
                   commit=item.commit if item.commit and not _secret(item.commit) else None,
                   successes=max(item.successes, 0), failures=max(item.failures, 0))


def _checked(app: App, item: Item, arrival: Arrival, failures: list[Skipped],
             notices: list[str]) -> Arrival | None:
    """`arrival` checked as a written note is (`drafts.check_draft`: type, title, body, size,
    secrets); a secret is redacted and the note quarantined (None: it fails, with the
    reason in `failures`)."""
    where = item.where or item.origin
    limit = app.settings.get_int("vault.max_note_bytes")
    repo = app.memory.repo_root
    try:
        if _secret(item.origin):
            raise InvalidInput("its id in the source looks like a credential: not imported "
                               "(the id would be written in clear)")
        try:
            check_draft(arrival.draft, "item", repo, limit)  # one scan when there is no secret
        except SecretFound:
            said: list[str] = []
            draft, _ = redacted(arrival.draft, said)
            check_draft(draft, "item", repo, limit)
            notices.append(f"{where}: {said[-1]}")
            done = arrival._replace(draft=draft, status=Status.QUARANTINED)
            return done._replace(digest=_digest(done))
    except (InvalidInput, SecretFound) as exc:
        if not any(f.origin == item.origin for f in failures):
            failures.append(Skipped(where, str(exc).replace("item.", ""), item.origin))
        return None
    return arrival


def _in_repository(path: str, app: App) -> bool:
    """`path` is a file or folder of this repository (never `..`, absolute or `~`: the rule
    of a link's path, `check_path_target`)."""
    try:
        check_path_target(path)
    except InvalidInput:
        return False
    root = app.memory.repo_root
    return root is not None and (root / path).exists()


def _secret(text: str) -> bool:
    from loremap.vault.secrets import scan

    return bool(scan(text))


def _time(value: str | None) -> str | None:
    """An ISO date or UTC time as loremap writes it (`2026-03-01T00:00:00Z`), else None."""
    match = _TIME.fullmatch(value.strip()) if value else None
    if match is None:
        return None
    return f"{match[1]}T{match[2] or '00:00:00'}Z"


def _chains(checked: list[tuple[Item, Arrival]], ids: dict[str, str],
            skipped: list[Skipped]) -> list[tuple[Item, Arrival]]:
    """Each arrival with its supersession resolved among the items (the replaced note marked
    superseded by its successor) and its digest."""
    by_id = {arrival.id: arrival for _, arrival in checked}
    successor: dict[str, str] = {}
    supersedes: dict[str, str] = {}
    for item, arrival in checked:
        if not item.supersedes:
            continue
        old = ids.get(item.supersedes)
        if old is None or old not in by_id or old == arrival.id:
            skipped.append(Skipped(item.where or item.origin, f"supersedes {item.supersedes}: "
                                   "no such note in the source (kept as a plain note)",
                                   item.origin))
            continue
        supersedes[arrival.id] = old
        successor[old] = arrival.id
    out = []
    for item, arrival in checked:
        draft = arrival.draft._replace(supersedes=supersedes.get(arrival.id))
        status = arrival.status
        newer = successor.get(arrival.id)
        if newer is not None and status is Status.ACTIVE:
            status = Status.SUPERSEDED
        done = arrival._replace(draft=draft, status=status, superseded_by=newer)
        out.append((item, done._replace(digest=_digest(done))))
    return out


def _digest(arrival: Arrival) -> str:
    """SHA-256 over everything an arrival writes: the same digest, the same note."""
    d = arrival.draft
    fields = [d.type, d.title, d.body, list(d.files), [list(x) for x in d.links], d.supersedes,
              list(d.tags), d.error, d.remedy, arrival.id, arrival.status.value,
              arrival.superseded_by, list(arrival.aliases), arrival.recorded_at, arrival.commit,
              arrival.successes, arrival.failures]
    return hashlib.sha256(json.dumps(fields, ensure_ascii=False).encode("utf-8")).hexdigest()
