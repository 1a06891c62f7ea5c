"""The basic-memory reader: a basic-memory project folder as importer items.

basic-memory keeps one markdown file per entity, anywhere under the project folder:

```markdown
---
title: Coffee Brewing Methods
type: note
permalink: notes/coffee-brewing-methods
tags:
- coffee
---

# Coffee Brewing Methods

## Observations
- [method] Pour over gives a cleaner cup #brewing
- [tip] Grind just before brewing

## Relations
- relates_to [[Coffee Bean Origins]]
- requires [[Burr Grinder]]
```

Each file becomes an `Item`: its origin is the permalink (the file's path without `.md` when
it has none), its type the loremap type its `type` names (`note` and other kinds are
concepts, the kind kept as a tag), its tags the frontmatter's and the observations' `#tags`,
its body the text with the observations (the relations become links and leave the body). A
relation's `[[Target]]` names an entity by title or permalink; one to no entity of the project
is skipped by the import path with the reason. Symlinks are refused (never followed), hidden
folders (`.basic-memory/`, `.git/`) are not read, and each file is read as `markdown.py` reads
every folder importer's (no link followed, a size cap, malformed YAML one line naming it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from loremap.errors import InvalidInput
from loremap.imports.items import Item, Skipped
from loremap.imports.markdown import read_markdown
from loremap.imports.rubi import fold

if TYPE_CHECKING:
    from loremap.imports.run import Entry

TOOL = "basic-memory"
TYPES = ("decision", "bug", "gotcha", "concept", "procedure", "error", "episode", "preference")
RELATIONS = {
    "about": "about", "describes": "about", "documents": "about", "affects": "affects",
    "modifies": "affects", "supersedes": "supersedes", "replaces": "supersedes",
    "causes": "causes", "caused_by": "relates", "fixes": "fixes", "solves": "fixes",
    "resolves": "fixes", "depends_on": "depends_on", "requires": "depends_on",
    "uses": "depends_on", "needs": "depends_on", "part_of": "part_of", "belongs_to": "part_of",
    "implements": "part_of", "extends": "relates", "relates_to": "relates",
    "related_to": "relates", "relates": "relates", "see_also": "relates",
}
_RELATION = re.compile(r"-\s+([^\[\]]+?)\s+\[\[([^\]|]+)(?:\|[^\]]*)?\]\](?:\s*\(.*\))?\s*")
_TAG = re.compile(r"(?<![\w#])#([\w][\w/-]*)")
_OBSERVATION = re.compile(r"-\s+\[[^\]]+\]\s+.*")


class _File(NamedTuple):
    where: str
    meta: dict[str, Any]
    rest: str


def read_project(path: Path) -> Iterator[Entry]:
    """Every entity of the basic-memory project folder `path`."""
    if not path.is_dir():
        raise InvalidInput(f"{path} is not a folder (give a basic-memory project folder)")
    files: list[_File] = []
    for entry in _walk(path, path):
        if isinstance(entry, Skipped):
            yield entry
        else:
            files.append(entry)
    names: dict[str, str] = {}  # title, permalink, path stem (folded) -> origin
    for file in files:
        origin = _origin(file)
        for name in (origin, _text(file.meta.get("title")), Path(file.where).stem,
                     file.where.removesuffix(".md")):
            if name:
                names.setdefault(_key(name), origin)
    for file in files:
        yield from _item(file, names)


def _walk(folder: Path, root: Path) -> Iterator[_File | Skipped]:

    for child in sorted(folder.iterdir()):
        where = str(child.relative_to(root))
        if child.name.startswith("."):
            continue
        if child.is_symlink():
            yield Skipped(where, f"refused: a symlink to {os.readlink(child)}; loremap does not "
                          "follow links in the source folder")
            continue
        if child.is_dir():
            yield from _walk(child, root)
            continue
        if child.suffix != ".md":
            continue
        read = read_markdown(child, where)
        if isinstance(read, Skipped):
            yield read
            continue
        meta, rest = read
        yield _File(where, meta, rest)


def _text(value: Any) -> str:
    return "" if value is None else " ".join(str(value).split())


def _key(name: str) -> str:
    return fold(name).replace("_", " ").strip()


def _origin(file: _File) -> str:
    return _text(file.meta.get("permalink")) or file.where.removesuffix(".md")


def _item(file: _File, names: dict[str, str]) -> Iterator[Entry]:
    origin = _origin(file)
    lines = file.rest.strip("\n").split("\n")
    title = _text(file.meta.get("title"))
    if lines and lines[0].startswith("# "):
        title = title or lines[0][2:].strip()
        if lines[0][2:].strip() == title:
            lines = lines[1:]
    title = title or Path(file.where).stem
    kind = fold(_text(file.meta.get("type")) or "note")
    note_type = kind if kind in TYPES else "concept"
    tags = list(_tags(file.meta.get("tags")))
    if note_type != kind:
        tags.append(kind)
    links: list[tuple[str, str]] = []
    supersedes = None
    body: list[str] = []
    section = ""
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("## "):
            section = fold(stripped[3:])
            if section == "relations":
                continue
        relation = _RELATION.fullmatch(stripped) if stripped.startswith("- ") else None
        if relation is not None and not _OBSERVATION.fullmatch(stripped):
            rel, target = fold(relation[1]), relation[2].strip()
            mapped = RELATIONS.get(rel, "relates")
            target_origin = names.get(_key(target), target)
            if mapped == "supersedes":
                supersedes = target_origin
            else:
                links.append((mapped, target_origin))
            if section == "relations":
                continue
        if section == "relations" and not stripped:
            continue
        if _OBSERVATION.fullmatch(stripped):
            tags += _TAG.findall(stripped)
        body.append(line)
    yield Item(TOOL, origin, note_type, title, body="\n".join(body).strip(),
               links=tuple(dict.fromkeys(links)), supersedes=supersedes,
               tags=tuple(dict.fromkeys(t for t in tags if t)),
               recorded_at=_text(file.meta.get("created") or file.meta.get("date")) or None,
               aliases=(origin,) if origin != title else (), where=file.where)


def _tags(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(_text(v).lstrip("#") for v in value if _text(v))
    return tuple(t.strip().lstrip("#") for t in str(value).replace(",", " ").split()
                 if t.strip())
