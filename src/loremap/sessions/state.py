"""Per-session memory of the hooks: what they already said, so that each thing is said once.

One small JSON file per agent session in `.loremap/sessions/` (ignored by git), next to the
session record written before compaction. The hooks of one session run one at a time, except
the pre-tool hooks of a parallel tool batch; a lost update there repeats one file's warning,
which is why no lock is taken. Standard library only (this runs inside `loremap-hook`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

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
        self.session_id = check_session_id(session_id)
        self.path = self.dir / f"{self.session_id}.json"
        self.data: dict[str, Any] = self._load()

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

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
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f".{self.session_id}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(self.data, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)

    def write_record(self, text: str) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f".{self.session_id}.record.{os.getpid()}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.record_path)
        return self.record_path

    def read_record(self) -> str | None:
        try:
            return self.record_path.read_text(encoding="utf-8")
        except OSError:
            return None


def prune(loremap_dir: Path, max_age_s: float = MAX_AGE_S, now: float | None = None) -> int:
    """Delete session files older than `max_age_s`; returns how many went."""
    folder = loremap_dir / SESSIONS_DIR
    cutoff = (time.time() if now is None else now) - max_age_s
    gone = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                if entry.is_file() and entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
                    gone += 1
    return gone
