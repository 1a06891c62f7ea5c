"""The vector slot: an `Embedder` turns texts into unit vectors; the index keeps a node's vectors
per model, one per chunk of its text; the `vectors` candidate list ranks nodes by the cosine of
their best chunk to the query.

The providers (the shipped MiniLM, a downloaded model, an endpoint) live in `loremap.embed`;
here are the protocol, `hash` (a small deterministic embedder, signed feature hashing of the
analyzer's tokens, that exercises the whole path in tests), the chunking, `embed_pending` and
`nearest`. Vectors are derived data: `embed_pending` fills in the nodes that have none, and a
node's vectors are dropped whenever the node is rewritten.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from loremap.errors import EmbedderUnavailable, InvalidInput
from loremap.model.code import section_starts
from loremap.store import VectorStore  # the index's vectors (declared with the store)
from loremap.text import Analyzer

if TYPE_CHECKING:
    from loremap.store import IndexStore, SearchStore

# A chunk is about 1,000 characters (~250 word pieces, the MiniLM window) with 200 of overlap,
# cut at a line or word boundary; a node gets at most 8 (a note's first screens say what it is).
CHUNK_CHARS = 1000
CHUNK_OVERLAP = 200
MAX_CHUNKS = 8
# A source file longer than this is embedded in windows of its own: its head (with its path and
# summary), then one window per section of code (the code map's sections: a definition, or a
# run of short ones, a dozen lines or more) holding the file's path and the section's first
# `SECTION_CHARS` characters (the signature, the docstring, the first lines), so a function deep
# in a long file has a vector of its own. At most `FILE_WINDOWS` windows a file; the sections
# beyond them (files of more than 31 sections) go without. An encoder costs ~0.07 s per
# 1,000-character window on a core.
FILE_CHARS = 2400
SECTION_CHARS = 600
FILE_WINDOWS = 32


# A vector: floats in a list, or a numpy row (numpy arrays are no `Sequence` to the checker).
Vector = Any
Vectors = Any  # rows of vectors: a list of them, or a numpy matrix


class Embedder(Protocol):
    name: str  # recorded with each vector: vectors of another model are never compared

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors of documents (notes, files, symbols)."""
        ...

    def embed_query(self, text: str) -> Vector:
        """The unit vector of a question (some models prefix queries)."""
        ...


class HashEmbedder:
    """Signed feature hashing of analyzer tokens into `dim` buckets, log-scaled, unit length.

    Deterministic (CRC-32, no seed), so tests can rely on its neighbours: texts sharing tokens
    are close, others near orthogonal. It knows no synonyms; it is a test device, not a model.
    """

    def __init__(self, analyzer: Analyzer, dim: int = 256) -> None:
        self.analyzer = analyzer
        self.dim = dim
        self.name = f"hash-{dim}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            counts: dict[str, int] = {}
            for token in self.analyzer.tokens(text):
                counts[token] = counts.get(token, 0) + 1
            vec = [0.0] * self.dim
            for token, count in counts.items():
                code = zlib.crc32(token.encode("utf-8", "surrogatepass"))
                sign = 1.0 if code & 0x80000000 else -1.0
                vec[code % self.dim] += sign * (1.0 + math.log(count))
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text])[0]


def chunks(text: str) -> list[str]:
    """`text` cut into the windows that are embedded one by one (one when it is short)."""
    text = text.strip()
    if len(text) <= CHUNK_CHARS:
        return [text]
    out: list[str] = []
    start = 0
    while start < len(text) and len(out) < MAX_CHUNKS:
        end = min(len(text), start + CHUNK_CHARS)
        if end < len(text):
            cut = max(text.rfind("\n", start + CHUNK_CHARS // 2, end),
                      text.rfind(" ", start + CHUNK_CHARS // 2, end))
            end = cut if cut > start else end
        out.append(text[start:end].strip())
        if end >= len(text):
            break
        start = max(end - CHUNK_OVERLAP, start + 1)
        while start < end and not text[start - 1].isspace():
            start += 1  # the next window starts on a word
    return [c for c in out if c]


# A source file's text as it is read (the index keeps its analysed tokens, not its lines).
Source = Callable[[str], str | None]


def _units(todo: Sequence[tuple[str, list[str]]]) -> Iterator[tuple[str, int, str]]:
    for node_id, pieces in todo:
        for number, piece in enumerate(pieces):
            yield node_id, number, piece


def windows(store: IndexStore, todo: Sequence[tuple[str, str]], source: Source | None
            ) -> list[tuple[str, list[str]]]:
    """Each node of `todo` (id, indexed text) with the windows it is embedded in (never none).

    A note or module is its text, cut by `chunks`. A file node's text is its path and summary,
    then its code (read through `source`): a function without a docstring has no summary, and
    its meaning is in its lines; a long file is its head, then its sections (`file_windows`)."""
    files: dict[str, str] = {}
    if source is not None:
        rows = store.nodes([node_id for node_id, _ in todo])
        files = {node_id: row.path or node_id for node_id, row in rows.items()
                 if row.kind == "file"}
    defined = _definition_lines(store, list(files.values()))
    out = []
    for node_id, text in todo:
        path = files.get(node_id)
        code = source(path) if path is not None and source is not None else None
        if not code:
            out.append((node_id, chunks(text)))
        elif len(code) <= FILE_CHARS:
            out.append((node_id, chunks(f"{text.strip()}\n{code}")))
        else:
            out.append((node_id, file_windows(text, path or node_id, code,
                                              defined.get(path or "", []))))
    return out


def _definition_lines(store: SearchStore, paths: Sequence[str]) -> dict[str, list[int]]:
    """Each path -> the lines of its definitions, which cut its code into sections."""
    symbols = store.symbols_in(paths) if paths else {}
    return {path: [line for _, _, line in found] for path, found in symbols.items()}


def matched_lines(store: SearchStore, model: str, vector: Vector, files: dict[str, str],
                  source: Source) -> dict[str, int]:
    """Node id -> where in its file the window nearest `vector` (the question's, of `model`)
    starts, for the files of `files` (node id -> path) embedded by section and matched by a
    section: the line a reader should open the file at. A file matched by its head, short
    enough to be one window, or unreadable now is left out. The windows are counted again from
    the file as it is (`window_lines`): a file whose vectors are not as many, embedded another
    way (an earlier loremap's outline) or before an edit, is left out too."""
    best = {node_id: found for node_id, found in store.best_chunks(model, vector, list(files))
            .items() if found[0] > 0}
    defined = _definition_lines(store, [files[node_id] for node_id in best])
    out = {}
    for node_id, (chunk, count) in best.items():
        code = source(files[node_id])
        starts = window_lines(code, defined.get(files[node_id], [])) if code else []
        if count == len(starts) and chunk < count:  # numbered as `windows` numbers them
            out[node_id] = starts[chunk]
    return out


def file_windows(text: str, path: str, code: str, lines: Sequence[int]) -> list[str]:
    """The windows of a long file: `text` (its path and summary) with the code's first window
    (the module docstring, the imports), then each section starting after that window (cut
    at the definitions on the 1-based `lines`, as the code map cuts them) as `path` and the
    section's first `SECTION_CHARS` characters, at most `FILE_WINDOWS` in all."""
    head, sections = _file_sections(code, lines)
    return [f"{text.strip()}\n{head.rstrip()}", *(f"{path}\n{body}" for _, body in sections)]


def window_lines(code: str, lines: Sequence[int]) -> list[int]:
    """The first line of each window `windows` embeds a file's `code` in (the definitions on
    `lines` cut it), by the window's number: 1 for the head, then each section's first line;
    nothing for a file short enough to be embedded as one text, whose windows have no line
    of their own. A vector's chunk number is the window's number, so this says where in the
    file a vector match lies."""
    if len(code) <= FILE_CHARS:
        return []
    return [1, *(line for line, _ in _file_sections(code, lines)[1])]


def _file_sections(code: str, lines: Sequence[int]) -> tuple[str, list[tuple[int, str]]]:
    """A long file's head window, and (first line, text) of each section window after it."""
    head = _lead(code, CHUNK_CHARS)
    source = code.split("\n")
    first = head.count("\n") + 1  # the sections that start inside the head are in it
    starts = section_starts(lines, len(source))
    out: list[tuple[int, str]] = []
    for start, end in zip(starts, [*starts[1:], len(source) + 1], strict=True):
        if start <= first:
            continue
        if len(out) == FILE_WINDOWS - 1:
            break
        body = _lead("\n".join(source[start - 1:end - 1]).strip(), SECTION_CHARS).rstrip()
        if body:
            out.append((start, body))
    return head, out


def _lead(text: str, limit: int) -> str:
    """`text`'s first `limit` characters, cut at the last line break in their second half
    (at `limit` when there is none); all of `text` when it is no longer."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[:cut if cut > limit // 2 else limit]


def embed_pending(store: IndexStore, embedder: Embedder, batch: int = 64,
                  most: int | None = None, progress: Callable[[int], None] | None = None,
                  source: Source | None = None) -> int:
    """Embed the nodes that have no vector of this model yet, `batch` nodes per write, at most
    `most` nodes (None: all); returns how many. A file's code is read through `source` (path
    -> text, None when it cannot be read). Each batch is its own transaction, so a long run
    that is stopped keeps what it did."""
    done = 0
    while most is None or done < most:
        todo = store.missing_vectors(embedder.name, batch if most is None
                                     else min(batch, most - done))
        if not todo:
            break
        units = list(_units(windows(store, todo, source)))
        vectors = embedder.embed([text for _, _, text in units])
        with store.write():
            store.put_vectors(embedder.name, len(vectors[0]),
                              [(node_id, number, vec) for (node_id, number, _), vec
                               in zip(units, vectors, strict=True)])
        done += len(todo)
        if progress is not None:
            progress(len(todo))
    return done


class Early:
    """A question's vector, computed on a thread of its own while the caller runs its text
    lists. An endpoint's round trip and the index's reads leave the interpreter's lock, so
    they overlap; a model run in numpy takes the lock back for each of its ~300 calls while
    the text lists (Python) hold it, so it overlaps them little, and a process that stays up
    (the daemon) hands it to a process of its own (`embed/apart.py`; `python bench/embed.py`
    has the figures). `vector()` waits for it and raises what the embedder raised."""

    def __init__(self, embedder: Embedder, query: str) -> None:
        import threading

        self.embedder, self.query = embedder, query
        self._vector: Vector = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="loremap-embed-query",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._vector = self.embedder.embed_query(self.query)
        except BaseException as exc:  # handed to the caller's thread by `vector()`
            self._error = exc

    def vector(self) -> Vector:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._vector


def nearest(store: VectorStore, embedder: Embedder, query: str, limit: int,
            early: Early | None = None) -> list[tuple[str, float]]:
    """(id, cosine) of the `limit` nodes closest to `query` (its vector from `early` when the
    caller started it), best first; nothing when the embedder cannot answer now or the index
    holds this model's vectors in another dimension (the caller's embedder records why when
    it can: `loremap.embed.Watched.report`)."""
    try:
        q = early.vector() if early is not None else embedder.embed_query(query)
        found = store.nearest_vectors(embedder.name, q, limit)
    except EmbedderUnavailable:
        return []
    except InvalidInput as exc:  # the stored vectors' dimension: `loremap reembed` cures it
        report = getattr(embedder, "report", None)
        if report is not None:
            report(str(exc))
        return []
    return [(node_id, score) for node_id, score in found if score > 0]
