"""Per-session memory of the hooks: what they already said, so that each thing is said once.

One small JSON file per agent session in `.loremap/sessions/` (ignored by git), next to the
session record written before compaction. The hooks of one session run one at a time, except
the pre-tool hooks of a parallel tool batch; a lost update there repeats one file's warning,
which is why no lock is taken. Standard library only (this runs inside `loremap-hook`).

A cloned repository may carry `.loremap/sessions` as a symlink, or a state file as one: the
session record is injected into the agent's context after compaction, and `prune` deletes
files. No such link is followed: a read skips it (one line in `hook.log`), a write refuses
(`UnsafePath`, so the hook fails open), and `prune` leaves a linked folder alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from loremap.errors import UnsafePath
from loremap.vault import fs

SESSIONS_DIR = "sessions"
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
MAX_AGE_S = 30 * 86400


def check_session_id(session_id: object) -> str:
    """`session_id` if it is safe as a file name, else `ValueError` (it comes from stdin)."""
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id) or \
            ".." in session_id:
        raise ValueError(f"bad session id {session_id!r}")
    return session_id


class SessionState:
    """The hooks' state of one session: warned files, nudges and questions already asked.

    `epoch` counts the session's compactions: a nudge belongs to one epoch, so the meter asks
    again in each new context.
    """

    def __init__(self, loremap_dir: Path, session_id: str) -> None:
        self.dir = loremap_dir / SESSIONS_DIR
        self.boundary = loremap_dir.parent  # the repository: no symlink may lead out of it
        self.session_id = check_session_id(session_id)
        self.path = self.dir / f"{self.session_id}.json"
        self.data: dict[str, Any] = self._load()

    def _load(self) -> dict[str, Any]:
        raw = self._read(self.path)
        try:
            data = json.loads(raw) if raw is not None else {}
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def _read(self, path: Path) -> str | None:
        """The text of `path`, or None when it is missing, unreadable or a symlink."""
        try:
            return fs.read_confined(path, self.boundary).decode("utf-8")
        except UnsafePath as exc:
            # Trigger: the file or `sessions/` is a symlink. Why: its target is not this
            # session's state, and the record would be injected into the agent's context.
            # Outcome: read as absent, with one line in hook.log naming it.
            from loremap.logs import log_line

            log_line("hook.log", f"skipped {path}: {exc}")
        except (OSError, ValueError):
            pass
        return None

    def _write(self, path: Path, text: str) -> None:
        """Replace `path` with `text` (temp file + rename), refused through a symlink."""
        fs.check_write(path, self.boundary)
        self.dir.mkdir(parents=True, exist_ok=True)
        fs.atomic_write(path, text.encode("utf-8"), durable=False)

    @property
    def record_path(self) -> Path:
        return self.dir / f"{self.session_id}.record.md"

    @property
    def epoch(self) -> int:
        value = self.data.get("epoch", 0)
        return value if isinstance(value, int) else 0

    def warned(self, path: str) -> bool:
        return path in self.data.get("warned", [])

    def mark_warned(self, path: str) -> None:
        warned = self.data.get("warned")
        self.data["warned"] = [*(warned if isinstance(warned, list) else []), path]

    def flag(self, name: str) -> bool:
        """Whether `name` was already done in this session (in this epoch for `nudged`)."""
        value = self.data.get(name)
        return value == self.epoch if name == "nudged" else bool(value)

    def set_flag(self, name: str) -> None:
        self.data[name] = self.epoch if name == "nudged" else True

    def next_epoch(self) -> None:
        self.data["epoch"] = self.epoch + 1

    def save(self) -> None:
        """Write the state atomically (temp file + rename)."""
        self._write(self.path, json.dumps(self.data, sort_keys=True))

    def write_record(self, text: str) -> Path:
        self._write(self.record_path, text)
        return self.record_path

    def read_record(self) -> str | None:
        return self._read(self.record_path)


def prune(loremap_dir: Path, max_age_s: float = MAX_AGE_S, now: float | None = None) -> int:
    """Delete session files older than `max_age_s`; returns how many went."""
    folder = loremap_dir / SESSIONS_DIR
    if fs.outside(folder, loremap_dir.parent) is not None:
        return 0  # a folder linked out of the repository holds nothing of ours to delete
    cutoff = (time.time() if now is None else now) - max_age_s
    gone = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                if (entry.is_file(follow_symlinks=False)
                        and entry.stat(follow_symlinks=False).st_mtime < cutoff):
                    os.unlink(entry.path)
                    gone += 1
    return gone
