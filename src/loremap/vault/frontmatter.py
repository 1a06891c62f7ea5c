"""Markdown note files <-> `Note`: YAML frontmatter, the title heading, the `## Links` section.

Reading: the known keys are taken from the raw YAML scalars (so `commit: 0123456` stays the
string it was written as, and dates stay ISO text); unknown keys are loaded with YAML's usual
types, dates normalised to ISO strings, and carried in `Note.extra` for the round trip.
Writing: known keys in a fixed order and style (deterministic, diff-friendly), then the unknown
keys, then `# Title`, the body and the `## Links` section regenerated from the frontmatter.

This is the only module that imports PyYAML; it is never on the hook path.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from typing import Any

import yaml

from loremap.errors import InvalidInput, MalformedNote
from loremap.model import Link, Note, NoteType, Relation, Source, Status, check_id
from loremap.vault.quoting import double_quoted

try:
    _Loader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader

_NULL_TAG = "tag:yaml.org,2002:null"
_STR_TAG = "tag:yaml.org,2002:str"
_SCALAR_KEYS = ("id", "type", "title", "status", "supersedes", "superseded_by", "recorded_at",
                "valid_from", "valid_to", "commit", "source", "archived_reason")
_LIST_KEYS = ("files", "tags", "aliases")
KNOWN_KEYS = frozenset((*_SCALAR_KEYS, *_LIST_KEYS, "links", "file_hashes"))
_LINKS_HEADING = "## Links"
_LINK_LINE = re.compile(r"- [a-z_]+ \[\[.*\]\]")
_PLAIN_OK = re.compile(r"[^\s\-?:,\[\]{}#&*!|>'\"%@`][^\n]*")
_FLOW_SPECIAL = re.compile(r"[\[\]{},:#]")
_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z)?")
_resolver = yaml.resolver.Resolver()


class _Raw:
    """Accessors for raw scalar text of the frontmatter's known keys."""

    def __init__(self, path: str, line_offset: int) -> None:
        self.path = path
        self.offset = line_offset

    def fail(self, node: yaml.Node, message: str) -> MalformedNote:
        return MalformedNote(self.path, message, node.start_mark.line + self.offset)

    def scalar(self, key: str, node: yaml.Node) -> str | None:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, f"'{key}' must be a single value")
        if node.tag == _NULL_TAG:
            return None
        return str(node.value)

    def strings(self, key: str, node: yaml.Node) -> tuple[str, ...]:
        if isinstance(node, yaml.ScalarNode):
            value = self.scalar(key, node)
            return () if value is None else (value,)
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, f"'{key}' must be a list")
        out = []
        for item in node.value:
            value = self.scalar(key, item)
            if value is not None:
                out.append(value)
        return tuple(out)

    def mapping(self, key: str, node: yaml.Node) -> dict[str, str]:
        if isinstance(node, yaml.ScalarNode) and node.tag == _NULL_TAG:
            return {}
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, f"'{key}' must be a mapping")
        out: dict[str, str] = {}
        for k, v in node.value:
            kk, vv = self.scalar(key, k), self.scalar(key, v)
            if kk is not None and vv is not None:
                out[kk] = vv
        return out

    def links(self, node: yaml.Node) -> tuple[Link, ...]:
        if isinstance(node, yaml.ScalarNode) and node.tag == _NULL_TAG:
            return ()
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, "'links' must be a list of {rel: ..., target: ...}")
        out = []
        for item in node.value:
            fields = self.mapping("links", item)
            if "rel" not in fields or "target" not in fields:
                raise self.fail(item, "each link needs 'rel' and 'target'")
            try:
                out.append(Link(Relation.parse(fields["rel"]), fields["target"]))
            except InvalidInput as exc:
                raise self.fail(item, str(exc)) from None
        return tuple(out)


def _normalise(value: Any) -> Any:
    """YAML's typed values made JSON-friendly: dates and datetimes become ISO strings."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None and value.utcoffset() == dt.timedelta(0):
            return value.replace(tzinfo=None).isoformat() + "Z"
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(_normalise(k)): _normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    return value


def split_frontmatter(text: str, path: str) -> tuple[str, str, int]:
    """(frontmatter YAML, rest of the file, line number where the body starts)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n")
    if not text.startswith("---\n"):
        raise MalformedNote(path, "no frontmatter: the file must start with a '---' line", 1)
    end = re.search(r"^---[ \t]*$", text[4:], re.MULTILINE)
    if end is None:
        raise MalformedNote(path, "the frontmatter has no closing '---' line", 1)
    yaml_text = text[4 : 4 + end.start()]
    rest = text[4 + end.end() :].removeprefix("\n")
    return yaml_text, rest, yaml_text.count("\n") + 3


def _compose(yaml_text: str, path: str) -> tuple[yaml.MappingNode, dict[str, Any]]:
    try:
        loader = _Loader(yaml_text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if exc.context_mark is not None and (mark is None or mark.index >= len(yaml_text) - 1):
            mark = exc.context_mark  # an unclosed bracket: point where it opened, not at EOF
        line = mark.line + 2 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise MalformedNote(path, f"malformed frontmatter: {problem}", line) from None
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        raise MalformedNote(path, f"malformed frontmatter: {exc}", 1) from None
    if not isinstance(node, yaml.MappingNode) or not isinstance(data, dict):
        raise MalformedNote(path, "the frontmatter must be a mapping of keys to values", 2)
    return node, data


def _split_body(rest: str, title: str) -> str:
    lines = rest.strip("\n").split("\n")
    if lines and lines[0].strip() == f"# {title}":
        lines = lines[1:]
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].strip() == _LINKS_HEADING:
            tail = [ln for ln in lines[i + 1 :] if ln.strip()]
            if all(_LINK_LINE.fullmatch(ln.strip()) for ln in tail):
                lines = lines[:i]
            break
        if lines[i].strip() and not _LINK_LINE.fullmatch(lines[i].strip()):
            break
    return "\n".join(lines).strip()


def parse_note(text: str, path: str) -> Note:
    """Parse a note file's text; `path` is only used in error messages."""
    yaml_text, rest, _ = split_frontmatter(text, path)
    node, data = _compose(yaml_text, path)
    raw = _Raw(path, 2)
    known: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = str(key_node.value)
        if key in _SCALAR_KEYS:
            known[key] = raw.scalar(key, value_node)
        elif key in _LIST_KEYS:
            known[key] = raw.strings(key, value_node)
        elif key == "file_hashes":
            known[key] = raw.mapping(key, value_node)
        elif key == "links":
            known[key] = raw.links(value_node)
        else:
            extra[key] = _normalise(data.get(key_node.value, data.get(key)))
    for required in ("id", "type", "title"):
        if not known.get(required):
            raise MalformedNote(path, f"missing required key '{required}'", 2)
    try:
        note_id = check_id(known["id"])
        note_type = NoteType.parse(known["type"])
        status = Status.parse(known.get("status") or "active")
        source = Source(known.get("source") or "agent")
    except (InvalidInput, ValueError) as exc:
        raise MalformedNote(path, str(exc).splitlines()[0], 2) from None
    title = " ".join(str(known["title"]).split())
    return Note(
        id=note_id, type=note_type, title=title, body=_split_body(rest, title), status=status,
        files=known.get("files", ()), links=known.get("links", ()),
        supersedes=known.get("supersedes"), superseded_by=known.get("superseded_by"),
        tags=known.get("tags", ()), aliases=known.get("aliases", ()),
        recorded_at=known.get("recorded_at"), valid_from=known.get("valid_from"),
        valid_to=known.get("valid_to"), commit=known.get("commit"),
        file_hashes=known.get("file_hashes", {}), source=source,
        archived_reason=known.get("archived_reason"), extra=extra,
    )


# --- writing --------------------------------------------------------------------------------


def _quote(value: str) -> str:
    """A YAML double-quoted scalar; unprintable characters escaped the YAML way."""
    if value.isprintable():
        return json.dumps(value, ensure_ascii=False)
    return double_quoted(value)


def _plain_tag(value: str) -> str:
    """The tag YAML would give `value` written plain (str, int, bool, null, timestamp...)."""
    tag: str = _resolver.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    return tag


def scalar(value: str | None) -> str:
    """A YAML scalar for `value`: plain when unambiguous, else a JSON (= YAML) quoted string."""
    if value is None:
        return "null"
    if (
        _PLAIN_OK.fullmatch(value)
        and value == value.strip()
        and ": " not in value
        and " #" not in value
        and not value.endswith(":")
        and value.isprintable()
        and _plain_tag(value) == _STR_TAG
    ):
        return value
    return _quote(value)


def _flow_key(value: str) -> str:
    """A scalar inside `[...]` or `{...}`, where flow indicators and ':' must be quoted."""
    s = scalar(value)
    if s[0] != '"' and _FLOW_SPECIAL.search(s):
        return _quote(value)
    return s


def _flow_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(_flow_key(v) for v in values) + "]"


def _time(value: str | None) -> str:
    """Dates and UTC timestamps stay plain (as in DESIGN.md); we read them back as raw text."""
    if value is not None and _ISO_TIME.fullmatch(value):
        return value
    return scalar(value)


def _extra_yaml(extra: Mapping[str, Any]) -> str:
    if not extra:
        return ""
    dumped = yaml.safe_dump(dict(extra), sort_keys=False, allow_unicode=True, width=1000,
                            default_flow_style=False)
    return str(dumped)


def render_frontmatter(note: Note) -> str:
    """The frontmatter block, `---` lines included, in the canonical key order."""
    lines = [
        "---",
        f"id: {note.id}",
        f"type: {note.type.value}",
        f"title: {scalar(note.title)}",
        f"status: {note.status.value}",
        f"files: {_flow_list(note.files)}",
    ]
    if note.links:
        lines.append("links:")
        lines += [f"  - {{rel: {link.rel.value}, target: {_flow_key(link.target)}}}"
                  for link in note.links]
    else:
        lines.append("links: []")
    lines += [
        f"supersedes: {scalar(note.supersedes)}",
        f"superseded_by: {scalar(note.superseded_by)}",
        f"tags: {_flow_list(note.tags)}",
    ]
    if note.aliases:
        lines.append(f"aliases: {_flow_list(note.aliases)}")
    lines += [
        f"recorded_at: {_time(note.recorded_at)}",
        f"valid_from: {_time(note.valid_from)}",
        f"valid_to: {_time(note.valid_to)}",
        f"commit: {scalar(note.commit)}",
    ]
    hashes = ", ".join(f"{_flow_key(k)}: {_flow_key(v)}" for k, v in note.file_hashes.items())
    lines.append(f"file_hashes: {{{hashes}}}")
    lines.append(f"source: {note.source.value}")
    if note.archived_reason is not None:
        lines.append(f"archived_reason: {scalar(note.archived_reason)}")
    text = "\n".join(lines) + "\n" + _extra_yaml(note.extra) + "---\n"
    return text


def links_section(note: Note) -> str:
    """The `## Links` wikilink section mirroring the frontmatter (empty without links)."""
    pairs = note.targets()
    if not pairs:
        return ""
    return _LINKS_HEADING + "\n" + "".join(f"- {rel} [[{target}]]\n" for rel, target in pairs)


def render_note(note: Note) -> tuple[str, int]:
    """The whole file text, and the 1-based line where the body starts (for error messages)."""
    head = render_frontmatter(note) + f"# {note.title}\n\n"
    body_line = head.count("\n") + 1
    parts = [head]
    if note.body:
        parts.append(note.body.strip("\n") + "\n")
    links = links_section(note)
    if links:
        parts.append(("\n" if note.body else "") + links)
    return "".join(parts), body_line
