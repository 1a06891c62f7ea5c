"""A cuba-memorys sync bundle read from disk: the folder `cuba-memorys sync export` writes.

The bundle (`.memory-industry/`, or `.cuba-memorys/` from releases before the rename) holds
`manifest.json` (`schema_version` 1 or 2, the counts of what was exported, a `manifest_hash`),
one JSON file per entity with its observations under `entities/`, `episodes/<YYYY-MM>/`,
`errors/`, `decisions/` (older releases), and `relations.json`, `procedures.json`,
`tombstones.json`. `facts.json` (a bitemporal mirror of the observations), `projects.json`,
`artifacts.json` and `source_trust.json` hold nothing loremap keeps.

The manifest is checked first and stops the whole import when it does not describe the files.
Its `manifest_hash` is recomputed as the tool computes it: releases writing schema 2 hash
`"<schema>\n<project id>\n"` followed by one `"<relative path> <sha256 of the file>\n"` per
file they wrote, sorted by path; older releases (schema 1) hashed only the compact JSON of the
schema, project and counts. A hash matching neither, or counts of entities, episodes, errors,
observations and relations that differ from the files, is one error and nothing is imported.
A bundle is untrusted input (it comes out of a repository anyone with push access writes to):
a file or folder of it that is a symlink refuses the whole bundle (`UnsafePath`), and every
file is opened without following one (`vault/fs.py`). A file that does not parse (in a bundle
whose hash does not cover its contents) is one `Skipped` naming it, and the rest is imported.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from loremap.errors import InvalidInput, UnsafePath
from loremap.imports import cuba_records as rec
from loremap.imports.cuba import Graph, Placed
from loremap.imports.items import Skipped
from loremap.vault.fs import link_target, read_confined, read_nofollow

SCHEMAS = (1, 2)
# The files `sync export` writes beside the folders (the hash covers them, and nothing else).
TOP_FILES = ("relations.json", "projects.json", "tombstones.json", "facts.json",
             "procedures.json", "artifacts.json", "source_trust.json", "embeddings.bin.zst")
FILE_FOLDERS = ("entities", "decisions", "errors")
MANIFEST = "manifest.json"
# Where `sync export` writes when given no directory, newest name first.
FOLDERS = (".memory-industry", ".cuba-memorys")
HASH = re.compile(r"[0-9a-f]{64}")
# No file of a bundle is read past this: an observation is capped far below it (cuba.py).
MAX_FILE_BYTES = 64 * 1024 * 1024
T = TypeVar("T")


class Bundle:
    """One bundle folder being read: its root, and the skips met on the way."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.skipped: list[Skipped] = []

    def load(self, relative: str) -> object | None:
        """The parsed JSON of `relative`, or None (and a `Skipped` naming it)."""
        path = self.root / relative
        try:
            if path.lstat().st_size > MAX_FILE_BYTES:
                raise InvalidInput(f"over {MAX_FILE_BYTES:,} bytes")
            data = read_confined(path, self.root)
            parsed: object = json.loads(data.decode("utf-8"))
            return parsed
        except json.JSONDecodeError as exc:
            self.skip(relative, f"not valid JSON ({exc.msg}, line {exc.lineno}): not imported")
        except UnicodeDecodeError:
            self.skip(relative, "not UTF-8 text: not imported")
        except UnsafePath as exc:
            self.skip(relative, str(exc))
        except (InvalidInput, OSError) as exc:
            self.skip(relative, f"{_why(exc)}: not imported")
        return None

    def files(self, folder: str, depth: int = 1) -> list[str]:
        """The `.json` files under `folder` (`depth` 2 for `episodes/<month>/`), sorted; a
        folder that is a symlink is refused with a `Skipped`."""
        path = self.root / folder
        if path.is_symlink():
            self.skip(folder, f"refused: {path} is a symlink to {os.readlink(path)}; loremap "
                      "does not follow links out of a bundle")
            return []
        if not path.is_dir():
            return []
        found: list[str] = []
        for entry in _names(path):
            name = f"{folder}/{entry}"
            if depth == 1:
                # A file that is a symlink is refused when it is opened (`load`).
                if entry.endswith(".json"):
                    found.append(name)
            elif (path / entry).is_symlink() or (path / entry).is_dir():
                found.extend(self.files(name, depth - 1))
        return found

    def rows(self, relative: str, parse: Callable[[rec.Row], T]) -> list[Placed[T]]:
        """The records of a file holding a JSON list of rows (`relations.json`, ...); none when
        the file is absent (a schema 1 bundle has no procedures nor tombstones)."""
        path = self.root / relative
        if not path.exists() and not path.is_symlink():
            return []
        data = self.load(relative)
        if data is None:
            return []
        if not isinstance(data, list):
            self.skip(relative, "not a JSON list: not imported")
            return []
        placed: list[Placed[T]] = []
        for n, row in enumerate(data, 1):
            record = self.parse(f"{relative} (row {n})", row, parse)
            if record is not None:
                placed.append(Placed(record, f"{relative} (row {n})"))
        return placed

    def parse(self, where: str, row: object, parse: Callable[[rec.Row], T]) -> T | None:
        if not isinstance(row, dict):
            self.skip(where, "not a JSON object: not imported")
            return None
        try:
            return parse(row)
        except InvalidInput as exc:
            self.skip(where, f"{exc}: not imported")
            return None

    def skip(self, where: str, reason: str) -> None:
        self.skipped.append(Skipped(where, reason))


def read(path: Path) -> Graph:
    """The graph of the bundle at `path` (the bundle folder, or a project holding one)."""
    root = locate(path)
    bundle = Bundle(root)
    manifest = _manifest(root)
    _check_hash(root, manifest)
    entity_files = bundle.files("entities")
    entities = [placed for name in entity_files for placed in _entity(bundle, name)]
    decisions = tuple(Placed(dec, name) for name in bundle.files("decisions")
                      if (dec := _one(bundle, name, rec.decision)) is not None)
    episode_files = bundle.files("episodes", depth=2)
    episodes = [Placed(record, name) for name in episode_files
                if (record := _one(bundle, name, rec.episode)) is not None]
    error_files = bundle.files("errors")
    errors = [Placed(row, name) for name in error_files
              if (row := _one(bundle, name, rec.error)) is not None]
    graph = Graph(entities=entities, relations=bundle.rows("relations.json", rec.relation),
                  episodes=episodes, errors=errors,
                  procedures=bundle.rows("procedures.json", rec.procedure),
                  tombstones=bundle.rows("tombstones.json", rec.tombstone),
                  skipped=bundle.skipped, decisions=decisions)
    found = {"entities": len(entity_files), "episodes": len(episode_files),
             "errors": len(error_files),
             "observations": sum(len(p.record.observations) for p in entities),
             "relations": len(graph.relations)}
    # A kind is counted only when all of it was read: a file or folder refused, or that did
    # not parse, already has its line, and the rest is imported.
    unread = {"entities": ("entities",), "observations": ("entities",),
              "episodes": ("episodes",), "errors": ("errors",), "relations": ("relations.json",)}
    for kind, folders in unread.items():
        if any(s.where.split("/")[0].split(" ")[0] in folders for s in bundle.skipped):
            del found[kind]
    _check_counts(root, manifest, found)
    return graph


def locate(path: Path) -> Path:
    """The bundle folder: `path` itself when it holds a manifest, else its `.memory-industry/`
    (or `.cuba-memorys/`); `InvalidInput` when there is none."""
    if not path.is_dir():
        raise InvalidInput(f"{path} is not a folder: give the folder `cuba-memorys sync export` "
                           "wrote (.memory-industry/)")
    for folder in ("", *FOLDERS):
        candidate = path / folder if folder else path
        if (candidate / MANIFEST).exists() or (candidate / MANIFEST).is_symlink():
            return candidate
    raise InvalidInput(f"{path} holds no {MANIFEST}: it is not a cuba-memorys sync bundle "
                       "(`cuba-memorys sync export` writes one)")


def _manifest(root: Path) -> dict[str, object]:
    try:
        data = json.loads(read_confined(root / MANIFEST, root).decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{root / MANIFEST} is not valid JSON ({_why(exc)}): nothing was "
                           "imported") from None
    except UnsafePath as exc:
        raise UnsafePath(f"{exc}: nothing was imported") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{root / MANIFEST} is not a JSON object: nothing was imported")
    version = data.get("schema_version")
    if isinstance(version, bool) or version not in SCHEMAS:
        raise InvalidInput(f"{root / MANIFEST}: schema_version {version!r} is not one loremap "
                           f"reads ({', '.join(map(str, SCHEMAS))}): nothing was imported")
    digest = data.get("manifest_hash")
    if not isinstance(digest, str) or not HASH.fullmatch(digest):
        raise InvalidInput(f"{root / MANIFEST}: manifest_hash {digest!r} is not a SHA-256 "
                           "digest: the manifest was edited; nothing was imported")
    return data


def _check_hash(root: Path, manifest: dict[str, object]) -> None:
    declared = manifest["manifest_hash"]
    project = manifest.get("project_id")
    lines = "".join(f"{name} {digest}\n" for name, digest in sorted(_digests(root)))
    of_files = f"{manifest['schema_version']}\n{project or ''}\n{lines}"
    of_counts = json.dumps({"counts": manifest.get("counts"), "project_id": project,
                            "schema_version": manifest["schema_version"]},
                           sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if declared not in (_sha256(of_files.encode("utf-8")), _sha256(of_counts.encode("utf-8"))):
        raise InvalidInput(f"{root / MANIFEST}: manifest_hash {declared} does not match the "
                           "files (a file was edited, added or removed since the export); "
                           "nothing was imported")


def _digests(root: Path) -> Iterator[tuple[str, str]]:
    """(relative path, SHA-256) of every file the tool writes in a bundle; `UnsafePath` for a
    file or folder that is a symlink."""
    for name in TOP_FILES:
        if (root / name).exists() or (root / name).is_symlink():
            yield name, _file_digest(root, name)
    folders = [*FILE_FOLDERS]
    episodes = root / "episodes"
    _refuse_link(root, "episodes")
    if episodes.is_dir():
        folders += [f"episodes/{name}" for name in _names(episodes)
                    if (episodes / name).is_symlink() or (episodes / name).is_dir()]
    for folder in folders:
        _refuse_link(root, folder)
        if not (root / folder).is_dir():
            continue
        for name in _names(root / folder):
            if name.endswith(".json"):
                yield f"{folder}/{name}", _file_digest(root, f"{folder}/{name}")


def _names(folder: Path) -> list[str]:
    with os.scandir(folder) as entries:
        return sorted(entry.name for entry in entries)


def _refuse_link(root: Path, relative: str) -> None:
    target = link_target(root / relative)
    if target is not None:
        raise UnsafePath(f"refused: {relative} in {root} is a symlink to {target}; loremap "
                         "follows no link out of a bundle: nothing was imported")


def _file_digest(root: Path, relative: str) -> str:
    _refuse_link(root, relative)
    return _sha256(read_nofollow(root / relative)[0])


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_counts(root: Path, manifest: dict[str, object], found: dict[str, int]) -> None:
    counts = manifest.get("counts")
    if not isinstance(counts, dict):
        raise InvalidInput(f"{root / MANIFEST} has no counts: nothing was imported")
    for kind, number in found.items():
        declared = counts.get(kind)
        if declared is not None and declared != number:
            raise InvalidInput(
                f"{root / MANIFEST} does not match its files: it counts {declared} {kind}, the "
                f"bundle holds {number} (files added, removed or edited since the export); "
                "nothing was imported")


def _entity(bundle: Bundle, name: str) -> Iterator[Placed[rec.Entity]]:
    data = bundle.load(name)
    if data is None:
        return
    if not isinstance(data, dict):
        bundle.skip(name, "not a JSON object: not imported")
        return

    def parse(row: rec.Row) -> rec.Entity:
        listed = row.get("observations") or []
        if not isinstance(listed, list) or not all(isinstance(o, dict) for o in listed):
            raise InvalidInput("field 'observations' must be a list of objects")
        entity_id = rec.required(row, "id")
        return rec.entity(row, tuple(rec.observation(o, entity_id) for o in listed))

    record = bundle.parse(name, data, parse)
    if record is not None:
        yield Placed(record, name)


def _one(bundle: Bundle, name: str, parse: Callable[[rec.Row], T]) -> T | None:
    data = bundle.load(name)
    return None if data is None else bundle.parse(name, data, parse)


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
