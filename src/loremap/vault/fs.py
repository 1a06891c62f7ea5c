"""File-system primitives of the vault: atomic replacement and an inter-process lock.

A note file is never written in place. The new content goes to a temporary file in the same
directory, is flushed and fsync'ed, then `os.replace`d over the old one, so a reader (or a crash)
sees the old file or the new one, never a torn mix. Writers serialise on an advisory lock file.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from loremap.errors import Conflict

TMP_SUFFIX = ".tmp"
# File times come from a coarse clock: a file rewritten within the same tick with the same size
# keeps its stat. As git does with "racily clean" entries, a stat this recent is not trusted.
RACY_NS = 2_000_000_000


def trusted_mtime(mtime_ns: int) -> int:
    """The mtime to record for a file: 0 (re-hash it next time) while it is racy."""
    return 0 if time.time_ns() - mtime_ns < RACY_NS else mtime_ns



def temp_path_for(path: Path) -> Path:
    """The temporary sibling of `path`: hidden, per-process, ignored by vault scans."""
    return path.with_name(f".{path.name}.{os.getpid()}{TMP_SUFFIX}")


def write_temp(path: Path, data: bytes) -> Path:
    """Write `data` to the temporary sibling of `path`, durably, and return the temp path."""
    tmp = temp_path_for(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return tmp


def fsync_dir(directory: Path) -> None:
    """Make renames inside `directory` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically (temp file + fsync + `os.replace`)."""
    tmp = write_temp(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)


@contextlib.contextmanager
def file_lock(lock_path: Path, timeout: float) -> Iterator[None]:
    """Hold an exclusive advisory lock on `lock_path` (created if needed) for the block.

    Trigger: another process holds the lock.
    Why: flock has no timeout of its own, and a stuck writer must not hang an agent's hook.
    Outcome: poll with a growing pause; after `timeout` seconds raise `Conflict`.
    """
    import fcntl

    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        pause = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Conflict(
                        f"another loremap process holds {lock_path} (waited {timeout:g} s); "
                        "try again"
                    ) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
