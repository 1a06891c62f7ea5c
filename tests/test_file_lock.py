"""The vault's file lock: one holder at a time across processes, a clear `Conflict` after the
timeout, the same lock whichever primitive takes it (flock on POSIX, portalocker as on
Windows), and a lock file planted as a symlink refused before anything is opened."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from loremap.errors import Conflict, UnsafePath
from loremap.vault import fs

HOLDER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from loremap.vault import fs
    fs.LOCKER = sys.argv[2]
    with fs.file_lock(Path(sys.argv[1]), timeout=5):
        print("held", flush=True)
        sys.stdin.readline()
    print("released", flush=True)
""")


class Holder:
    """Another process holding the lock until `release`."""

    def __init__(self, path: Path, locker: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), locker],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "held"

    def release(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "released"
        assert self.proc.wait(timeout=30) == 0
        self.proc.stdin.close()
        self.proc.stdout.close()


@pytest.fixture(params=["flock", "portalocker"])
def locker(request, monkeypatch):
    monkeypatch.setattr(fs, "LOCKER", request.param)
    return request.param


@pytest.mark.parametrize("other", ["flock", "portalocker"])
def test_a_held_lock_makes_the_next_taker_wait_then_fail_in_one_line(tmp_path, locker, other):
    path = tmp_path / "vault.lock"
    holder = Holder(path, other)
    try:
        with pytest.raises(Conflict, match="another loremap process holds .*vault.lock"), \
                fs.file_lock(path, timeout=0.2):
            pass
    finally:
        holder.release()
    with fs.file_lock(path, timeout=5):  # free again once the holder let go
        pass


def test_the_lock_is_taken_again_after_release_in_the_same_process(tmp_path, locker):
    path = tmp_path / "vault.lock"
    for _ in range(3):
        with fs.file_lock(path, timeout=1):
            assert path.exists()


def test_a_lock_file_that_is_a_symlink_is_refused(tmp_path, locker):
    target = tmp_path / "elsewhere"
    target.write_text("keep me", encoding="utf-8")
    root = tmp_path / "repo"
    (root / ".loremap").mkdir(parents=True)
    link = root / ".loremap" / "vault.lock"
    link.symlink_to(target)
    with pytest.raises(UnsafePath), fs.file_lock(link, timeout=1, root=root):
        pass
    assert target.read_text(encoding="utf-8") == "keep me"
