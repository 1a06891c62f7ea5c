"""The tools as the model sees them: names, descriptions and input schemas.

Every session of every user pays for these definitions on every message, so they are written by
hand, short, and without the titles a generated schema adds; `bench/mcp.py` prints their token
count (the lean catalogue must stay under 2,000). The schemas are also what arguments are
validated against (`additionalProperties: false` everywhere: a mistyped argument is refused,
never silently ignored). `LOREMAP_TOOLS=full` adds the tools few sessions need.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from loremap.model import NodeKind, NoteType, Relation

# The vocabularies are the model's enums; `supersedes` has its own argument, not a link.
NOTE_TYPES = [t.value for t in NoteType]
RELATIONS = [r.value for r in Relation if r is not Relation.SUPERSEDES]
KINDS = [k.value for k in NodeKind]
MAX_TEXT = 20_000  # characters in a query or target
MAX_ITEMS = 64  # entries of a list argument
MAX_FACTS = 20  # facts in one `remember`
MAX_BUDGET = 8_000  # tokens one recall may return

Schema = dict[str, Any]


def _str(description: str = "", max_length: int = MAX_TEXT) -> Schema:
    out: Schema = {"type": "string", "maxLength": max_length}
    if description:
        out["description"] = description
    return out


def _list(description: str = "", max_items: int = MAX_ITEMS) -> Schema:
    out: Schema = {"type": "array", "items": {"type": "string", "maxLength": 1000},
                   "maxItems": max_items}
    if description:
        out["description"] = description
    return out


def _object(properties: Schema, required: tuple[str, ...] = ()) -> Schema:
    out: Schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = list(required)
    return out


class ToolSpec(NamedTuple):
    name: str
    description: str
    schema: Schema
    read_only: bool  # False: its calls change the memory, refused to a read-only key
    destructive: bool = False
    full_only: bool = False
    reading_actions: tuple[str, ...] = ()  # the `action`s of a writing tool that only read

    def writes(self, arguments: dict[str, Any]) -> bool:
        """Whether a call with these (validated) arguments changes the memory."""
        return not self.read_only and arguments.get("action") not in self.reading_actions

    @property
    def always_writes(self) -> bool:
        """Whether no call of it only reads (a read-only client is not shown it)."""
        return not self.read_only and not self.reading_actions


_FACT = _object({
    "type": {"enum": NOTE_TYPES},
    "title": _str("one line", 300),
    # The setting vault.max_note_bytes is the real limit; this one bounds what is parsed.
    "body": _str("the lesson: what, why, how to apply", 1_048_576),
    "files": _list("repo paths it concerns"),
    "links": {"type": "array", "maxItems": MAX_ITEMS, "items": _object({
        "rel": {"enum": RELATIONS}, "target": _str("note id or path", 1000)},
        ("rel", "target"))},
    "supersedes": _str("id of the note this replaces", 200),
    "tags": _list(),
    "error": _str("type error: the error text", 20_000),
    "remedy": _str("type error: id of the note that fixed it", 200),
    "command": _str("type error: the command that failed", 1000),
}, ("type", "title", "body"))

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("recall", (
        "Search the project memory (notes: decisions, bugs, gotchas, procedures...; and the "
        "code map) before exploring files. Returns the best items within a token budget, each "
        "with why it matched; says so when nothing relevant is known."),
        _object({
            "query": _str("the question, in words"),
            "terms": _list("your expansions: synonyms, likely identifiers, file names"),
            "kind": {"enum": KINDS, "description": "only this kind"},
            "types": {"type": "array", "items": {"enum": NOTE_TYPES}, "maxItems": 8},
            "files": _list("only under these path prefixes"),
            "budget": {"type": "integer", "minimum": 100, "maximum": MAX_BUDGET,
                       "description": "tokens, default 1500"},
            "as_of": _str("YYYY-MM-DD: what was true then", 10),
            "history": {"type": "boolean", "description": "include superseded notes"},
        }, ("query",)), read_only=True),
    ToolSpec("remember", (
        "Record what you learned that the code does not say: decisions and why, bugs and their "
        "causes, gotchas, procedures, errors and fixes. One fact per note; link files. Returns "
        "the ids and warnings (e.g. a similar note exists: supersede it instead)."),
        _object({"facts": {"type": "array", "items": _FACT, "minItems": 1,
                           "maxItems": MAX_FACTS},
                 "personal": {"type": "boolean",
                              "description": "a preference for all your projects"}},
                ("facts",)), read_only=False),
    ToolSpec("read", (
        "Read one thing in full: a note (by id), a file's map entry (symbols, imports, "
        "importers, co-change, notes) or a module page (by folder path)."),
        _object({"target": _str("note id, file path or module path", 1000)}, ("target",)),
        read_only=True),
    ToolSpec("map", (
        "The map of the repository (modules, central files, notes), or one module's page."),
        _object({"module": _str("a folder path; omit for the whole map", 1000)}),
        read_only=True),
    ToolSpec("handoff", (
        "Save the session's handoff before stopping or when the context is large, so the next "
        "session resumes here; or load the open one."),
        _object({
            "action": {"enum": ["save", "load"]},
            "goal": _str(), "state": _str("where things stand"),
            "decisions": _list(), "next_steps": _list(), "open_questions": _list(),
            "files": _list(), "id": _str("a handoff id to load", 100),
        }, ("action",)), read_only=False, reading_actions=("load",)),
    ToolSpec("forget", (
        "Archive a note that is wrong or obsolete (kept in its file, out of recall); purge "
        "deletes it; erase (with a reason) removes every trace, e.g. a leaked secret. To "
        "correct a note, remember a new one that supersedes it."),
        _object({"id": _str("note id", 200), "reason": _str(max_length=2000),
                 "purge": {"type": "boolean"}, "erase": {"type": "boolean"}}, ("id",)),
        read_only=False, destructive=True),
    ToolSpec("outcome", (
        "After following a procedure from memory, report whether it worked: recall ranks "
        "procedures by their track record."),
        _object({"id": _str("the procedure's note id", 200),
                 "result": {"enum": ["success", "failure"]},
                 "note": _str("what happened, one line", 2000)}, ("id", "result")),
        read_only=False),
    ToolSpec("related", (
        "What a note or file is connected to: links, files, imports, importers, co-changed "
        "files and notes."),
        _object({"target": _str("note id or file path", 1000),
                 "limit": {"type": "integer", "minimum": 1, "maximum": 200}}, ("target",)),
        read_only=True),
    ToolSpec("timeline", (
        "What changed: notes recorded since a date and files changed in recent commits."),
        _object({"since": _str("YYYY-MM-DD", 10),
                 "commits": {"type": "integer", "minimum": 1, "maximum": 500}}),
        read_only=True, full_only=True),
    ToolSpec("stats", "Counts of notes by type and status, code files, symbols and the index.",
             _object({}), read_only=True, full_only=True),
    ToolSpec("verify", (
        "Check a claim against the memory: the evidence, and supports / contradicts / unknown "
        "(judged by your model when the client offers sampling)."),
        _object({"claim": _str("one claim", 2000)}, ("claim",)), read_only=True,
        full_only=True),
)


def catalogue(profile: str) -> tuple[ToolSpec, ...]:
    """The tools of `profile` ('lean', the default, or 'full')."""
    return tuple(t for t in TOOLS if profile == "full" or not t.full_only)


_LIMITS = frozenset({"maxLength", "maxItems", "minItems", "minimum", "maximum"})


def published(schema: Any) -> Any:
    """`schema` without its size limits: they cost tokens in every session and a model rarely
    comes near them; a call over one is refused with a message that names the limit."""
    if isinstance(schema, dict):
        return {k: published(v) for k, v in schema.items() if k not in _LIMITS}
    if isinstance(schema, list):
        return [published(v) for v in schema]
    return schema


def tool_definitions(profile: str) -> list[Schema]:
    """The `tools/list` entries of `profile`, as JSON (for the token count and the tests)."""
    return [{"name": t.name, "description": t.description, "inputSchema": published(t.schema),
             "annotations": {"readOnlyHint": t.read_only, "destructiveHint": t.destructive,
                             "openWorldHint": False}}
            for t in catalogue(profile)]
