"""Things the question names exactly: file paths and names, Python dotted modules, symbols,
note ids, note titles and aliases.

Exact names are the strongest evidence a question carries ("the bug is in
seaborn/_core/plot.py", "`PolyFit` crashes", "see gotcha-coupon-applied-twice"), and BM25
dilutes them among the other words. Symbols count only when they look like code (written with
`_`, in camelCase, called, dotted or quoted) and few files define them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import NamedTuple, Protocol

from loremap.model.note import ID_PATTERN
from loremap.model.search import NodeRow, SymbolRow

_CHUNK = re.compile(r"[\w./\\-]*\w")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,6}$")
# A leading dot is a method named on its own (`.register_hook()`), not the middle of a chain.
_IDENT = re.compile(r"(?<![\w.])(`?)\.?([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(`?)"
                    r"(\()?")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
_SPACES = re.compile(r"[^\w]+")


class EntityHit(NamedTuple):
    """A node the question names; `strength` orders the list, `why` explains it."""

    id: str
    strength: float
    why: str
    symbol: SymbolRow | None = None


class NameIndex(Protocol):
    def files_named(self, names: Iterable[str]) -> dict[str, list[str]]: ...

    def symbols_named(self, names: Iterable[str], max_definers: int) -> list[SymbolRow]: ...

    def existing_ids(self, ids: Iterable[str]) -> set[str]: ...


def _chunks(text: str) -> list[str]:
    return [c.replace("\\", "/").strip("./-") for c in _CHUNK.findall(text)]


def _tails(path: str) -> list[str]:
    """`path` and what follows each of its `/` (`a/b/c.py` -> itself, `b/c.py`, `c.py`)."""
    return [path, *(path[i + 1:] for i, c in enumerate(path) if c == "/")]


def paths(store: NameIndex, text: str) -> list[EntityHit]:
    """Files and modules named by path, file name or Python dotted name."""
    wanted: dict[str, list[str]] = {}  # file name -> the chunks that end with it
    module_ids: list[str] = []
    for chunk in _chunks(text):
        if "/" in chunk or _EXTENSION.search(chunk):
            name = chunk.rsplit("/", 1)[-1]
            wanted.setdefault(name, []).append(chunk)
            if "/" in chunk and not _EXTENSION.search(chunk):
                module_ids.append(chunk.rstrip("/") + "/")
        if "." in chunk and "/" not in chunk and chunk.count(".") >= 1:
            parts = chunk.split(".")
            if all(p.isidentifier() for p in parts) and len(parts) >= 2:
                dotted = "/".join(parts)
                for name, path in ((parts[-1] + ".py", dotted + ".py"),
                                   ("__init__.py", dotted + "/__init__.py")):
                    wanted.setdefault(name, []).append(path)
                module_ids.append(dotted + "/")
    hits: list[EntityHit] = []
    found = store.files_named(wanted)
    for name, chunks in wanted.items():
        hits += _named(name, chunks, found.get(name, []))
    hits += [EntityHit(m, 2.5, "named in the question")
             for m in sorted(store.existing_ids(module_ids))]
    return hits


def _named(name: str, chunks: list[str], paths_: list[str]) -> list[EntityHit]:
    """The files among `paths_` (those called `name`) that `chunks` (the question's chunks
    ending with `name`) name.

    Each path's first chunk naming it: the chunk is the path or ends with it (a longer path,
    a traceback's), or a path with a folder that the path ends with. A bare file name is not
    the tail of a path (`__init__.py` alone names no one package's); it names its file weakly
    when few files have that name. Looked up by the chunks' tails; a path is tested only
    against the chunks with a folder (a few), not against every chunk."""
    if not paths_:
        return []
    ending: dict[str, int] = {}  # a chunk's tail -> the first chunk with it
    folded: dict[str, int] = {}  # "/" and a chunk with a folder -> its first place
    for i, chunk in enumerate(chunks):
        for tail in _tails(chunk):
            ending.setdefault(tail, i)
        if "/" in chunk:
            folded.setdefault("/" + chunk, i)
    none = len(chunks)
    bare = (chunks.index(name) if name in chunks and len(paths_) <= 3
            and name != "__init__.py" else none)
    hits = []
    for path in paths_:
        first = ending.get(path, none)
        for suffix, i in folded.items():
            if i < first and path.endswith(suffix):
                first = i
        if first < none and first <= bare:
            hits.append(EntityHit(path, 3.0, "named in the question"))
        elif bare < none:
            hits.append(EntityHit(path, 2.0 / len(paths_), f"named in the question ({name})"))
    return hits


def frames(store: NameIndex, files: Sequence[str]) -> list[EntityHit]:
    """The project's files among a traceback's frames (`files`, deepest first), the deepest
    strongest: where the traceback ends is nearest the fault, its first frames are the
    caller's (a test, a script, the command line)."""
    hits: list[EntityHit] = []
    seen: set[str] = set()
    for file in files:
        for hit in paths(store, file):
            if hit.id not in seen and not hit.id.endswith("/"):
                seen.add(hit.id)
                hits.append(EntityHit(hit.id, 4.0 / (1 + len(hits)),
                                      "in the traceback" if hits else "where the traceback ends"))
    return hits


def identifiers(text: str) -> list[str]:
    """Names in `text` that can only be code: with `_` inside (`apply_coupon`), in camelCase
    (`formatPrice`, `PolyFit`), or a capitalised word written as code (quoted, called or
    dotted: `Plot(`, `so.Plot`); three characters or more. A plain lowercase word (`get`,
    `index`, `run`) is a word of the language even when it is also a method somewhere."""
    names: list[str] = []
    for match in _IDENT.finditer(text):
        tick, name, close, call = match.groups()
        quoted = bool(tick and close)
        parts = name.split(".")
        called = bool(call)
        for i, part in enumerate(parts):
            # A lowercase word without an inner `_` has no capital to be camelCase or a class
            # by: most of a text's words, passed without the tests below.
            if len(part) < 3 or (part.islower() and "_" not in part.strip("_")):
                continue
            as_code = quoted or len(parts) > 1 or (called and i == len(parts) - 1)
            if ("_" in part.strip("_") or _CAMEL.search(part)
                    or (as_code and part[0].isupper() and not part.isupper())):
                names.append(part)
    return list(dict.fromkeys(names))


def symbols(store: NameIndex, text: str, max_definers: int, names: Sequence[str] = ()
            ) -> list[EntityHit]:
    """Files defining a code-looking name of the question, or one of `names` (known to be
    code: a traceback's functions), rarer names first."""
    rows = store.symbols_named(list(dict.fromkeys([*identifiers(text), *names])), max_definers)
    definers: dict[str, set[str]] = {}
    for row in rows:
        definers.setdefault(row.name, set()).add(row.file)
    hits = []
    for row in rows:
        count = len(definers[row.name])
        hits.append(EntityHit(row.file, 1.5 / count, f"defines {row.name} (named in the "
                              "question)", row))
    return hits


def note_ids(store: NameIndex, text: str) -> list[EntityHit]:
    ids = [c.lower() for c in _chunks(text) if "-" in c and ID_PATTERN.fullmatch(c.lower())]
    return [EntityHit(i, 3.0, "named in the question") for i in sorted(store.existing_ids(ids))]


def normalise(text: str) -> str:
    return " " + _SPACES.sub(" ", text.lower()).strip() + " "


def titles(candidates: Sequence[NodeRow], text: str,
           analyse: Callable[[str], Collection[str]] | None = None) -> list[EntityHit]:
    """Notes among `candidates` whose title or an alias is written out in the question, or
    (with `analyse`) whose title's words, two or more, are all among the question's words in
    any order ("how are refunds issued" and the note "How refunds are issued")."""
    query = normalise(text)
    words = set(analyse(text)) if analyse is not None else set()
    hits = []
    for node in candidates:
        if node.kind != "note":
            continue
        for name in (node.title, *node.aliases):
            label = "title" if name == node.title else "alias"
            phrase = normalise(name)
            if (len(phrase.split()) >= 2 or len(phrase) >= 8) and phrase in query:
                hits.append(EntityHit(node.id, 2.0, f"its {label} is in the question"))
                break
            own = set(analyse(name)) if analyse is not None else set()
            if len(own) >= 2 and own <= words:
                hits.append(EntityHit(node.id, 1.5, f"its {label} says what the question asks"))
                break
    return hits


def merge(hits: Iterable[EntityHit]) -> list[EntityHit]:
    """One hit per node (the strongest, with the symbols of the others), strongest first."""
    best: dict[str, EntityHit] = {}
    order: dict[str, int] = {}
    for hit in hits:
        order.setdefault(hit.id, len(order))
        old = best.get(hit.id)
        if old is None:
            best[hit.id] = hit
        else:
            best[hit.id] = hit._replace(strength=old.strength + hit.strength) \
                if hit.strength > old.strength else old._replace(
                    strength=old.strength + hit.strength)
    return sorted(best.values(), key=lambda h: (-h.strength, order[h.id]))
