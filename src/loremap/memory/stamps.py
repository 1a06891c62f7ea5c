"""How reconciliation decides what to read again: file stats, their signature, the plan.

Reading every note file on every command would be exact but slow; trusting stats alone would be
fast but miss same-size edits made within one tick of a coarse file clock. These helpers sit
between the two, the way git treats "racily clean" index entries.
"""

from __future__ import annotations

import time
import zlib

from loremap.vault.fs import RACY_NS
from loremap.vault.layout import LoadedNote, NoteFile, Vault


def stat_signature(scans: list[tuple[Vault, list[NoteFile]]]) -> str | None:
    """A digest of every note file's name and stat, or None while any of them is racy.

    A cache key for "nothing moved", not a defence against an adversary: CRC-32 of the names
    and Python's hash of the stat integers (deterministic for ints, unlike for str), which is
    far cheaper than hashing formatted text for 10,000 files.
    """
    newest = time.time_ns() - RACY_NS
    names: list[str] = []
    mtimes: list[int] = []
    sizes: list[int] = []
    for vault, files in scans:
        names.append(vault.scope)
        names += [f.id for f in files]
        mtimes += [f.mtime_ns for f in files]
        sizes += [f.size for f in files]
    if mtimes and max(mtimes) > newest:
        return None
    crc = zlib.crc32("\0".join(names).encode("utf-8", "surrogatepass"))
    mask = 0xFFFF_FFFF_FFFF_FFFF
    return f"{crc:08x}{hash(tuple(mtimes)) & mask:016x}{hash(tuple(sizes)) & mask:016x}"


class Changes:
    """What reconciliation would do: files to (re)index, stats to refresh, rows to drop."""

    __slots__ = ("upserts", "touches", "deletes", "seen")

    def __init__(self) -> None:
        self.upserts: list[LoadedNote] = []
        self.touches: list[tuple[str, int, int]] = []
        self.deletes: list[str] = []
        self.seen: dict[str, str] = {}

    def __bool__(self) -> bool:
        return bool(self.upserts or self.touches or self.deletes)
