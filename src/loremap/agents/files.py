"""Reading and replacing the user's own files: refuse what cannot be read, back up, swap atomically.

The agents' settings files belong to the user, so loremap reads them as bytes (line endings and
a byte-order mark survive), refuses a binary or non-UTF-8 file with one line instead of
guessing, and never writes in place: the new text goes to a temporary sibling that is renamed
over the old file, after the old bytes were copied to `<name>.loremap-backup`. Each file has
one backup, the copy from before loremap's latest change to it: copying it back undoes that
change and nothing the user did before, and rounds of install and undo leave one file, not a
pile. (The dated `<name>.loremap-backup-<stamp>` copies earlier versions kept go when the
file's backup is next written.) A symbolic link (dotfiles kept in a repository) is followed,
so the link survives and its target is edited.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path
from typing import NoReturn

from loremap.errors import InvalidInput

BACKUP_SUFFIX = ".loremap-backup"
MAX_BYTES = 8 * 1024 * 1024  # no agent's settings file is this large; refuse rather than load it
# The stamp earlier versions put on every backup after the first: YYYYMMDD-HHMMSS[-N].
_DATED = re.compile(r"[0-9]{8}-[0-9]{6}(?:-[0-9]+)?")


def refuse_unreadable(path: Path, reason: str) -> NoReturn:
    """Raise the one-line error for a file loremap will not edit."""
    raise InvalidInput(f"cannot edit {path}: {reason}; nothing was changed")


def read_text_or_none(path: Path) -> str | None:
    """The text of `path`, None when it does not exist; `InvalidInput` when it is not a
    readable UTF-8 text file (a directory, a binary, another encoding, unreadable)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    except OSError as exc:
        refuse_unreadable(path, exc.strerror or str(exc))
    if path.is_dir():
        refuse_unreadable(path, "it is a directory")
    if size > MAX_BYTES:
        refuse_unreadable(path, f"it is larger than {MAX_BYTES // (1024 * 1024)} MiB")
    try:
        data = path.read_bytes()
    except OSError as exc:
        refuse_unreadable(path, exc.strerror or str(exc))
    if b"\0" in data:
        refuse_unreadable(path, "it is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        refuse_unreadable(path, f"it is not UTF-8 text (byte {exc.start})")


def _target(path: Path) -> Path:
    return path.resolve() if path.is_symlink() else path


def _write_atomic(path: Path, data: bytes, mode: int | None) -> None:
    """Temp sibling, fsync, `os.replace`; `mode` None: a new file, as the umask allows."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if mode is not None else 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode is not None:  # exactly the old file's mode, whatever the umask
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _backup(path: Path, data: bytes, mode: int) -> Path:
    """Keep `data` (the file's current bytes) as its one backup, replacing the one before."""
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    same = False
    with contextlib.suppress(OSError):
        same = backup.is_file() and backup.read_bytes() == data
    if not same:
        _write_atomic(backup, data, mode)
    for dated in _dated_backups(backup):
        with contextlib.suppress(OSError):
            os.unlink(dated)
    return backup


def _dated_backups(backup: Path) -> list[str]:
    prefix = backup.name + "-"
    try:
        with os.scandir(backup.parent) as entries:
            return [e.path for e in entries
                    if e.name.startswith(prefix) and _DATED.fullmatch(e.name[len(prefix):])]
    except OSError:
        return []


def write_with_backup(path: Path, text: str) -> Path | None:
    """Replace `path` with `text` atomically, keeping the old file as a backup.

    Returns the backup's path, or None when the file did not exist (missing parent folders are
    created). The new file keeps the old one's permission bits.
    """
    target = _target(path)
    try:
        old = target.read_bytes()
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(target, text.encode("utf-8"), None)
        return None
    backup = _backup(target, old, mode)
    _write_atomic(target, text.encode("utf-8"), mode)
    return backup


def remove_with_backup(path: Path) -> Path | None:
    """Delete `path` after keeping a backup of it; None when it did not exist. A symbolic link
    is removed, not the file it points to."""
    target = _target(path)
    try:
        old = target.read_bytes()
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        return None
    backup = _backup(target, old, mode)
    path.unlink()
    return backup


def unified_diff(old: str | None, new: str | None, shown: str) -> str:
    """A unified diff of one file's change, for dry runs (None: the file does not exist, shown
    as `/dev/null`); every line ends with a newline."""
    import difflib

    def lines(text: str | None) -> list[str]:
        return [line if line.endswith("\n") else line + "\n"
                for line in (text or "").splitlines(keepends=True)]

    return "".join(difflib.unified_diff(
        lines(old), lines(new), fromfile="/dev/null" if old is None else shown,
        tofile="/dev/null" if new is None else shown))
