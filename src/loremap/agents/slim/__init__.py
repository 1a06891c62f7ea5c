"""`slim`: move the long reference sections of an agent's instruction file into notes.

Agents load CLAUDE.md, AGENTS.md or GEMINI.md into every message, so every line of it is paid
for on every turn. Notes are recalled only when a prompt needs them. This module reads such a
file, decides section by section what stays (the title, short sections, rules) and what moves
(long prose, code, tables, command listings), and renders the slimmer file in which each moved
section keeps its heading and one pointer line to its note. It prints nothing and writes
nothing: `apply` writes, the CLI prints.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from loremap.agents.files import read_text_or_none, refuse_unreadable
from loremap.agents.slim.markdown import (
    PINNED,
    Document,
    Section,
    makeup,
    parse,
    rule_share,
)
from loremap.errors import InvalidInput, NotFound, UserError
from loremap.memory.drafts import Draft
from loremap.memory.service import Memory
from loremap.model import NoteType
from loremap.text import estimate_tokens
from loremap.vault.ids import new_id, slugify

DEFAULT_MIN_TOKENS = 300
MAX_FILE_BYTES = 1 << 20
RULE_SHARE = 0.4  # a section at least this much rules (by tokens) stays
TAG = "slim"
POINTER = ("Moved to project memory: `{id}` (loremap recalls it when relevant; "
           "`loremap show {id}`).")
_POINTER = re.compile(r"Moved to project memory: `([a-z0-9-]+)`")
_MIN_SAVING = 40  # below this, a pointer would save next to nothing
_MIN_DENSE = 20  # a stretch of rules this small does not hold a section in the file
_MAX_FILES = 20
_TYPES = (
    (NoteType.GOTCHA, re.compile(r"gotcha|pitfall|caveat|known (?:issue|problem|bug)|troubleshoot"
                                 r"|quirk|footgun|common (?:mistake|error|problem)|debugging")),
    (NoteType.DECISION, re.compile(r"decision|\bwhy\b|\badrs?\b|rationale|trade-?offs?")),
    (NoteType.PROCEDURE, re.compile(r"set ?up|install|\bbuild|\btest(?:s|ing)?\b|release|deploy"
                                    r"|how[- ]to|commands?\b|workflow|getting started|\brun"
                                    r"|migrat|development|\bci\b|scripts?\b")),
)
_SHELL_FENCE = re.compile(r"^\s*(?:```|~~~)\s*(?:sh|bash|zsh|shell|console|powershell)\b|^\s*\$ ",
                          re.MULTILINE)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_PATH_TOKEN = re.compile(r"[\w.@+-]*(?:/[\w.@+-]*)+|[\w@+-][\w.@+-]*\.[A-Za-z]\w{0,9}")
_CODE_SPAN = re.compile(r"`([^`\s]+)`")


@dataclass(frozen=True, slots=True)
class Instructions:
    """The instruction file as read: `raw` exactly, `text` without a byte-order mark."""

    path: Path
    raw: str
    text: str
    bom: bool


@dataclass(frozen=True, slots=True)
class Row:
    """One section of the proposal; `start`/`end` are its 0-based line range."""

    heading: str
    depth: int
    line: int
    tokens: int
    action: str  # keep | move
    reason: str
    start: int = 0
    end: int = 0
    note_type: str | None = None
    title: str | None = None
    note_id: str | None = None
    existing: bool = False
    files: tuple[str, ...] = ()
    draft: Draft | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """What `slim` proposes for one file, with the token cost per message before and after."""

    source: Instructions
    doc: Document
    rows: tuple[Row, ...]
    tokens_before: int = 0
    tokens_after: int = 0

    @property
    def moves(self) -> tuple[Row, ...]:
        return tuple(row for row in self.rows if row.action == "move")

    def render(self, ids: Mapping[int, str] | None = None) -> str:
        """The slimmer text; `ids` maps a moved row's `start` to the id its note really got."""
        lines, out, i = self.doc.lines, [], 0
        by_start = {row.start: row for row in self.moves}
        while i < len(lines):
            row = by_start.get(i)
            if row is None:
                out.append(lines[i])
                i += 1
                continue
            note_id = (ids or {}).get(row.start, row.note_id or "")
            out += _replacement(self.doc, row, note_id)
            i = row.end
        return ("\ufeff" if self.source.bom else "") + "".join(out)


def _replacement(doc: Document, row: Row, note_id: str) -> list[str]:
    """The heading, one pointer line, then the lines that never move (imports, loremap's block)."""
    nl = doc.newline

    def ended(line: str) -> str:
        return line if line.endswith(("\n", "\r")) else line + nl

    out = [ended(doc.lines[row.start]), nl, POINTER.format(id=note_id) + nl]
    pinned = doc.pinned(row.start + 1, row.end)
    if pinned:
        out += [nl, *(ended(doc.lines[i]) for i in pinned)]
    if row.end < len(doc.lines) and not doc.lines[row.end - 1].strip():
        out.append(nl)
    return out


def read_instructions(path: Path) -> Instructions:
    """Read an instruction file, refusing what cannot be one (each with a one-line reason)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise NotFound(f"no such file: {path}") from None
    except OSError as exc:
        refuse_unreadable(path, exc.strerror or str(exc))
    if size > MAX_FILE_BYTES and not path.is_dir():
        refuse_unreadable(path, f"it is {size:,} bytes, and slim reads instruction files up "
                                "to 1 MiB")
    text = read_text_or_none(path)
    if text is None:  # removed since the stat
        raise NotFound(f"no such file: {path}")
    bom = text.startswith("\ufeff")
    return Instructions(path, text, text[1:] if bom else text, bom)


def make_plan(source: Instructions, memory: Memory, min_tokens: int = DEFAULT_MIN_TOKENS) -> Plan:
    """Decide, section by section, what stays in the file and what moves into a note.

    The file must belong to the project: its notes land in the project's vault, which an
    instruction file elsewhere (`~/.claude/CLAUDE.md`) could not count on.
    """
    root = memory.repo_root
    if root is None or memory.project is None:
        raise NotFound("no loremap project here: run `loremap init` in the repository")
    try:
        source.path.resolve().relative_to(root.resolve())
    except ValueError:
        raise InvalidInput(f"{source.path} is outside the project at {root}; slim moves "
                           "sections into this project's notes, so the file must be part of "
                           "it") from None
    doc = parse(source.text)
    planner = _Planner(doc, source.path, root, min_tokens, memory)
    plan = Plan(source, doc, tuple(planner.rows()))
    before = estimate_tokens(source.text)
    after = estimate_tokens(plan.render()) if plan.moves else before
    return dataclasses.replace(plan, tokens_before=before, tokens_after=after)


class _Planner:
    def __init__(self, doc: Document, path: Path, root: Path, min_tokens: int,
                 memory: Memory) -> None:
        self.doc = doc
        self.path = path
        self.root = root
        self.min_tokens = min_tokens
        self.memory = memory
        # Only project notes: the file is shared through git, a personal note is not.
        self.existing = {note.title.casefold(): note.id for note in
                         memory.store.list_notes(statuses=["active"], scope="project")}
        self.ids: set[str] = set()
        self.titles: set[str] = set()

    def rows(self) -> list[Row]:
        """The preamble and a title heading stay; the rest is decided section by section.

        The first `#` heading is the document's title when it is the only one or has
        subsections; when several `#` headings are the sections (no title), each is decided.
        """
        sections = self.doc.sections
        h1 = [s for s in sections if s.level == 1]
        out: list[Row] = []
        for s in sections:
            if s.level == 0:
                out.append(self._keep(s, 0, "the preamble always stays", s.end))
            elif h1 and s is h1[0] and (len(h1) == 1 or s.children):
                out.append(self._keep(s, 0, "the title always stays", s.intro_end))
                for child in s.children:
                    out += self._decide(child, 1, None)
            else:
                out += self._decide(s, 0, None)
        return out

    def _decide(self, s: Section, depth: int, parent: str | None) -> list[Row]:
        tokens = self._tokens(s.start, s.end)
        moved = _POINTER.search(self.doc.text(s.start, s.intro_end))
        if moved:
            note_id = moved.group(1)
            if self._taken(note_id):
                return [self._keep(s, depth, f"already in project memory ({note_id})")]
            return [self._keep(s, depth, f"points at {note_id}, which is not in memory (was "
                                         "the note deleted?)")]
        if tokens < max(self.min_tokens, _MIN_SAVING):
            return [self._keep(s, depth, f"short (under {max(self.min_tokens, _MIN_SAVING)} "
                                         "tokens)")]
        if not s.children:
            counts = makeup(self.doc, s.start, s.end)
            if rule_share(counts) >= RULE_SHARE:
                return [self._keep(s, depth, f"mostly rules ({_percent(rule_share(counts))})")]
            return [self._move(s, depth, parent, tokens, counts)]
        dense = (self._dense(s.start, s.intro_end)
                 or any(self._dense(c.start, c.end) for c in s.children)
                 or _POINTER.search(self.doc.text(s.start, s.end)) is not None)
        if not dense:
            return [self._move(s, depth, parent, tokens, makeup(self.doc, s.start, s.end))]
        rows = [self._keep(s, depth, "rules and reference: decided per subsection",
                           s.intro_end)]
        for child in s.children:
            rows += self._decide(child, depth + 1, _clean_title(s.title))
        return rows

    def _dense(self, start: int, end: int) -> bool:
        counts = makeup(self.doc, start, end)
        return counts.get("rules", 0) >= _MIN_DENSE and rule_share(counts) >= RULE_SHARE

    def _tokens(self, start: int, end: int) -> int:
        return estimate_tokens(self.doc.text(start, end))

    def _keep(self, s: Section, depth: int, reason: str, end: int | None = None) -> Row:
        end = s.end if end is None else end
        return Row(_heading(self.doc, s), depth, s.start + 1, self._tokens(s.start, end), "keep",
                   reason, s.start, end)

    def _move(self, s: Section, depth: int, parent: str | None, tokens: int,
              counts: dict[str, int]) -> Row:
        body = "".join(self.doc.lines[i] for i in body_lines(self.doc, s.start, s.end))
        body = body.replace("\r\n", "\n").replace("\r", "\n").rstrip()
        title = self._title(s, parent)
        note_type = _note_type(s.title, parent, body)
        files = self._files(body)
        reason = _describe(counts)
        existing = self.existing.get(title.casefold())
        if existing is not None:
            note_id = existing
            reason += "; points at the note of the same title" + self._differs(existing, body)
        else:
            note_id = new_id(note_type, title, lambda i: i in self.ids or self._taken(i))
            self.ids.add(note_id)
        draft = Draft(type=note_type.value, title=title, body=body,
                      files=tuple(str(self.root / f) for f in files), tags=(TAG,),
                      source="import")
        return Row(_heading(self.doc, s), depth, s.start + 1, tokens, "move", reason, s.start,
                   s.end, note_type.value, title, note_id, existing is not None, files, draft)

    def _taken(self, note_id: str) -> bool:
        return any(vault.exists(note_id) for vault in self.memory.vaults)

    def _differs(self, note_id: str, body: str) -> str:
        """Trigger: the note of the same title says something else. Why: pointing at it drops
        the section's text from the file. Outcome: say so (the backup keeps the text)."""
        try:
            note = self.memory.read(note_id)[0].note
        except UserError:
            return ""
        if note.body.split() == body.split():
            return ""
        return " (its text differs: the section's own text stays only in the backup)"

    def _title(self, s: Section, parent: str | None) -> str:
        """The heading as a note title: markup dropped, prefixed by its parent's, unique in
        this file."""
        title = _clean_title(s.title)
        if parent:
            title = f"{parent}: {title}"
        if not slugify(title):
            title = f"{self.path.name} section at line {s.start + 1}"
        unique, n = title, 2
        while unique.casefold() in self.titles:
            unique, n = f"{title} ({n})", n + 1
        self.titles.add(unique.casefold())
        return unique

    def _files(self, text: str) -> tuple[str, ...]:
        """Repository paths the text names that exist (best effort: files and folders)."""
        found: dict[str, None] = {}
        candidates = [*_CODE_SPAN.findall(text), *_PATH_TOKEN.findall(text)]
        root = self.root.resolve()
        own = self.path.resolve()
        for raw in candidates[:400]:
            rel = raw.strip(".,;:!?)(\"'").removeprefix("./").rstrip("/")
            if not rel or rel.startswith(("/", "~", "-", ".git", ".loremap")) or ".." in rel:
                continue
            path = root / rel
            try:
                real = path.resolve()
                if real == own or not path.exists() or not real.is_relative_to(root):
                    continue
            except (OSError, ValueError):
                continue
            found[real.relative_to(root).as_posix()] = None
            if len(found) >= _MAX_FILES:
                break
        return tuple(found)


def body_lines(doc: Document, start: int, end: int) -> list[int]:
    """The lines of a section that make its note's body: after the heading, without the pinned
    lines (they stay in the file) and the leading blank lines."""
    out = [i for i in range(start + 1, end) if doc.kinds[i] != PINNED]
    while out and not doc.lines[out[0]].strip():
        out.pop(0)
    return out


def _heading(doc: Document, s: Section) -> str:
    if s.level == 0:
        return "(before the first heading)"
    return doc.lines[s.start].strip()


def _clean_title(heading: str) -> str:
    text = _LINK.sub(r"\1", heading).replace("`", "")
    text = re.sub(r"(\*\*|__|(?<!\w)[*_]|[*_](?!\w))", "", text)
    text = " ".join(text.split()).rstrip(":").strip()
    if len(text) > 120:
        text = text[:120].rsplit(" ", 1)[0] + "…"
    return text


def _note_type(heading: str, parent: str | None, body: str) -> NoteType:
    """From the heading; a subsection of "Troubleshooting" or "Decisions" is one too; a body
    of shell commands is a procedure; anything else a concept."""
    for note_type, pattern in _TYPES:
        if pattern.search(heading.lower()):
            return note_type
    for note_type, pattern in _TYPES[:2]:
        if parent and pattern.search(parent.lower()):
            return note_type
    if _SHELL_FENCE.search(body):
        return NoteType.PROCEDURE
    return NoteType.CONCEPT


def _describe(counts: dict[str, int]) -> str:
    total = sum(counts.values()) or 1
    parts = [f"{kind} {_percent(n / total)}" for kind, n in
             sorted(counts.items(), key=lambda kv: -kv[1]) if kind != "rules" and n / total >= .1]
    rules = counts.get("rules", 0) / total
    return f"reference: {', '.join(parts) or 'mixed'}" + (f"; rules {_percent(rules)}" if rules
                                                           else "")


def _percent(share: float) -> str:
    return f"{round(share * 100)} %"
