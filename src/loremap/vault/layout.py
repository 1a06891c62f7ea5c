"""A vault on disk: where note files live, how they are listed, read, written and removed.

Two vaults exist: the project's (`<repo>/.loremap/`, committed) and the personal one (per user,
searched with every project). Both have the same layout; `scope` tells them apart in the index.
Every path handed out is confined to `notes/`; ids are checked before any path is built.
No symlink is followed out of the vault's boundary (the repository for the project's vault, the
vault's own folder for the personal one): a `notes/` folder linked out refuses every read and
write, a note file that is a symlink is skipped with a warning and never written through
(see `fs`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from loremap.errors import InvalidInput, MalformedNote, SecretFound, UnsafePath
from loremap.model import Note, check_id
from loremap.vault import fs

NOTES_DIR = "notes"
HANDOFFS_DIR = "handoffs"
LOCK_FILE = ".lock"
# A note file may exceed the body limit by this much (frontmatter, heading, links section).
_FILE_SLACK = 64 * 1024


class NoteFile(NamedTuple):
    """A note file as seen by a directory scan: enough to decide whether to re-read it.

    """

    id: str
    directory: Path
    mtime_ns: int
    size: int

    @property
    def path(self) -> Path:
        # Built on demand: scans see thousands of files and re-read only the changed ones.
        return self.directory / f"{self.id}.md"


class LoadedNote(NamedTuple):
    """A parsed note with the hash and stat of the bytes it came from."""

    note: Note
    file: NoteFile
    content_hash: str
    text: str = ""  # the file's markdown (what a shared database keeps for the other machines)


def content_hash(data: bytes) -> str:
    import hashlib  # only when a file is (re)read: not on the path of an unchanged vault

    return hashlib.sha256(data).hexdigest()


class Vault:
    """The note files of one scope (`project` or `personal`) under `root`."""

    def __init__(self, root: Path, scope: str, max_note_bytes: int, lock_timeout: float) -> None:
        self.root = root
        self.scope = scope
        self.notes_dir = root / NOTES_DIR
        # What no symlink may lead out of: a project's vault is `<repo>/.loremap`, and its
        # `.loremap` may be a link only to a folder of the same repository.
        self.boundary = root.parent if scope == "project" else root
        self.max_note_bytes = max_note_bytes
        self.lock_timeout = lock_timeout

    def ensure(self) -> None:
        self.notes_dir.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """The vault's write lock; every change to its files happens inside it."""
        with fs.file_lock(self.root / LOCK_FILE, self.lock_timeout, self.boundary):
            yield

    def path_for(self, note_id: str) -> Path:
        """The file of `note_id`, refusing any id that could leave `notes/`."""
        check_id(note_id)
        fs.check_folder(self.notes_dir, self.boundary)
        path = self.notes_dir / f"{note_id}.md"
        if path.parent != self.notes_dir:  # pragma: no cover - check_id already forbids this
            raise InvalidInput(f"note id {note_id!r} would leave the vault")
        return path

    def exists(self, note_id: str) -> bool:
        return self.path_for(note_id).exists()

    def writable(self, note_id: str) -> Path:
        """`path_for(note_id)`, refused (`UnsafePath`) when the file there is a symlink."""
        path = self.path_for(note_id)
        fs.check_write(path, self.boundary)
        return path

    def scan(self) -> list[NoteFile]:
        """Every `notes/*.md` file (hidden temp files skipped), sorted by id.

        A symlink is listed like a file, so that `load` skips it with a warning naming it;
        `UnsafePath` when `notes/` itself leads out of the boundary.
        """
        out: list[NoteFile] = []
        directory = self.notes_dir
        fs.check_folder(directory, self.boundary)
        try:
            entries = list(os.scandir(directory))
        except FileNotFoundError:
            return out
        make = NoteFile._make  # tuple.__new__ underneath: a scan makes one per note file
        for entry in entries:
            name = entry.name
            if not name.endswith(".md") or name.startswith("."):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                out.append(make((name[:-3], directory, st.st_mtime_ns, st.st_size)))
        out.sort()  # ids are unique, so tuples order by id alone
        return out

    def temp_files(self) -> list[Path]:
        """Leftovers of interrupted writes (`.<name>.<pid>.tmp`)."""
        if not self.notes_dir.is_dir():
            return []
        return sorted(p for p in self.notes_dir.iterdir()
                      if p.name.startswith(".") and p.name.endswith(fs.TMP_SUFFIX))

    def load(self, file: NoteFile) -> LoadedNote:
        """Read and parse one note file; its frontmatter id must match its file name."""
        from loremap.vault.frontmatter import parse_note

        shown = self.display(file.path)
        if file.size > self.max_note_bytes + _FILE_SLACK:
            raise MalformedNote(shown, f"file is {file.size} bytes, over the "
                                f"{self.max_note_bytes}-byte note limit")
        try:  # the folder was checked by `scan` or `path_for`
            data, st = fs.read_nofollow(file.path)
        except UnsafePath as exc:
            target = fs.link_target(file.path)
            why = (str(exc) if target is None else f"a symlink to {target}: not read "
                   "(loremap follows no link)")
            raise MalformedNote(shown, why) from None
        if b"\x00" in data:
            raise MalformedNote(shown, "binary file (contains NUL bytes)")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedNote(shown, f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset "
                                f"{exc.start})") from None
        note = parse_note(text, shown)
        if note.id != file.id:
            raise MalformedNote(shown, f"id '{note.id}' does not match the file name "
                                f"'{file.id}.md'", 2)
        fresh = NoteFile(file.id, file.directory, st.st_mtime_ns, st.st_size)
        return LoadedNote(note, fresh, content_hash(data), text)

    def read(self, note_id: str) -> LoadedNote:
        path = self.path_for(note_id)
        st = path.lstat()
        return self.load(NoteFile(note_id, path.parent, st.st_mtime_ns, st.st_size))

    def display(self, path: Path) -> str:
        """A short path for messages: relative to the vault's parent when possible."""
        try:
            return str(path.relative_to(self.root.parent))
        except ValueError:
            return str(path)

    def render(self, note: Note) -> bytes:
        """The bytes of `note`'s file, refused if the body is too big or holds a secret."""
        from loremap.vault.frontmatter import render_note
        from loremap.vault.secrets import scan

        body_bytes = len(note.body.encode("utf-8", "surrogatepass"))
        if body_bytes > self.max_note_bytes:
            raise InvalidInput(f"the note body is {body_bytes} bytes, over the limit of "
                               f"{self.max_note_bytes} (vault.max_note_bytes)")
        text, body_line = render_note(note)
        findings = scan(text)
        if findings:
            first = findings[0]
            where = (f"line {first.line - body_line + 1} of the body" if first.line >= body_line
                     else f"line {first.line} of the frontmatter")
            raise SecretFound(f"refused: {first.kind} at {where} of note {note.id}; remove it, "
                              "or pass --quarantine to store the note with it redacted")
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput("the note contains text that is not valid Unicode") from None

    def write(self, note: Note) -> LoadedNote:
        """Atomically write `note` to its file (call inside `lock()`)."""
        data = self.render(note)
        path = self.writable(note.id)
        self.ensure()
        fs.atomic_write(path, data, self.boundary)
        return self.written(note, data)

    def written(self, note: Note, data: bytes) -> LoadedNote:
        """`note` as just written with `data`: its stat and hash, without reading it back."""
        path = self.path_for(note.id)
        st = path.stat()
        return LoadedNote(note, NoteFile(note.id, path.parent, st.st_mtime_ns, st.st_size),
                          content_hash(data), data.decode("utf-8"))

    def delete(self, note_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path_for(note_id).unlink()
        fs.fsync_dir(self.notes_dir)
