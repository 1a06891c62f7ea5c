"""Apply a sync plan: the database side in one transaction, then the files, then the base.

Order of a push or a pull (a dry run or `status` stops after step 4 and takes no lock):

1. take the vault's lock (loremap's writes here wait; a second sync on this machine too);
2. hash every note file and read the base;
3. open the database's write transaction (the project's advisory lock: the other machines'
   writes wait) and read every shared text, tombstones included;
4. plan (`plan.py`), refuse a mass deletion without `--confirm`, and check every text that
   would cross over: a malformed file or one holding a secret is never uploaded, a database
   text that does not parse (or holds a secret) is never written into the repository;
5. make the database's changes (uploads through the index, tombstones, the losers of
   conflicts kept as previous versions), append one audit record per note that moves (the
   project's chain, in the same transaction: `Memory.recorded`) and commit: a lost connection
   rolls all of them back, and nothing below runs;
6. write and delete the note files, each atomically;
7. record in the base what landed on both sides.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from loremap.errors import (
    Conflict,
    InvalidInput,
    MalformedNote,
    NotFound,
    UnsafePath,
    UserError,
)
from loremap.model import Note, check_id
from loremap.sync.merge_base import Base, base_path
from loremap.sync.plan import (
    CONFLICT,
    DATABASE,
    DELETE,
    ERASE,
    LOCAL,
    TOMBSTONE,
    UPLOAD,
    WRITE,
    Held,
    LocalNote,
    Plan,
    Step,
    guard,
    plan,
)
from loremap.vault import fs
from loremap.vault.layout import LoadedNote, NoteFile, Vault, content_hash

if TYPE_CHECKING:
    from loremap.memory.service import Memory
    from loremap.store.postgres.store import KeptVersion, PostgresStore, SharedDoc

Progress = Callable[[int, int], None]
# A progress bar by its label, or None for none (the CLI passes `tty_progress`): a sync has two
# long stages, checking the texts and writing them, each with its own total.
Bars = Callable[[str], Progress | None]

NEEDS_SHARED = "sync needs a shared database: set LOREMAP_DATABASE_URL (see docs/postgres.md)"
SYMBOLS = {"new": "+", "updated": "~", "deleted": "-", "conflict": "!"}


class MassDelete(Conflict):
    """A sync that would delete too many notes, run without --confirm."""


class SyncError(UserError):
    """A sync whose database side committed but whose files or base could not be written."""


class Report:
    """What a push or a pull did (or, in a dry run, would do)."""

    def __init__(self, direction: str, dry_run: bool, location: str, project: str) -> None:
        self.direction = direction
        self.dry_run = dry_run
        self.location = location
        self.project = project  # this side's project key: only notes under it move
        self.shared_notes = 0  # the database's notes under that key as read (no tombstones)
        self.changes: list[Step] = []
        self.held: list[Held] = []
        self.warnings: list[str] = []
        self.refusal: str | None = None  # a dry run that --confirm would be needed for

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(("new", "updated", "deleted", "conflict"), 0)
        for step in self.changes:
            out[step.change] += 1
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": self.direction, "dry_run": self.dry_run, "database": self.location,
            "project": self.project, "shared_notes": self.shared_notes,
            "changes": [{"id": s.id, "change": s.change, "winner": s.winner or None,
                         "detail": s.detail or None} for s in self.changes],
            "held": [h._asdict() for h in self.held], "counts": self.counts(),
            "refused": self.refusal, "warnings": self.warnings,
        }


class _Ready(NamedTuple):
    """A step whose texts were checked: `loaded` the local note to upload, `local_text` the
    local text a conflict keeps, `remote` the bytes to write here, `merged` the note both
    sides get when a conflict's winner took the loser's higher counters (`counted`)."""

    step: Step
    loaded: LoadedNote | None = None
    local_text: str | None = None
    remote: bytes | None = None
    merged: LoadedNote | None = None


def counted(winner: Note, loser_text: str) -> Note | None:
    """The winner of a conflict with the higher of each side's `successes` and `failures`
    (a procedure's track record: two machines that counted outcomes apart keep the larger
    count of each, never their sum, which a re-import would double); None when the winner
    holds them already or the loser's text does not parse."""
    from loremap.vault.frontmatter import parse_note

    try:
        loser = parse_note(loser_text, "")
    except MalformedNote:
        return None
    merged = winner._replace(successes=max(winner.successes, loser.successes),
                             failures=max(winner.failures, loser.failures))
    return None if merged == winner else merged


class Sync:
    """Push, pull and compare one project vault with its shared database."""

    def __init__(self, memory: Memory, store: PostgresStore, vault: Vault, state: Path) -> None:
        self.memory = memory
        self.store = store
        self.vault = vault
        self.base_file = base_path(state, vault.root, store.url, store.project)

    @classmethod
    def of(cls, memory: Memory, state: Path) -> Sync:
        """The sync of `memory`'s project vault; `state` is the user's state folder."""
        if not memory.store.shared:
            raise InvalidInput(NEEDS_SHARED)
        from loremap.store.postgres.store import PostgresStore

        store = memory.store
        assert isinstance(store, PostgresStore)
        if memory.project is None:
            raise NotFound("no loremap project here: run `loremap init` in the repository")
        return cls(memory, store, memory.project, state)

    # --- the three states -------------------------------------------------------------------

    def _local(self, warnings: list[str]) -> tuple[dict[str, LocalNote], dict[str, NoteFile],
                                                    frozenset[str]]:
        """Every note file's hash and mtime; the ids of files that could not be read (left
        alone: an unreadable file is not a deletion)."""
        notes: dict[str, LocalNote] = {}
        files: dict[str, NoteFile] = {}
        unread: set[str] = set()
        for file in self.vault.scan():
            shown = self.vault.display(file.path)
            try:
                check_id(file.id)
            except InvalidInput:
                warnings.append(f"skipped {shown}: its name is not a note id")
                continue
            try:
                data = fs.read_nofollow(file.path)[0]  # never a symlink's target
            except UnsafePath as exc:
                warnings.append(f"skipped {shown}: {exc}")
                unread.add(file.id)
                continue
            except OSError as exc:
                warnings.append(f"skipped {shown}: {exc.strerror}")
                unread.add(file.id)
                continue
            notes[file.id] = LocalNote(content_hash(data), file.mtime_ns)
            files[file.id] = file
        return notes, files, frozenset(unread)

    def _base(self, warnings: list[str]) -> Base:
        described = {"vault": str(self.vault.root.resolve()), "database": self.store.location,
                     "project": self.store.project}
        base, problem = Base.load(self.base_file, described)
        if problem:
            warnings.append(problem)
        return base

    # --- checks of the texts that cross over ------------------------------------------------

    def _uploadable(self, file: NoteFile, warnings: list[str]) -> LoadedNote | None:
        """The note to upload, or None (with a warning) when it must not be."""
        from loremap.vault.secrets import scan

        try:
            loaded = self.vault.load(file)
        except MalformedNote as exc:
            warnings.append(f"skipped {exc}: not pushed (fix the file, then sync again)")
            return None
        except OSError as exc:
            warnings.append(f"skipped {self.vault.display(file.path)}: {exc.strerror}")
            return None
        found = scan(loaded.text)
        if found:
            warnings.append(f"skipped {self.vault.display(file.path)}: {found[0].kind} at line "
                            f"{found[0].line}; a note holding a secret is never pushed (remove "
                            "it, then sync again)")
            return None
        return loaded

    def _local_text(self, file: NoteFile, warnings: list[str]) -> str | None:
        """The local text a lost conflict keeps in the database, or None when it cannot be."""
        from loremap.vault.secrets import scan

        shown = self.vault.display(file.path)
        try:
            text = fs.read_nofollow(file.path)[0].decode("utf-8")
        except UnsafePath as exc:
            warnings.append(f"skipped {shown}: {exc}")
            return None
        except OSError as exc:
            warnings.append(f"skipped {shown}: {exc.strerror}")
            return None
        except UnicodeDecodeError:
            warnings.append(f"skipped {shown}: not UTF-8; its conflict is left for you to settle")
            return None
        found = scan(text)
        if found:
            warnings.append(f"skipped {shown}: {found[0].kind} at line {found[0].line}; it is in "
                            "conflict with the database and a secret never goes there (remove "
                            "it, then sync again)")
            return None
        return text

    def _writable(self, doc: SharedDoc, warnings: list[str]) -> bytes | None:
        """The bytes of a database text to write here, or None when it must not be."""
        from loremap.vault.frontmatter import parse_note
        from loremap.vault.secrets import scan

        shown = f"{doc.id} (database v{doc.version})"
        try:
            check_id(doc.id)
            note = parse_note(doc.text, shown)
        except (InvalidInput, MalformedNote) as exc:
            warnings.append(f"skipped {exc}: not pulled")
            return None
        if note.id != doc.id:
            warnings.append(f"skipped {shown}: its frontmatter id is '{note.id}': not pulled")
            return None
        found = scan(doc.text)
        if found:
            warnings.append(f"skipped {shown}: {found[0].kind} at line {found[0].line}; a "
                            "secret never lands in the vault: not pulled")
            return None
        return doc.text.encode("utf-8")

    def _prepare(self, plan_: Plan, files: Mapping[str, NoteFile],
                 remote: Mapping[str, SharedDoc], warnings: list[str],
                 progress: Progress | None = None) -> list[_Ready]:
        ready: list[_Ready] = []
        for done, step in enumerate(plan_.steps, start=1):
            if step.op == UPLOAD:
                loaded = self._uploadable(files[step.id], warnings)
                if loaded is not None:
                    ready.append(_Ready(step._replace(base=loaded.content_hash), loaded))
            elif step.op == WRITE:
                data = self._writable(remote[step.id], warnings)
                if data is not None:
                    ready.append(_Ready(step, remote=data))
            elif step.op == CONFLICT and step.winner == LOCAL:
                loaded = self._uploadable(files[step.id], warnings)
                merged = None if loaded is None else counted(loaded.note, remote[step.id].text)
                if loaded is not None and merged is not None:
                    # The file here is rewritten with the counts, and that text uploaded.
                    data = self.vault.render(merged)
                    loaded = LoadedNote(merged, loaded.file, content_hash(data),
                                        data.decode("utf-8"))
                    ready.append(_Ready(step._replace(base=loaded.content_hash), loaded,
                                        remote=data))
                elif loaded is not None:
                    ready.append(_Ready(step._replace(base=loaded.content_hash), loaded))
            elif step.op == CONFLICT:
                text = self._local_text(files[step.id], warnings)
                data = self._writable(remote[step.id], warnings) if text is not None else None
                if text is not None and data is not None:
                    from loremap.vault.frontmatter import parse_note

                    merged = counted(parse_note(data.decode("utf-8"), step.id), text)
                    if merged is None:
                        ready.append(_Ready(step, local_text=text, remote=data))
                    else:  # the database's text with the counts, on both sides
                        data = self.vault.render(merged)
                        shared = LoadedNote(merged, NoteFile(
                            step.id, self.vault.notes_dir, 0, len(data)), content_hash(data),
                            data.decode("utf-8"))
                        ready.append(_Ready(step._replace(base=shared.content_hash),
                                            local_text=text, remote=data, merged=shared))
            elif step.op == ERASE:  # the text is read only to find its quotes, then erased
                ready.append(_Ready(step, local_text=_raw_text(files[step.id])))
            else:
                ready.append(_Ready(step))
            if progress is not None:
                progress(done, len(plan_.steps))
        return ready

    # --- push, pull, status -----------------------------------------------------------------

    def run(self, direction: str, dry_run: bool = False, confirm: bool = False,
            bars: Bars | None = None) -> Report:
        """`push` or `pull` (with `dry_run`: what it would do, changing nothing); `bars` gives
        the progress of checking the texts, then of writing them."""
        if dry_run:
            return self._preview((direction,), confirm, bars)[0]
        report = Report(direction, dry_run, self.store.location, self.store.project)
        self.vault.ensure()
        with self.vault.lock():
            local, files, unread = self._local(report.warnings)
            base = self._base(report.warnings)
            with self.memory.recorded([self.vault]) as write:
                remote = self.store.docs()
                plan_ = plan(direction, local, base.notes, remote, unread, self.store.writer)
                refusal = guard(plan_, self._total(plan_, local, remote))
                if refusal and not confirm:
                    raise MassDelete(refusal)
                ready = self._prepare(plan_, files, remote, report.warnings,
                                      _bar(bars, "checking notes"))
                tick = _counter(_bar(bars, f"{direction}ing"), len(ready))
                self._apply_database(ready, remote, tick)
                for item in ready:
                    if item.step.change:  # an erasure here is this clone's `erase` record
                        write.record(self.vault.scope,
                                     ERASE if item.step.op == ERASE else direction,
                                     item.step.id, *_hashes(item, local, remote), _title(item),
                                     _said(item.step))
            landed: dict[str, str | None] = {}
            failed = None
            for item in ready:
                try:
                    self._apply_files(item)
                except OSError as exc:
                    failed = (f"the database side is done, but writing "
                              f"{self.vault.display(self.vault.path_for(item.step.id))} failed "
                              f"({exc.strerror}); run `loremap sync {direction}` again")
                    break
                landed[item.step.id] = item.step.base
                if _touches_files(item):
                    tick()
            base.update(landed)
            try:
                base.save()
            except OSError as exc:
                failed = failed or (f"the sync is done, but its base {self.base_file} could not "
                                    f"be written ({exc.strerror}); the next sync compares hashes")
            if failed:
                raise SyncError(failed)
        self._report(report, plan_, ready, remote)
        return report

    def fetch(self, note_id: str, warnings: list[str]) -> bool:
        """Write one note of the database into this vault and record it in the base, as a
        `pull` does for each note it writes; False when the database has no live, writable
        text of it. For a teammate's note read or forgotten here before a whole pull."""
        self.vault.ensure()
        with self.vault.lock():
            if self.vault.exists(note_id):
                return True
            with self.memory.recorded([self.vault]) as write:
                doc = self.store.doc(note_id)
                data = None if doc is None or doc.deleted else self._writable(doc, warnings)
                if doc is None or data is None:
                    return False
                write.record(self.vault.scope, "pull", note_id, "", doc.hash,
                             detail="new: fetched to be changed here")
                fs.atomic_write(self.vault.writable(note_id), data)
            base = self._base(warnings)
            base.update({note_id: content_hash(data)})
            base.save()
        return True

    def status(self) -> tuple[Report, Report]:
        """What a push and a pull would do now."""
        push, pull = self._preview(("push", "pull"))
        return push, pull

    def _preview(self, directions: tuple[str, ...], confirm: bool = False,
                 bars: Bars | None = None) -> list[Report]:
        """What each of `directions` would do, from one reading of both sides; no lock."""
        warnings: list[str] = []
        local, files, unread = self._local(warnings)
        base = self._base(warnings)
        remote = self.store.docs()
        reports = []
        for direction in directions:
            report = Report(direction, True, self.store.location, self.store.project)
            report.warnings = list(warnings)
            plan_ = plan(direction, local, base.notes, remote, unread, self.store.writer)
            report.refusal = None if confirm else guard(plan_, self._total(plan_, local, remote))
            ready = self._prepare(plan_, files, remote, report.warnings,
                                  _bar(bars, "checking notes"))
            self._report(report, plan_, ready, remote)
            reports.append(report)
        return reports

    @staticmethod
    def _total(plan_: Plan, local: Mapping[str, LocalNote],
               remote: Mapping[str, SharedDoc]) -> int:
        if plan_.direction == "pull":
            return len(local)
        return sum(1 for doc in remote.values() if not doc.deleted)

    @staticmethod
    def _report(report: Report, plan_: Plan, ready: list[_Ready],
                remote: Mapping[str, SharedDoc]) -> None:
        report.changes = [item.step for item in ready if item.step.change]
        report.held = list(plan_.held)
        report.shared_notes = sum(1 for doc in remote.values() if not doc.deleted)

    def _apply_database(self, ready: list[_Ready], remote: Mapping[str, SharedDoc],
                        tick: Callable[[], None]) -> None:
        """The database's side of the plan (inside `store.write()`); `tick` after each step
        that has no file to write (those tick when their file is written)."""
        store = self.store
        for item in ready:
            step = item.step
            if step.op == UPLOAD and item.loaded is not None:
                self.memory.index_loaded(item.loaded)
            elif step.op == TOMBSTONE:
                store.delete_note(step.id)
            elif step.op == ERASE:
                store.erase_note(step.id)  # (done by the clone that erased it: no rows left)
            elif step.op == CONFLICT and step.winner == LOCAL and item.loaded is not None:
                doc = remote[step.id]
                store.put_doc(step.id, item.loaded.text, item.loaded.content_hash,
                              reason=f"conflict: v{doc.version} by {doc.updated_by or '?'} lost "
                                     f"to a newer edit by {store.writer or '?'}",
                              edited_ns=item.loaded.file.mtime_ns)
                self.memory.index_loaded(item.loaded)
            elif step.op == CONFLICT and step.winner == DATABASE and item.local_text is not None:
                doc = remote[step.id]
                if item.merged is not None:  # the database's text gains this side's counts
                    self.memory.index_loaded(item.merged)  # (its text before kept: version N)
                store.keep_text(step.id, item.local_text,
                                content_hash(item.local_text.encode("utf-8")),
                                reason=f"conflict: an edit by {store.writer or '?'} lost to the "
                                       f"newer v{doc.version} by {doc.updated_by or '?'}")
            if not _touches_files(item):
                tick()

    def _apply_files(self, item: _Ready) -> None:
        """The files' side of one step (after the database committed)."""
        step = item.step
        if _writes_file(item):
            assert item.remote is not None  # _writes_file says so
            fs.atomic_write(self.vault.writable(step.id), item.remote)
        elif step.op == DELETE:
            self.vault.delete(step.id)
        elif step.op == ERASE:
            self.vault.delete(step.id)
            self.memory.scrub(step.id, [item.local_text or ""])

    # --- versions ---------------------------------------------------------------------------

    def versions(self, note_id: str) -> tuple[SharedDoc | None, list[KeptVersion]]:
        """The note's current shared text (None: the database never had it) and the texts it
        had before, newest first."""
        check_id(note_id)
        doc = self.store.doc(note_id)
        kept = self.store.versions(note_id)
        if doc is None and not kept:
            raise NotFound(f"the database has no note '{note_id}' (project "
                           f"{self.store.project})")
        return doc, kept


def _hashes(item: _Ready, local: Mapping[str, LocalNote], remote: Mapping[str, SharedDoc]
            ) -> tuple[str, str]:
    """A step's audit hashes: the text it replaces (the side it overwrites: the database's
    for what goes up, this vault's for what comes down, the loser's in a conflict) and the
    text both sides hold once it is done ("" for none)."""
    step = item.step
    doc = remote.get(step.id)
    there = "" if doc is None or doc.deleted else doc.hash
    here = local[step.id].hash if step.id in local else ""
    replaced = there if step.op in (UPLOAD, TOMBSTONE) or step.winner == LOCAL else here
    return replaced, step.base or ""


def _title(item: _Ready) -> str:
    """The title of the note a step moves, when this side has parsed it."""
    loaded = item.merged or item.loaded
    return "" if loaded is None else loaded.note.title


def _said(step: Step) -> str:
    return f"{step.change}: {step.detail}" if step.detail else step.change


def _writes_file(item: _Ready) -> bool:
    """Whether a step writes a note file here: the database's text, or a conflict's winner
    with the loser's counts."""
    step = item.step
    return item.remote is not None and (step.op in (WRITE, CONFLICT) or
                                        step.winner == DATABASE)


def _touches_files(item: _Ready) -> bool:
    """Whether a step writes or deletes a note file here (`Sync._apply_files`)."""
    return _writes_file(item) or item.step.op in (DELETE, ERASE)


def _raw_text(file: NoteFile) -> str:
    """A note file's text as it is (for the quotes of an erased note), "" when unreadable."""
    try:
        return fs.read_nofollow(file.path)[0].decode("utf-8", "replace")
    except (OSError, UnsafePath):
        return ""


def _bar(bars: Bars | None, label: str) -> Progress | None:
    return None if bars is None else bars(label)


def _counter(progress: Progress | None, total: int) -> Callable[[], None]:
    """A step counter that moves `progress` to `done` of `total` at each call."""
    done = [0]

    def tick() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total)

    return tick
