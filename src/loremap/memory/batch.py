"""A write of several note files of one vault that lands whole or not at all.

Why it exists: each file is replaced atomically (temp file + `os.replace`), but a batch of N
files is N renames, and a process killed between two of them would leave some notes of the
batch written and the others not (a two-fact MCP `remember` left fact 1 alone in 14 of 50
SIGKILLs). A batch therefore:

1. writes every temp file (flushed and fsync'ed);
2. writes a journal, `notes/.batch-<pid>.tmp` (ignored by git and by vault scans), listing for
   each file its id, its temp file, the hash of its new bytes and the bytes it replaces;
3. renames the temp files one by one;
4. (the caller indexes and commits) and removes the journal.

If anything fails in the process, `undo()` puts back what the renames changed (a new note is
removed, a rewritten one gets its old bytes). A process killed after step 2 leaves the journal:
`resolve()` (run by `loremap doctor`, under the vault's lock) completes the batch when every
file not yet renamed still has its temp file, and rolls it back otherwise. A single file needs
no journal: its one rename is already all or nothing.

The standard library has no multi-file transaction; this is the classic write-ahead journal
(as SQLite's rollback journal does for pages), kept to what note files need.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from loremap.errors import InvalidInput, UnsafePath
from loremap.model import check_id
from loremap.vault import fs
from loremap.vault.layout import Vault, content_hash

JOURNAL_PREFIX = ".batch-"
_VERSION = 1


class Change(NamedTuple):
    """One file of a batch: its new bytes, and the bytes it replaces (None: a new note)."""

    id: str
    data: bytes
    before: bytes | None


def journal_path(vault: Vault, pid: int | None = None) -> Path:
    return vault.notes_dir / f"{JOURNAL_PREFIX}{os.getpid() if pid is None else pid}" \
                             f"{fs.TMP_SUFFIX}"


def journals(vault: Vault) -> list[Path]:
    """The journals of batches whose process died before finishing them."""
    if not vault.notes_dir.is_dir():
        return []
    return sorted(p for p in vault.notes_dir.iterdir()
                  if p.name.startswith(JOURNAL_PREFIX) and p.name.endswith(fs.TMP_SUFFIX))


class Batch:
    """The files of one write, applied with `apply()` inside the vault's lock."""

    def __init__(self, vault: Vault, changes: Sequence[Change]) -> None:
        self.vault = vault
        self.changes = list(changes)
        self.temps: list[Path] = []
        self.renamed = 0  # how many of `changes` are in place
        self.journal: Path | None = None

    def apply(self) -> None:
        """Write every temp file, the journal (for more than one file), then rename them."""
        vault = self.vault
        paths = [vault.writable(change.id) for change in self.changes]  # no symlink: refuse
        vault.ensure()
        try:
            for change, path in zip(self.changes, paths, strict=True):
                self.temps.append(fs.write_temp(path, change.data))
            if len(self.changes) > 1:
                journal = journal_path(vault)
                fs.atomic_write(journal, _journal_bytes(self.changes, self.temps),
                                vault.boundary)
                self.journal = journal
            for tmp, path in zip(self.temps, paths, strict=True):
                os.replace(tmp, path)
                self.renamed += 1
            fs.fsync_dir(vault.notes_dir)
        except BaseException:
            self.undo()
            raise

    def undo(self) -> None:
        """Put back every file the renames changed and drop the temp files. If this fails
        too, the journal stays for `loremap doctor --fix`."""
        vault = self.vault
        for change in reversed(self.changes[:self.renamed]):
            _restore(vault, change.id, change.before)
        self.renamed = 0
        for tmp in self.temps:
            with contextlib.suppress(OSError):
                tmp.unlink()
        fs.fsync_dir(vault.notes_dir)
        self.finish()

    def finish(self) -> None:
        """The batch is settled (committed, or undone): forget its journal."""
        if self.journal is not None:
            with contextlib.suppress(FileNotFoundError):
                self.journal.unlink()
            fs.fsync_dir(self.vault.notes_dir)
            self.journal = None


class Removal(Batch):
    """A note file deleted inside the index transaction (`forget --purge`): put back as it
    was if the transaction fails, so a lost connection never leaves the file gone while the
    database still holds the note."""

    def __init__(self, vault: Vault, note_id: str) -> None:
        super().__init__(vault, [])
        self.note_id = note_id
        self.before: bytes | None = None

    def apply(self) -> None:
        path = self.vault.writable(self.note_id)  # no symlink: refuse
        with contextlib.suppress(FileNotFoundError):
            self.before = fs.read_nofollow(path)[0]
        self.vault.delete(self.note_id)

    def undo(self) -> None:
        if self.before is not None:
            _restore(self.vault, self.note_id, self.before)
            self.before = None


def _restore(vault: Vault, note_id: str, before: bytes | None) -> None:
    path = vault.path_for(note_id)
    if before is None:
        path.unlink(missing_ok=True)
    else:
        fs.atomic_write(path, before, vault.boundary)


def _journal_bytes(changes: Sequence[Change], temps: Sequence[Path]) -> bytes:
    entries = [{"id": c.id, "temp": t.name, "hash": content_hash(c.data),
                "before": None if c.before is None else c.before.decode("utf-8")}
               for c, t in zip(changes, temps, strict=True)]
    return json.dumps({"version": _VERSION, "files": entries}, indent=1).encode("utf-8")


class Interrupted(NamedTuple):
    """What `resolve` found in one journal, and what it did."""

    journal: Path
    ids: list[str]
    landed: int  # files already renamed into place
    complete: bool  # True: finishing it is possible (every other temp file is intact)
    fixed: bool

    def message(self, vault: Vault) -> str:
        if not self.ids:
            return (f"an unreadable batch journal {vault.display(self.journal)} (written whole "
                    "before any rename, so none happened under it)"
                    + ("; removed" if self.fixed else "; `loremap doctor --fix` removes it"))
        ids = ", ".join(self.ids)
        head = (f"an interrupted write of {len(self.ids)} note files ({ids}): {self.landed} of "
                f"{len(self.ids)} had landed")
        if self.fixed:
            return head + ("; completed" if self.complete else
                           "; rolled back (a temp file of the batch is missing)")
        how = "completes it" if self.complete else "rolls it back (a temp file is missing)"
        return f"{head} ({vault.display(self.journal)}); `loremap doctor --fix` {how}"


def resolve(vault: Vault, journal: Path, fix: bool) -> Interrupted:
    """Read one journal (call inside the vault's lock) and, with `fix`, finish its batch when
    every file not in place still has its whole temp file, else roll the batch back."""
    try:
        entries = _entries(json.loads(journal.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, InvalidInput):
        # Trigger: the journal is unreadable. Why: it is written atomically before the first
        # rename, so no rename happened under it. Outcome: nothing to finish; drop it.
        if fix:
            journal.unlink(missing_ok=True)
        return Interrupted(journal, [], 0, True, fix)
    states = [_state(vault, entry) for entry in entries]
    complete = "lost" not in states
    if fix:
        for entry, state in zip(entries, states, strict=True):
            _settle(vault, entry, state, complete)
        fs.fsync_dir(vault.notes_dir)
        journal.unlink(missing_ok=True)
        fs.fsync_dir(vault.notes_dir)
    return Interrupted(journal, [str(e["id"]) for e in entries], states.count("landed"),
                       complete, fix)


def _entries(data: dict[str, list[dict[str, object]]]) -> list[dict[str, object]]:
    """The journal's files, each checked: a valid id, a temp file name in `notes/`."""
    entries = data["files"]
    for entry in entries:
        check_id(str(entry["id"]))
        temp = entry["temp"]
        if not isinstance(temp, str) or "/" in temp or not temp.startswith("."):
            raise ValueError(f"bad temp file name {temp!r}")
        if not isinstance(entry["hash"], str) or not isinstance(entry["before"], str | None):
            raise ValueError("bad entry")
    return entries


def _state(vault: Vault, entry: dict[str, object]) -> str:
    """"landed" (the file holds the new bytes), "pending" (its temp file does), or "lost"."""
    path = vault.path_for(str(entry["id"]))
    for candidate, state in ((path, "landed"), (vault.notes_dir / str(entry["temp"]), "pending")):
        with contextlib.suppress(OSError, UnsafePath):  # a symlink is never the batch's
            if content_hash(fs.read_nofollow(candidate)[0]) == entry["hash"]:
                return state
    return "lost"


def _settle(vault: Vault, entry: dict[str, object], state: str, forward: bool) -> None:
    path = vault.path_for(str(entry["id"]))
    tmp = vault.notes_dir / str(entry["temp"])
    if forward:
        if state == "pending":
            os.replace(tmp, path)
        return
    if state == "landed":
        before = entry["before"]
        _restore(vault, str(entry["id"]), None if before is None else str(before).encode("utf-8"))
    tmp.unlink(missing_ok=True)
