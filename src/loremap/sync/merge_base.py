"""The merge base (BASE) of a three-way sync: each note's hash as of this vault's last sync
with a database.

One JSON file per (vault folder, database, project key) in the user's state folder, never in the
repository (it describes this machine's copy, not the team's): `<state>/sync/<sha256>.json`.
Without it a note missing here could be a deletion or a note never pulled, and a note that
differs could be an edit here or an edit there. It is replaced atomically, and only after the
changes it records have landed on both sides.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

from loremap.vault import fs

FORMAT = 1


def database_key(url: str) -> str:
    """The database of `url` without its password: every connection parameter but that, in a
    stable order (so `?host=` sockets and ports tell two servers apart)."""
    import psycopg

    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return url.split("@")[-1]
    info.pop("password", None)
    return " ".join(f"{k}={info[k]}" for k in sorted(info) if info[k] not in (None, ""))


def base_path(state: Path, vault_root: Path, url: str, project: str) -> Path:
    key = "\0".join((str(vault_root.resolve()), database_key(url), project))
    return state / "sync" / f"{hashlib.sha256(key.encode('utf-8')).hexdigest()}.json"


class Base:
    """The note hashes of the last sync (`notes`: id -> SHA-256 of the file)."""

    def __init__(self, path: Path, notes: Mapping[str, str], described: Mapping[str, str]
                 ) -> None:
        self.path = path
        self.notes = dict(notes)
        self.described = dict(described)

    @classmethod
    def load(cls, path: Path, described: Mapping[str, str]) -> tuple[Base, str | None]:
        """The base at `path` (empty when there is none yet); and a warning when the file
        could not be read (it is then treated as empty: the next sync compares hashes only)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls(path, {}, described), None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            return cls(path, {}, described), (
                f"the sync base {path} is unreadable ({type(exc).__name__}); comparing hashes "
                "only this time")
        notes = data.get("notes") if isinstance(data, dict) else None
        if not isinstance(notes, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in notes.items()):
            return cls(path, {}, described), (
                f"the sync base {path} is not one loremap wrote; comparing hashes only this time")
        return cls(path, notes, described), None

    def save(self) -> None:
        data = {"format": FORMAT, **self.described,
                "synced_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "notes": dict(sorted(self.notes.items()))}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fs.atomic_write(self.path, (json.dumps(data, indent=1) + "\n").encode("utf-8"))

    def update(self, changes: Mapping[str, str | None]) -> None:
        """Record `changes` (id -> the agreed hash, or None: the note is gone on both sides)."""
        for note_id, digest in changes.items():
            if digest is None:
                self.notes.pop(note_id, None)
            else:
                self.notes[note_id] = digest
