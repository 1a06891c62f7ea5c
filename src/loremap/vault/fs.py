"""File-system primitives of the vault: atomic replacement and an inter-process lock.

A note file is never written in place. The new content goes to a temporary file in the same
directory, is flushed and fsync'ed, then `os.replace`d over the old one, so a reader (or a crash)
sees the old file or the new one, never a torn mix. Writers serialise on an advisory lock file:
`fcntl.flock` on POSIX; on Windows, where there is no fcntl, portalocker (msvcrt's locking)
holds the same lock. portalocker wraps flock on POSIX too, but importing it costs ~50 ms against
~0.2 ms for fcntl (measured here with `python -X importtime`), and the hooks write handoffs, so
POSIX keeps flock; the tests run the portalocker path on this platform as well.

A cloned repository is untrusted input, and git stores symlinks: `.loremap/notes/x.md ->
/home/me/.ssh/id_rsa` would be read into an agent's context, a `handoffs -> /elsewhere` link
would be written through. So every file loremap opens under a vault is opened with
`O_NOFOLLOW` (a file that is a symlink is never followed, even to a file inside the vault: the
check is then part of the `open` itself, with no window between a check and the open), and its
folder must resolve inside the vault's boundary (the repository, or the personal vault); a
folder linked elsewhere inside the boundary is followed. Writes refuse with `UnsafePath` before
anything changes; readers skip such a file with one warning.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from loremap.errors import Conflict, UnsafePath

TMP_SUFFIX = ".tmp"
# File times come from a coarse clock: a file rewritten within the same tick with the same size
# keeps its stat. As git does with "racily clean" entries, a stat this recent is not trusted.
RACY_NS = 2_000_000_000


def trusted_mtime(mtime_ns: int) -> int:
    """The mtime to record for a file: 0 (re-hash it next time) while it is racy."""
    return 0 if time.time_ns() - mtime_ns < RACY_NS else mtime_ns


# --- symlinks ---------------------------------------------------------------------------------


def _linked_part(folder: Path, root: Path) -> Path:
    """The deepest folder from `folder` up to `root` that is a symlink (else `folder`)."""
    probe = folder
    while probe != root and probe.parent != probe:
        if probe.is_symlink():
            return probe
        probe = probe.parent
    return folder


def outside(folder: Path, root: Path) -> str | None:
    """Why `folder` (which need not exist) is not inside `root` once symlinks are resolved, as
    "<link> is a symlink to <target>, outside <root>"; None when it is inside."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(folder)
    if real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep):
        return None
    link = _linked_part(folder, root)
    try:
        target = os.readlink(link)
    except OSError:  # no link found on the way: `root` itself moved, or `folder` is not under it
        return f"{folder} resolves to {real}, outside {real_root}"
    return f"{link} is a symlink to {target}, outside {real_root}"


def link_target(path: Path) -> str | None:
    """What the symlink `path` points to, or None when `path` is not a symlink."""
    try:
        return os.readlink(path)
    except OSError:
        return None


def check_folder(folder: Path, root: Path) -> None:
    """Raise `UnsafePath` when `folder` leads out of `root` through a symlink."""
    why = outside(folder, root)
    if why is not None:
        raise UnsafePath(f"refused: {why}; loremap does not follow it (remove the link)")


def check_write(path: Path, root: Path) -> None:
    """Raise `UnsafePath`, before anything is written, when writing `path` would go through a
    symlink: its folder leads out of `root`, or `path` itself is a symlink."""
    why = outside(path.parent, root)
    target = link_target(path)
    if why is None and target is not None:
        why = f"{path} is a symlink to {target}"
    if why is not None:
        raise UnsafePath(f"refused: {why}; loremap writes nothing through a symlink "
                         "(nothing was written; remove the link)")


def _open_nofollow(path: Path, flags: int, mode: int = 0o644) -> int:
    """`os.open` of `path` with `flags`, never through a symlink (`UnsafePath` naming it)."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        target = link_target(path) if exc.errno in (errno.ELOOP, errno.EMLINK) else None
        if target is None:
            raise
        raise UnsafePath(f"{path} is a symlink to {target}; loremap does not follow "
                         "links") from None


def read_nofollow(path: Path) -> tuple[bytes, os.stat_result]:
    """The bytes and stat of the regular file `path`, never through a symlink (`UnsafePath`).

    `O_NONBLOCK` keeps a FIFO from blocking the open; its fstat then refuses it.
    """
    fd = _open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(f"{path} is not a regular file")
        return fh.read(), st


def read_confined(path: Path, root: Path) -> bytes:
    """`read_nofollow` of `path` once its folder is known to lie inside `root`."""
    check_folder(path.parent, root)
    return read_nofollow(path)[0]


# --- writes -----------------------------------------------------------------------------------


def temp_path_for(path: Path) -> Path:
    """The temporary sibling of `path`: hidden, per-process, ignored by vault scans."""
    return path.with_name(f".{path.name}.{os.getpid()}{TMP_SUFFIX}")


def write_temp(path: Path, data: bytes, durable: bool = True) -> Path:
    """Write `data` to the temporary sibling of `path` (fsync'ed when `durable`: a hook's
    scratch state skips it) and return the temp path; never through a symlink."""
    tmp = temp_path_for(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        fd = os.open(tmp, flags, 0o644)
    except FileExistsError:
        # Trigger: this process's temp name exists (a crashed writer's leftover, or a planted
        # symlink). Why: O_TRUNC would write through a link. Outcome: unlink the name (a link,
        # never its target) and create it afresh.
        tmp.unlink()
        fd = os.open(tmp, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
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


def atomic_write(path: Path, data: bytes, root: Path | None = None, durable: bool = True
                 ) -> None:
    """Replace `path` with `data` atomically (temp file + fsync + `os.replace`); with `root`,
    refuse (`UnsafePath`) a `path` that is a symlink or whose folder leads out of `root`.
    Without `durable` (a hook's scratch state) neither the file nor its folder is fsync'ed."""
    if root is not None:
        check_write(path, root)
    tmp = write_temp(path, data, durable)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if durable:
        fsync_dir(path.parent)


def append_capped(path: Path, line: bytes, root: Path, max_bytes: int) -> None:
    """Append `line` to the log `path` (created with its folder when missing) in one `write`
    of an `O_APPEND` descriptor, never through a symlink (`UnsafePath`): concurrent appenders
    never interleave a line. Past `max_bytes` the older half is dropped under the log's lock
    (a line another process appends during that rewrite can be lost: these are logs, and a
    lock on every append would cost a hook more than the line is worth)."""
    if path.parent.exists():
        check_folder(path.parent, root)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd = _open_nofollow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath(f"{path} is not a regular file")
        os.write(fd, line)
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if size > max_bytes:
        with file_lock(path.with_suffix(".lock"), 2.0, root):
            data = read_confined(path, root)
            if len(data) > max_bytes:
                atomic_write(path, data[len(data) // 2:].split(b"\n", 1)[-1], root,
                             durable=False)


@contextlib.contextmanager
def file_lock(lock_path: Path, timeout: float, root: Path | None = None) -> Iterator[None]:
    """Hold an exclusive advisory lock on `lock_path` (created if needed) for the block; with
    `root`, refuse a lock file that is a symlink or whose folder leads out of `root`.

    Trigger: another process holds the lock.
    Why: flock has no timeout of its own, and a stuck writer must not hang an agent's hook.
    Outcome: poll with a growing pause; after `timeout` seconds raise `Conflict`.
    """
    if root is not None:
        check_write(lock_path, root)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _BINARY, 0o644)
    try:
        take, release = _locker(fd)
        deadline = time.monotonic() + timeout
        pause = 0.001
        while not take():
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
            release()
    finally:
        os.close(fd)


# O_NOFOLLOW does not exist on Windows (nor symlinks a clone could plant without privileges);
# O_BINARY exists only there.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)
# Which lock primitive `file_lock` uses: flock where fcntl exists, else portalocker (tests set
# "portalocker" to run that path here).
LOCKER = "flock"


def _locker(fd: int) -> tuple[Callable[[], bool], Callable[[], None]]:
    """Try-once and release functions of an exclusive lock on the open file `fd`."""
    try:
        import fcntl
    except ImportError:  # Windows
        fcntl = None  # type: ignore[assignment]
    if fcntl is not None and LOCKER == "flock":
        def take() -> bool:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            return True

        return take, lambda: fcntl.flock(fd, fcntl.LOCK_UN)
    import portalocker  # type: ignore[import-not-found, unused-ignore]

    handle = os.fdopen(fd, "r+b", buffering=0, closefd=False)  # `file_lock` closes `fd`

    def take_portable() -> bool:
        try:
            portalocker.lock(handle, portalocker.LOCK_EX | portalocker.LOCK_NB)
        except portalocker.exceptions.LockException:
            return False
        return True

    return take_portable, lambda: portalocker.unlock(handle)
