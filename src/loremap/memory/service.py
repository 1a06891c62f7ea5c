"""The memory service: every change to notes goes through here, file first, then index.

Order of a write: take the vault lock, open the index write transaction (so a locked index
fails before any file changes), write the note file(s) atomically, update the index, commit.
Reading commands first `reconcile()`: files edited by hand or pulled with git are re-read when
their stat changed and re-indexed when their content hash changed; deleted files leave the index.
Every change records one audit entry per note it changed, appended to the vault's chain inside
the index transaction (`recorded`, `memory/written.py`); rebuilding the index records nothing:
it changes no note.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from loremap.audit.chain import ERASE, stamp
from loremap.errors import (
    IndexLocked,
    InvalidInput,
    MalformedNote,
    NotFound,
    SecretFound,
    StoreError,
)
from loremap.memory.batch import Batch, Change, Removal
from loremap.memory.drafts import (
    NO_BODY,
    Draft,
    check_draft,
    check_error_keys,
    check_files,
    clean_files,
    clean_links,
    file_hashes,
    refuse_secrets,
)
from loremap.memory.drafts import redacted as redact_draft
from loremap.memory.imported import Arrival, Gone
from loremap.memory.paths import is_path_target
from loremap.memory.stamps import Changes, stat_signature
from loremap.memory.written import Write, hash_of
from loremap.model import (
    Edge,
    IndexedNote,
    Note,
    NoteStamp,
    NoteType,
    Relation,
    Source,
    Status,
    check_id,
)
from loremap.store import AuditLog, Store
from loremap.text import Analyzer
from loremap.text.signature import command_key, signature
from loremap.vault.fs import read_nofollow, trusted_mtime
from loremap.vault.ids import check_title, new_id
from loremap.vault.layout import LoadedNote, NoteFile, Vault

LOREMAP_NOTES = ".loremap/notes"

Clock = Callable[[], dt.datetime]
# Opens the personal vault's own index (`<cache>/personal-index.sqlite`) for a moment, or
# yields None when there is none to reach (never built, or it is this Memory's own store).
PersonalIndex = Callable[[], contextlib.AbstractContextManager[Store | None]]
_SIGNATURE = "vault.signature"


def guarded(note: Note, text: str) -> Note:
    """`note` as the index may hold it: quarantined when its file holds a credential.

    Trigger: a note file with a credential (written by hand, pulled with git or sync:
    loremap's own writes refuse one). Why: recall would hand it to every agent that asks.
    Outcome: indexed with status quarantined, out of recall; the user's file is left as it is
    and `loremap doctor` names it with the fix.
    """
    if note.status is Status.QUARANTINED or not text:
        return note
    from loremap.vault.secrets import scan

    return note._replace(status=Status.QUARANTINED) if scan(text) else note


OUTCOMES_HEADING = "## Outcomes"
MAX_OUTCOME_TEXT = 2_000  # characters of one outcome's note


def with_outcome(body: str, line: str) -> str:
    """`body` with `line` added to its `## Outcomes` section, the section started at the end
    when the body has none last."""
    lines = body.rstrip().splitlines()
    headings = [i for i, text in enumerate(lines) if text.startswith("## ")]
    if headings and lines[headings[-1]].strip() == OUTCOMES_HEADING:
        return "\n".join([*lines, line])
    return "\n".join([*lines, "", OUTCOMES_HEADING, line]).strip()


def _refuse_secret_reason(reason: str) -> None:
    from loremap.vault.secrets import scan

    found = scan(reason)
    if found:
        raise SecretFound(f"refused: {found[0].kind} in the reason; remove it (nothing was "
                          "changed)")


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Outcome:
    """What a service call did, for the CLI and MCP to report."""

    __slots__ = ("ids", "paths", "warnings", "counts")

    def __init__(self, ids: list[str] | None = None, paths: list[str] | None = None) -> None:
        self.ids: list[str] = ids or []
        self.paths: list[str] = paths or []
        self.warnings: list[str] = []
        self.counts: dict[str, int] = {}


class Memory:
    """Notes of the project vault (if any) and the personal vault, and their index."""

    def __init__(self, store: Store, analyzer: Analyzer, personal: Vault,
                 project: Vault | None = None, repo_root: Path | None = None,
                 commit: Callable[[], str | None] = lambda: None, clock: Clock = utc_now,
                 audit: Callable[[Vault], AuditLog] | None = None,
                 personal_index: PersonalIndex | None = None) -> None:
        self.store = store
        self.analyzer = analyzer
        self.project = project
        self.personal = personal
        self.repo_root = repo_root
        self.commit = commit
        self.clock = clock
        self.audit = audit  # each vault's audit chain (None: nothing recorded)
        # The personal notes' own index when `store` is another one (a project's index, a
        # shared database): an erasure of a personal note reaches it too (`erase`).
        self.personal_index = personal_index

    @property
    def vaults(self) -> list[Vault]:
        """Project first: on an id present in both, the project's note wins."""
        return [v for v in (self.project, self.personal) if v is not None]

    def vault_of(self, note_id: str) -> Vault:
        check_id(note_id)
        for vault in self.vaults:
            if vault.exists(note_id):
                return vault
        raise NotFound(f"no note with id '{note_id}' (try `loremap list` or `loremap search`)")

    def read(self, note_id: str) -> tuple[LoadedNote, Vault]:
        vault = self.vault_of(note_id)
        return vault.read(note_id), vault

    def audit_log(self, vault: Vault) -> AuditLog | None:
        """The audit chain of `vault`'s changes (None when none is kept)."""
        return None if self.audit is None else self.audit(vault)

    @contextlib.contextmanager
    def recorded(self, vaults: Sequence[Vault], write: Write | None = None) -> Iterator[Write]:
        """One index write transaction around a change of `vaults`: the entries the body
        records (`Write.record`) are appended to each vault's chain inside it, after the body,
        and committed with it (on SQLite the chain's own file commits right after the index,
        and a failure there fails the change)."""
        write = Write() if write is None else write
        with contextlib.ExitStack() as stack:
            appends = [(vault.scope, stack.enter_context(log.appending()))
                       for vault in vaults if (log := self.audit_log(vault)) is not None]
            with self.store.write():
                yield write
                when = stamp(self.clock())
                for scope, append in appends:
                    append(write.entries.get(scope, []), when)

    @contextlib.contextmanager
    def _locked(self, vaults: Sequence[Vault]) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for vault in vaults:
                vault.ensure()
                stack.enter_context(vault.lock())
            yield

    # --- reconcile --------------------------------------------------------------------------

    def scan(self) -> list[tuple[Vault, list[NoteFile]]]:
        return [(vault, vault.scan()) for vault in self.vaults]

    def changes(self, indexed: Mapping[str, NoteStamp], warnings: list[str],
                scans: list[tuple[Vault, list[NoteFile]]] | None = None) -> Changes:
        """What differs between the vault files and `indexed`. Unreadable files are skipped
        with a warning (and leave the index)."""
        found = Changes()
        seen = found.seen
        for vault, files in self.scan() if scans is None else scans:
            for file in files:
                if file.id in seen:
                    warnings.append(f"{vault.display(file.path)}: id '{file.id}' also exists in "
                                    f"the {seen[file.id]} vault; this copy is ignored")
                    continue
                row = indexed.get(file.id)
                if (row is not None and row.scope == vault.scope and row.size == file.size
                        and row.mtime_ns == file.mtime_ns):
                    seen[file.id] = vault.scope  # unchanged stat: trust the index
                    continue
                try:
                    loaded = vault.load(file)
                except (MalformedNote, OSError) as exc:
                    warnings.append(f"skipped {exc}" if isinstance(exc, MalformedNote)
                                    else f"skipped {file.path}: {exc.strerror}")
                    continue
                seen[file.id] = vault.scope
                if (row is not None and row.scope == vault.scope
                        and row.content_hash == loaded.content_hash):
                    found.touches.append((file.id, trusted_mtime(loaded.file.mtime_ns),
                                          loaded.file.size))
                else:
                    found.upserts.append(loaded)
        found.deletes = sorted(set(indexed) - set(seen))
        return found

    def _scope_of(self, loaded: LoadedNote) -> tuple[str, str]:
        for vault in self.vaults:
            if loaded.file.directory == vault.notes_dir:
                return vault.scope, vault.display(loaded.file.path)
        raise AssertionError(loaded.file.path)  # pragma: no cover

    def _index(self, loaded: LoadedNote, scanned: bool = False) -> Note:
        """Index one note file (inside a write transaction); the stat signature is void now.
        A file read from the vault is scanned for credentials (`guarded`); one loremap just
        rendered from checked fields (`scanned`) is not scanned a second time. Returns the
        note as indexed."""
        self.store.set_meta(_SIGNATURE, "")
        scope, path = self._scope_of(loaded)
        note = loaded.note if scanned else guarded(loaded.note, loaded.text)
        self.store.upsert_note(note, scope, path,
                               loaded.content_hash,
                               trusted_mtime(loaded.file.mtime_ns), loaded.file.size,
                               loaded.text, edited_ns=loaded.file.mtime_ns)
        return note

    def index_loaded(self, loaded: LoadedNote) -> None:
        """Index one note file just read or written (inside `store.write()`)."""
        self._index(loaded)

    def reconcile(self) -> Outcome:
        """Bring the index in line with the vault files; cheap when nothing changed.

        Every command that reads runs this first. One stat per note file is the floor (an
        editor may rewrite a file in place, which leaves its directory untouched); when the
        stats hash to the signature recorded after the last clean pass, the index rows are not
        even read.

        A shared database is never reconciled with one vault (the other machines' notes are
        not here, and a missing file is not a deletion): `loremap sync` does that, three-way.
        """
        out = Outcome()
        if self.store.shared:
            return out
        scans = self.scan()
        signature = stat_signature(scans)
        if signature is not None and self.store.meta(_SIGNATURE) == signature:
            return out
        probe: list[str] = []
        found = self.changes(self.store.note_stamps(), probe, scans)
        if not found:
            out.warnings = probe
            if signature is not None and not probe:
                self._record_signature(signature)
            return out
        with self._locked(self.vaults), self.recorded(self.vaults) as write:
            scans = self.scan()
            stamps = self.store.note_stamps()
            found = self.changes(stamps, out.warnings, scans)
            for loaded in found.upserts:
                if self._index(loaded).status is not loaded.note.status:
                    # `guarded` took a note holding a credential out of recall: that is a
                    # change of what the memory serves, by whoever's command found it.
                    old = stamps.get(loaded.note.id)
                    write.record(self._scope_of(loaded)[0], "quarantine", loaded.note.id,
                                 "" if old is None else old.content_hash, loaded.content_hash,
                                 detail="holds a credential: kept out of recall")
            for note_id, mtime_ns, size in found.touches:
                self.store.touch_note(note_id, mtime_ns, size)
            for note_id in found.deletes:
                self.store.delete_note(note_id)
            signature = None if out.warnings else stat_signature(scans)
            self.store.set_meta(_SIGNATURE, signature or "")
        out.counts = {"updated": len(found.upserts), "removed": len(found.deletes)}
        return out

    def _record_signature(self, signature: str) -> None:
        """Trigger: the index matched the vault. Why: the next command can skip the row check.
        Outcome: store the stat signature, unless another writer holds the index right now."""
        with contextlib.suppress(IndexLocked), self.store.write():
            self.store.set_meta(_SIGNATURE, signature)

    def rebuild(self, progress: Callable[[int, int], None] | None = None) -> Outcome:
        """Drop the index and rebuild it from the vault files alone (a shared database: from
        the note texts it keeps, which hold the other machines' notes too); `progress(done,
        total)` after each note indexed."""
        if self.store.shared:
            return self._rebuild_shared(progress)
        out = Outcome()
        with self._locked(self.vaults), self.store.write():
            self.store.clear()
            found = self.changes({}, out.warnings)
            for done, loaded in enumerate(found.upserts, start=1):
                self._index(loaded)
                if progress is not None:
                    progress(done, len(found.upserts))
        out.counts = {"indexed": len(found.upserts), "skipped": len(out.warnings)}
        return out

    def _rebuild_shared(self, progress: Callable[[int, int], None] | None) -> Outcome:
        from loremap.store.postgres.store import PostgresStore
        from loremap.vault.frontmatter import parse_note

        store = self.store
        assert isinstance(store, PostgresStore)
        out = Outcome()
        indexed = 0
        with store.write():
            store.clear()
            docs = sorted(store.docs().values())
            for done, doc in enumerate(docs, start=1):
                if progress is not None:
                    progress(done, len(docs))
                if doc.deleted:
                    continue
                try:
                    note = parse_note(doc.text, f"{doc.id} (shared)")
                except MalformedNote as exc:
                    out.warnings.append(f"skipped {exc}")
                    continue
                store.upsert_note(guarded(note, doc.text), "project",
                                  f"{LOREMAP_NOTES}/{doc.id}.md", doc.hash, 0,
                                  len(doc.text.encode("utf-8")))
                indexed += 1
        out.counts = {"indexed": indexed, "skipped": len(out.warnings)}
        return out

    def rewrite(self, vault: Vault, note: Note, op: str, detail: str) -> None:
        """Write an existing note back (after a repair) and index it; recorded as `op`."""
        with self._files_and_index(vault) as write:
            self._index(self._replace_file(vault, note, write, op, detail))

    # --- remember ---------------------------------------------------------------------------

    def _build(self, draft: Draft, note_id: str, now: dt.datetime) -> Note:
        files = clean_files(self.repo_root, draft.files, draft.cwd)
        return Note(
            id=note_id, type=NoteType.parse(draft.type), title=check_title(draft.title),
            body=draft.body.strip(), files=files, links=clean_links(draft.links),
            supersedes=check_id(draft.supersedes) if draft.supersedes else None,
            tags=tuple(dict.fromkeys(t.strip() for t in draft.tags if t.strip())),
            recorded_at=now.strftime("%Y-%m-%dT%H:%M:%SZ"), valid_from=now.date().isoformat(),
            commit=self.commit(), file_hashes=file_hashes(self.repo_root, files),
            source=Source(draft.source), signature=signature(draft.error) or None,
            remedy=draft.remedy or None,
            command=command_key(draft.command) if draft.command else None,
        )

    def taken(self, note_id: str) -> bool:
        """Whether a note has the id `note_id` (a file of a vault, or a shared database's)."""
        return self._taken(note_id)

    def _taken(self, note_id: str) -> bool:
        """An id is taken by a file of a vault, or (in a shared database, which holds the
        other machines' notes too) by a note of the index."""
        return any(v.exists(note_id) for v in self.vaults) or bool(
            self.store.shared and self.store.existing_ids([note_id]))

    def check(self, draft: Draft, label: str, max_body_bytes: int | None = None) -> None:
        """Refuse `draft` before anything is written (drafts.check_draft), naming the field at
        fault as `<label>.<field>`."""
        check_draft(draft, label, self.repo_root, max_body_bytes)

    def remember(self, draft: Draft, personal: bool = False, quarantine: bool = False) -> Outcome:
        """Write a new note (and mark the note it supersedes), then index it."""
        return self.remember_all([draft], personal, quarantine)[0]

    def remember_all(self, drafts: Sequence[Draft], personal: bool = False,
                     quarantine: bool = False) -> list[Outcome]:
        """Write every draft as a new note (and mark the notes they supersede), all or none:
        one vault lock and one index transaction; every id allocated and every file rendered
        before the first file changes; the files renamed as one batch (memory/batch.py); the
        files put back if the index fails to take them or to commit. One outcome per draft."""
        vault = self._target(personal)
        outs = [Outcome() for _ in drafts]
        ready = [self._ready(draft, out, quarantine) for draft, out in zip(drafts, outs,
                                                                             strict=True)]
        with self._files_and_index(vault) as write:
            notes, files = self._plan(vault, ready, outs)
            write.land(Batch(vault, [change for _, change in files]))
            fresh = {note.id for note in notes}  # rendered from fields refuse_secrets passed
            for note, change in files:
                loaded = vault.written(note, change.data)
                self._index(loaded, scanned=note.id in fresh)
                op, detail = ("supersede", f"superseded by {note.superseded_by}")
                if note.id in fresh:
                    op, detail = ("quarantine" if note.status is Status.QUARANTINED
                                  else "remember"), ""
                write.record(vault.scope, op, note.id, hash_of(change.before),
                             loaded.content_hash, note.title, detail)
            for note, out in zip(notes, outs, strict=True):
                self._warn_missing(note, out)
        for note, out in zip(notes, outs, strict=True):
            out.ids.append(note.id)
            out.paths.append(vault.display(vault.path_for(note.id)))
        return outs

    @contextlib.contextmanager
    def _files_and_index(self, vault: Vault) -> Iterator[Write]:
        """The vault's lock and one index transaction (`recorded`) around file batches
        applied inside: when the transaction fails (the COMMIT included, and the audit
        records'), the batches are undone before the error goes on, so "nothing was written"
        holds for the files too."""
        write = Write()
        with self._locked([vault]):
            try:
                with self.recorded([vault], write):
                    yield write
            except BaseException as exc:
                for batch in reversed(write.batches):
                    batch.undo()
                if write.batches and isinstance(exc, StoreError):
                    raise StoreError(f"{exc} (the note files were put back as they were)"
                                     ) from None
                raise
            for batch in write.batches:
                batch.finish()

    def _replace_file(self, vault: Vault, note: Note, write: Write, op: str, detail: str = ""
                      ) -> LoadedNote:
        """Write `note` over its existing file as a batch of `_files_and_index`, recorded as
        `op`."""
        return self._replace_files(vault, [note], write, [(op, detail)])[0]

    def _replace_files(self, vault: Vault, notes: Sequence[Note], write: Write,
                       records: Sequence[tuple[str, str]]) -> list[LoadedNote]:
        """Write `notes` over their existing files as one batch of `_files_and_index` (all of
        them land, or none), each recorded as its (operation, detail) of `records`."""
        changes = [Change(note.id, vault.render(note), read_nofollow(vault.path_for(note.id))[0])
                   for note in notes]
        write.land(Batch(vault, changes))
        loaded = [vault.written(note, change.data)
                  for note, change in zip(notes, changes, strict=True)]
        for note, change, done, (op, detail) in zip(notes, changes, loaded, records,
                                                    strict=True):
            write.record(vault.scope, op, note.id, hash_of(change.before), done.content_hash,
                         note.title, detail)
        return loaded

    def record_refusal(self, operation: str, why: str) -> None:
        """An audit record of a write refused to its caller (`use/access.py`): no note
        changed, the operation and why as its payload."""
        vault = self._target(False)
        with self.recorded([vault]) as write:
            write.record(vault.scope, "refused", "", "", "", operation, why)

    def _target(self, personal: bool) -> Vault:
        if not personal and self.project is None:
            raise InvalidInput("not in a loremap project: run `loremap init`, or pass --personal")
        vault = self.personal if personal else self.project
        assert vault is not None
        return vault

    def _ready(self, draft: Draft, out: Outcome, quarantine: bool) -> tuple[Draft, bool]:
        """`draft` checked (and, with `quarantine`, redacted) before anything is locked."""
        NoteType.parse(draft.type)
        check_title(draft.title)
        if not draft.body.strip():
            raise InvalidInput(NO_BODY)
        if draft.supersedes:
            check_id(draft.supersedes)
        check_error_keys(draft, None)
        check_files(self.repo_root, draft.files, draft.cwd, out.warnings)
        if quarantine:  # before the id is made: the title must not leak into the file name
            return redact_draft(draft, out.warnings)
        refuse_secrets(draft)  # before the id too: a key in a title is no file name
        return draft, False

    def _plan(self, vault: Vault, ready: Sequence[tuple[Draft, bool]], outs: Sequence[Outcome]
              ) -> tuple[list[Note], list[tuple[Note, Change]]]:
        """The new notes of a batch with their ids, and every file they change (rendered, so
        a refusal comes before any file changes). A note superseded by an earlier fact of the
        same batch, or twice in it, is written once, as the last fact leaves it."""
        now = self.clock()
        ids: list[str] = []
        pending: dict[str, Note] = {}  # every file of the batch, as it will be written
        before: dict[str, bytes | None] = {}  # the bytes each replaces (None: a new note)
        for (draft, redacted), out in zip(ready, outs, strict=True):
            note = self._allocate(vault, draft, now, pending)
            if redacted:
                note = note._replace(status=Status.QUARANTINED)
            old = self._superseded(vault, note, now, out, pending)
            pending[note.id], before[note.id] = note, None
            if old is not None:
                out.counts["superseded"] = 1
                if old.id not in before:
                    before[old.id] = read_nofollow(vault.path_for(old.id))[0]
                pending[old.id] = old
            ids.append(note.id)
        files = [(n, Change(n.id, vault.render(n), before[n.id])) for n in pending.values()]
        return [pending[i] for i in ids], files

    def _allocate(self, vault: Vault, draft: Draft, now: dt.datetime,
                  pending: Mapping[str, Note]) -> Note:
        """The note of `draft` under a fresh id (none of a vault, the database or `pending`)."""
        reused: list[Note] = []

        def taken(candidate: str) -> bool:
            if candidate in pending:
                return True
            if not self._taken(candidate):
                return False
            same = self._lost_write(vault, candidate, draft, now)
            if same is not None:
                reused.append(same)
            return same is None

        note_id = new_id(NoteType.parse(draft.type), draft.title, taken)
        if reused and reused[-1].id == note_id:
            return reused[-1]
        return self._build(draft, note_id, now)

    def _lost_write(self, vault: Vault, note_id: str, draft: Draft, now: dt.datetime
                    ) -> Note | None:
        """Trigger: a shared database holds a note `note_id` that no vault file has, with the
        same type, title, body, files, links, tags and source as `draft`.
        Why: that is a write whose commit landed but whose answer was lost (its files were put
          back); a retry must not make a `-2` duplicate of it.
        Outcome: the database's note, to be written back under its own id."""
        if not self.store.shared or vault is not self.project or any(
                v.exists(note_id) for v in self.vaults):
            return None
        from loremap.store.postgres.store import PostgresStore
        from loremap.vault.frontmatter import parse_note

        store = self.store
        assert isinstance(store, PostgresStore)
        doc = store.doc(note_id)
        if doc is None or doc.deleted:
            return None
        try:
            stored = parse_note(doc.text, f"{note_id} (shared)")
        except MalformedNote:
            return None
        wanted = self._build(draft, note_id, now)
        key = ("type", "title", "body", "files", "links", "supersedes", "tags", "source")
        same = all(getattr(stored, k) == getattr(wanted, k) for k in key)
        return stored if same and stored.status is not Status.SUPERSEDED else None

    def _superseded(self, vault: Vault, note: Note, now: dt.datetime, out: Outcome,
                    pending: Mapping[str, Note]) -> Note | None:
        """The note `note` supersedes, marked so (`pending`: the batch's notes so far)."""
        if not note.supersedes:
            return None
        old = pending.get(note.supersedes)
        if old is None:
            if not vault.exists(note.supersedes):
                out.warnings.append(f"supersedes '{note.supersedes}', which is not in the "
                                    f"{vault.scope} vault; kept as a reference")
                return None
            old = vault.read(note.supersedes).note
        if old.status is Status.SUPERSEDED and old.superseded_by:
            out.warnings.append(f"'{old.id}' was already superseded by '{old.superseded_by}'; "
                                f"now by '{note.id}'")
        return old._replace(status=Status.SUPERSEDED, superseded_by=note.id,
                            valid_to=now.date().isoformat())

    def _warn_missing(self, note: Note, out: Outcome) -> None:
        for rel, target in note.targets():
            if rel == Relation.SUPERSEDES.value:
                continue
            if is_path_target(target):
                if self.repo_root is not None and not (self.repo_root / target).exists():
                    out.warnings.append(f"link {rel} -> {target}: no such path in the repository")
            elif not self._taken(target):
                out.warnings.append(f"link {rel} -> {target}: no such note yet (kept; "
                                    "`loremap doctor` lists broken links)")
        if note.remedy and not self._taken(note.remedy):
            out.warnings.append(f"remedy {note.remedy}: no such note yet (kept; the hooks name "
                                "it once it exists)")

    # --- import -------------------------------------------------------------------------------

    def import_notes(self, arrivals: Sequence[Arrival], removals: Sequence[Gone],
                     personal: bool = False,
                     progress: Callable[[int, int], None] | None = None) -> Outcome:
        """Write the notes of an import (`imports/run.py` decided their ids, links and
        supersessions) and archive the ones whose origin the source deleted, all or none: one
        vault lock, one index transaction, one batch of files, one audit record `import` per
        note changed. A note whose file would be the same bytes is not written; an id that
        became another note's since the import planned it is a conflict (nothing written)."""
        from loremap.errors import Conflict
        from loremap.memory.imported import imported_note

        vault = self._target(personal)
        out = Outcome()
        now = self.clock()
        today = now.date().isoformat()
        with self._files_and_index(vault) as write:
            changes: list[tuple[Note, Change, str]] = []
            for arrival in arrivals:
                before, data = self._imported_before(vault, arrival.id, arrival.tool,
                                                     arrival.origin)
                if data is not None and before is None:
                    raise Conflict(f"'{arrival.id}' is now another note's id (written since the "
                                   "import planned it); run the import again")
                built = self._build(arrival.draft, arrival.id, now)
                note = imported_note(built, arrival, before, today)
                rendered = vault.render(note)
                if rendered != data:
                    changes.append((note, Change(note.id, rendered, data),
                                    "new" if data is None else "updated"))
            for removal in removals:
                before, data = self._imported_before(vault, removal.id, removal.tool,
                                                     removal.origin)
                if before is None or before.status is Status.ARCHIVED:
                    continue
                gone = before._replace(status=Status.ARCHIVED,
                                       archived_reason=f"deleted in {removal.tool}")
                changes.append((gone, Change(gone.id, vault.render(gone), data), "archived"))
            if changes:
                write.land(Batch(vault, [change for _, change, _ in changes]))
            for done, (note, change, how) in enumerate(changes, start=1):
                loaded = vault.written(note, change.data)
                self._index(loaded, scanned=True)  # rendered from checked (redacted) fields
                write.record(vault.scope, "import", note.id, hash_of(change.before),
                             loaded.content_hash, note.title,
                             f"{how} from {note.origin_tool}: {note.origin}")
                out.ids.append(note.id)
                out.paths.append(vault.display(vault.path_for(note.id)))
                out.counts[how] = out.counts.get(how, 0) + 1
                if progress is not None:
                    progress(done, len(changes))
        return out

    def _imported_before(self, vault: Vault, note_id: str, tool: str, origin: str
                         ) -> tuple[Note | None, bytes | None]:
        """The note under `note_id` if it was imported from (`tool`, `origin`), and its
        file's bytes (None: no file)."""
        if not vault.exists(note_id):
            return None, None
        loaded = vault.read(note_id)  # (strict UTF-8: its text encodes back to the file's bytes)
        note = loaded.note
        same = note.origin_tool == tool and note.origin == origin
        return (note if same else None), loaded.text.encode("utf-8")

    # --- read, list, search, forget ---------------------------------------------------------

    def aliased(self, name: str) -> str | None:
        """The id of the note that has `name` among its aliases (an imported note's old id),
        project vault first; None when none has. Reads every note file: it is asked only when
        nothing has that id or path."""
        name = name.strip()
        for vault in self.vaults:
            if not vault.notes_dir.is_dir():
                continue
            for file in vault.scan():
                try:
                    note = vault.load(file).note
                except (MalformedNote, OSError):
                    continue
                if name in note.aliases:
                    return note.id
        return None

    def linked_from(self, note_id: str) -> list[Edge]:
        """The edges of other nodes pointing at the note."""
        return [e for e in self.store.edges(note_id) if e.dst == note_id and e.src != note_id]

    def list_notes(self, types: Sequence[str] = (), statuses: Sequence[str] = ()
                   ) -> list[IndexedNote]:
        return self.store.list_notes([NoteType.parse(t).value for t in types],
                                     [Status.parse(s).value for s in statuses])

    def record_outcome(self, note_id: str, success: bool, text: str | None = None,
                       max_body_bytes: int | None = None) -> Note:
        """Count one success or failure of the procedure `note_id` in its frontmatter (under
        the vault lock: two reports at once both count), `text` added to its `## Outcomes`
        section with the day; returns the note as written."""
        vault = self.vault_of(note_id)
        line = None
        if text is not None and text.strip():
            text = " ".join(text.split())
            if len(text) > MAX_OUTCOME_TEXT:
                raise InvalidInput(f"the outcome's note is {len(text):,} characters; keep it "
                                   f"under {MAX_OUTCOME_TEXT:,} (nothing was changed)")
            from loremap.vault.secrets import scan

            found = scan(text)
            if found:
                raise SecretFound(f"refused: {found[0].kind} in the outcome's note; remove it "
                                  "(nothing was changed)")
            day = self.clock().date().isoformat()
            line = f"- {day} {'success' if success else 'failure'}: {text}"
        with self._files_and_index(vault) as write:
            note = vault.read(note_id).note
            if note.type is not NoteType.PROCEDURE:
                raise InvalidInput(f"'{note_id}' is a {note.type.value}: outcomes are recorded "
                                   "on procedures (nothing was changed)")
            if note.status is not Status.ACTIVE:
                raise InvalidInput(f"'{note_id}' is {note.status.value}: record the outcome on "
                                   "the procedure that replaced it (nothing was changed)")
            body = note.body
            if line is not None:
                body = with_outcome(body, line)
                if max_body_bytes is not None and len(body.encode("utf-8")) > max_body_bytes:
                    raise InvalidInput(f"'{note_id}' would be over vault.max_note_bytes "
                                       f"({max_body_bytes:,}) with this note; record the "
                                       "outcome without one (nothing was changed)")
            counted = note._replace(body=body, successes=note.successes + int(success),
                                    failures=note.failures + int(not success))
            said = "success" if success else "failure"
            self._index(self._replace_file(vault, counted, write, "outcome",
                                           f"{said}: {text}" if line is not None else said))
        return counted

    def merge(self, keep_id: str, copy_id: str) -> Note:
        """Fold the note `copy_id` into `keep_id`, both files in one batch: the copy's title
        becomes an alias of the kept note (a search for it still finds it), its files, tags
        and links join the kept note's, the higher of each outcome counter is kept (never the
        sum: a copy is often a re-import), and the copy is superseded by the kept note.
        Returns the kept note as written."""
        vault = self.vault_of(keep_id)
        if not vault.exists(copy_id):
            raise InvalidInput(f"'{keep_id}' and '{copy_id}' are not in the same vault")
        now = self.clock()
        with self._files_and_index(vault) as write:
            keep, copy = vault.read(keep_id).note, vault.read(copy_id).note
            for note in (keep, copy):
                if note.status is not Status.ACTIVE:
                    raise InvalidInput(f"'{note.id}' is {note.status.value}: only active notes "
                                       "are merged (nothing was changed)")
            aliases = [*keep.aliases, *(t for t in (copy.title, *copy.aliases)
                                        if t != keep.title)]
            kept = keep._replace(
                aliases=tuple(dict.fromkeys(aliases)),
                files=tuple(dict.fromkeys((*keep.files, *copy.files))),
                tags=tuple(dict.fromkeys((*keep.tags, *copy.tags))),
                links=tuple(dict.fromkeys(link for link in (*keep.links, *copy.links)
                                          if link.target not in (keep.id, copy.id))),
                file_hashes={**copy.file_hashes, **keep.file_hashes},
                successes=max(keep.successes, copy.successes),
                failures=max(keep.failures, copy.failures))
            gone = copy._replace(status=Status.SUPERSEDED, superseded_by=keep.id,
                                 valid_to=now.date().isoformat())
            for loaded in self._replace_files(vault, [kept, gone], write,
                                              [("merge", f"absorbed {copy.id}"),
                                               ("merge", f"merged into {keep.id}")]):
                self._index(loaded)
        return kept

    def erase(self, note_id: str, reason: str) -> Outcome:
        """Erase a note completely (`forget --erase`): its file, its index rows, on a shared
        database every text it had (a tombstone that says erased, with id and hash, is all
        that stays), the quotes of it beside the notes (`vault/erasure.py`), and the payloads
        of its audit records (the `erase` record appended deletes them: `store/*/audit.py`).
        A note only in the shared database (not pulled here) is erased there."""
        check_id(note_id)
        if not reason or not reason.strip():
            raise InvalidInput("--erase needs --reason: say why the note is erased (it is "
                               "kept in the audit record; nothing was changed)")
        _refuse_secret_reason(reason)
        vault = next((v for v in self.vaults if v.exists(note_id)), None)
        texts = self._known_texts(note_id, vault)
        if vault is None and not texts:
            raise NotFound(f"no note with id '{note_id}' to erase (try `loremap list`); "
                           "nothing was changed")
        vault = vault or self._target(False)
        out = Outcome(ids=[note_id], paths=[vault.display(vault.path_for(note_id))])
        with self._files_and_index(vault) as write:
            removal = Removal(vault, note_id)
            write.land(removal)
            self.store.set_meta(_SIGNATURE, "")
            if not (self.store.shared and vault is self.personal):
                self.store.erase_note(note_id)  # (a personal note never enters a database)
            write.record(vault.scope, ERASE, note_id, hash_of(removal.before), "",
                         detail=reason)
        out.warnings += self.store.compact()
        if vault is self.personal:
            out.warnings += self._erase_from_personal_index(note_id)
        out.paths += self.scrub(note_id, texts)
        out.counts = {"erased": 1}
        return out

    def _erase_from_personal_index(self, note_id: str) -> list[str]:
        """Trigger: a personal note erased through an index that is not the personal vault's
        own (a project's, a shared database). Why: that index (`<cache>/personal-index.sqlite`,
        read outside any project and beside a shared database) holds the note's rows too, and
        would until a `reindex` outside the project. Outcome: its rows erased there as here
        (`secure_delete`, the FTS index merged) and the file compacted; a warning when it
        cannot be reached (locked, unreadable), and the note's file is gone all the same."""
        if self.personal_index is None:
            return []
        try:
            with self.personal_index() as store:
                if store is None:
                    return []
                with store.write():
                    store.set_meta(_SIGNATURE, "")
                    store.erase_note(note_id)
                return store.compact()
        except StoreError as exc:
            return [f"the personal index could not erase the note ({exc}): it may "
                    "hold its text until `loremap reindex` is run outside any project"]

    def _known_texts(self, note_id: str, vault: Vault | None) -> list[str]:
        """Every text of the note this clone can read: its file's, and on a shared database
        its current text and every earlier version (an erased tombstone has none)."""
        texts = []
        if vault is not None:
            with contextlib.suppress(OSError, StoreError):
                texts.append(read_nofollow(vault.path_for(note_id))[0].decode("utf-8", "replace"))
        if self.store.shared and vault is not self.personal:
            from loremap.store.postgres.store import PostgresStore

            store = self.store
            assert isinstance(store, PostgresStore)
            doc = store.doc(note_id)
            if doc is not None and not doc.erased:
                texts += [doc.text, *(kept.text for kept in store.versions(note_id))]
        return [text for text in texts if text]

    def scrub(self, note_id: str, texts: Sequence[str]) -> list[str]:
        """Remove the quotes of the erased note's `texts` from the project's handoffs, session
        files and logs; the files changed."""
        if self.project is None:
            return []
        from loremap.vault.erasure import Quotes, scrub
        from loremap.vault.frontmatter import parse_note

        titles: list[str] = []
        bodies: list[str] = []
        for text in texts:
            try:
                note = parse_note(text, note_id)
            except MalformedNote:
                bodies.append(text)
                continue
            titles += [note.title, *note.aliases]
            bodies.append(note.body)
        return scrub(self.project.root, Quotes(note_id, titles, bodies))

    def forget(self, note_id: str, reason: str | None = None, purge: bool = False) -> Outcome:
        """Archive a note (kept, out of search), or with `purge` delete its file and rows."""
        vault = self.vault_of(note_id)
        out = Outcome(ids=[note_id], paths=[vault.display(vault.path_for(note_id))])
        if reason:
            _refuse_secret_reason(reason)
        with self._files_and_index(vault) as write:
            if purge:
                removal = Removal(vault, note_id)
                write.land(removal)
                write.record(vault.scope, "purge", note_id, hash_of(removal.before), "",
                             detail=reason or "")
                self.store.set_meta(_SIGNATURE, "")
                if not (self.store.shared and vault is self.personal):
                    # A personal note is never in a shared database; the same id there is
                    # a project's note, which this must not delete.
                    self.store.delete_note(note_id)
                out.counts = {"purged": 1}
                return out
            note = vault.read(note_id).note
            if note.status is Status.ARCHIVED:
                out.warnings.append(f"'{note_id}' was already archived")
            archived = note._replace(status=Status.ARCHIVED,
                                           archived_reason=reason or note.archived_reason)
            try:
                self._index(self._replace_file(vault, archived, write, "archive",
                                               reason or ""))
            except SecretFound as exc:
                raise SecretFound(f"{exc} (edit the file by hand first)") from None
            out.counts = {"archived": 1}
        return out
