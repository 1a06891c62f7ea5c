"""What an erased note leaves in the files beside it, found and removed (`forget --erase`).

A note's text may be quoted outside its own file: in a handoff (`handoffs/*.md`, committed),
in a session's state or record (`sessions/`), in the logs of questions and failures
(`cache/*.jsonl`). An erasure removes those quotes too:

- **what counts as a quote**: the note's title and aliases as written, each line of its body
  (a line of 8 characters or more, list markers and surrounding spaces aside), and every run
  of three or more consecutive words of its title or body (punctuation around a word aside;
  one of the three of 5 letters or more, so that "how do we" or "in the end" quote nothing),
  from every text of the note this clone knows (its file, and on a shared database its current
  text and every earlier version);
- **handoffs and session files**: each quote is replaced by `[erased]`; the rest of the file
  (its other decisions, the note's id) is kept, and the file stays readable;
- **logs** (`cache/*.jsonl`): a line holding a quote or the note's id is dropped whole (a log
  line is one question or one failure: half a question is no record).

What it cannot find: a paraphrase, a quote of one or two words that are neither the title nor
a line of the body. Files are rewritten atomically (temp file + rename): the old bytes leave
every file, though a filesystem's free blocks are beyond any program's reach.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from loremap.errors import UnsafePath
from loremap.vault import fs

ERASED = "[erased]"
MIN_LINE = 8  # characters of a body line quoted alone
RUN = 3  # consecutive words that make a quote...
LONG = 5  # ...when one of them has this many characters ("how do we" quotes nothing)
_WORD = re.compile(r"\S+")
_EDGE = re.compile(r"^\W+|\W+$")
_MARKER = re.compile(r"^\s*(?:[-*+>]|\d{1,9}[.)]|#{1,6})\s+")
TEXT_FOLDERS = ("handoffs", "sessions")  # under .loremap/: quotes replaced
LOG_FOLDER = "cache"  # under .loremap/: `*.jsonl` lines holding a quote dropped


def _norm(word: str) -> str:
    return _EDGE.sub("", word).casefold()


class Quotes:
    """The quotes of one note's texts, and where they are in another text."""

    def __init__(self, note_id: str, titles: Iterable[str], bodies: Iterable[str]) -> None:
        self.note_id = note_id
        bodies = list(bodies)
        self.literals = sorted({t.strip() for t in titles if len(t.strip()) >= 4} | {
            _MARKER.sub("", line).strip() for body in bodies for line in body.splitlines()
            if len(_MARKER.sub("", line).strip()) >= MIN_LINE}, key=len, reverse=True)
        self.runs: set[tuple[str, ...]] = set()
        for text in (*titles, *bodies):
            words = [w for w in (_norm(m) for m in _WORD.findall(text)) if w]
            runs = (tuple(words[i:i + RUN]) for i in range(len(words) - RUN + 1))
            self.runs.update(run for run in runs if any(len(w) >= LONG for w in run))

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The (start, end) of every quote in `text`, merged where they overlap."""
        found: list[tuple[int, int]] = []
        for literal in self.literals:
            start = text.find(literal)
            while start >= 0:
                found.append((start, start + len(literal)))
                start = text.find(literal, start + 1)
        words = [(m.start(), m.end(), _norm(m.group())) for m in _WORD.finditer(text)]
        words = [w for w in words if w[2]]
        found += [(words[i][0], words[i + RUN - 1][1]) for i in range(len(words) - RUN + 1)
                  if tuple(w[2] for w in words[i:i + RUN]) in self.runs]
        merged: list[tuple[int, int]] = []
        for start, end in sorted(found):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged

    def replaced(self, text: str) -> str:
        """`text` with each quote replaced by `[erased]`, line by line (a quote never joins
        two lines: a handoff's structure is its lines)."""
        out = []
        for line in text.splitlines(keepends=True):
            spans = self.spans(line)
            for start, end in reversed(spans):
                line = line[:start] + ERASED + line[end:]
            out.append(line)
        return "".join(out)

    def quoted_in(self, line: str) -> bool:
        return self.note_id in line or bool(self.spans(line))

    def without_lines(self, text: str) -> str:
        """`text` without the lines that quote the note or name it."""
        return "".join(line for line in text.splitlines(keepends=True)
                       if not self.quoted_in(line))


def _files(folder: Path, root: Path, suffixes: Sequence[str]) -> list[Path]:
    """The regular files of `folder` (and below) with one of `suffixes`; none through a link
    out of `root`."""
    if not folder.is_dir() or fs.outside(folder, root) is not None:
        return []
    found = []
    for base, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(base, d))]
        found += [Path(base, n) for n in names
                  if n.endswith(tuple(suffixes)) and not os.path.islink(os.path.join(base, n))]
    return sorted(found)


def scrub(loremap_dir: Path, quotes: Quotes) -> list[str]:
    """Remove the quotes of an erased note from the files under `loremap_dir` beside its
    notes; the files changed, relative to the repository."""
    root = loremap_dir.parent
    edits: list[tuple[Path, Callable[[str], str]]] = []
    for name in TEXT_FOLDERS:
        edits += [(path, _in_json(quotes) if path.suffix == ".json" else quotes.replaced)
                  for path in _files(loremap_dir / name, root, (".md", ".json", ".txt"))]
    edits += [(path, quotes.without_lines)
              for path in _files(loremap_dir / LOG_FOLDER, root, (".jsonl",))]
    return [str(path.relative_to(root)) for path, change in edits
            if _replace_in(path, root, change)]


def _in_json(quotes: Quotes) -> Callable[[str], str]:
    """The quotes replaced in every string of a JSON document (its escapes are never cut in
    half); a file that is not JSON is changed as text."""
    import json

    def walk(value: object) -> object:
        if isinstance(value, str):
            return quotes.replaced(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {walk(k): walk(v) for k, v in value.items()}
        return value

    def change(text: str) -> str:
        try:
            data = json.loads(text)
        except ValueError:
            return quotes.replaced(text)
        new = walk(data)
        return text if new == data else json.dumps(new, sort_keys=True)

    return change


def _replace_in(path: Path, root: Path, change: Callable[[str], str]) -> bool:
    """Write `change(text)` over `path` when it differs; whether it did."""
    try:
        text = fs.read_confined(path, root).decode("utf-8")
    except (OSError, UnicodeDecodeError, UnsafePath):
        return False
    new = change(text)
    if new == text:
        return False
    fs.atomic_write(path, new.encode("utf-8"), root)
    return True
