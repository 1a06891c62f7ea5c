"""Markdown note files <-> `Note`: YAML frontmatter, the title heading, the `## Links` section.

Reading: the known keys are taken from the raw YAML scalars (so `commit: 0123456` stays the
string it was written as, and dates stay ISO text); unknown keys are loaded with YAML's usual
types, dates normalised to ISO strings, and carried in `Note.extra` for the round trip.
Writing: known keys in a fixed order and style (deterministic, diff-friendly), then the unknown
keys, then `# Title`, the body and the `## Links` section regenerated from the frontmatter.

Hostile files: a note comes from a clone or a teammate's database, so reading one must never
cost more than its size. The frontmatter is capped before YAML sees it, anchors and aliases
(which loremap never writes) are refused, nesting is bounded, a duplicate key is an error, and an
error names the key and its line. The anchor check reads libyaml's events, and only when the text
holds a `&` or `*` at all. Measured against PyYAML's own hook for it (its pure-Python Composer
over libyaml's events, refusing aliases in `compose_node`): that composes and builds a typical
note in 170 us, libyaml's composer in 124 us; `parse_note` now reads 10,000 notes in 1.3 s (1.7 s
before, when it built every key's value, the known ones included).

This is the only module that imports PyYAML; it is never on the hook path.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import yaml

from loremap.errors import InvalidInput, MalformedNote
from loremap.model import Link, Note, NoteType, Relation, Source, Status, check_id
from loremap.model.code import is_path_target, module_of, module_slug
from loremap.model.note import IMPORT_TOOL
from loremap.vault.quoting import double_quoted

try:
    _Base: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Base = yaml.SafeLoader

FRONTMATTER_MAX_BYTES = 64 * 1024
"""The frontmatter's own cap, checked before YAML sees a byte; the file may hold the body's
`vault.max_note_bytes` plus this much (vault/layout.py's 64 KiB slack)."""
MAX_DEPTH = 32
"""How deep a value may nest (libyaml allows 1,000): loremap's own nest two levels."""
_T = TypeVar("_T")
_TIME_KEYS = frozenset(("recorded_at", "valid_from", "valid_to"))
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


class _Loader(_Base):  # type: ignore[misc,valid-type]
    """libyaml's safe loader, except that a date YAML cannot build stays the text it was."""

    def lenient_timestamp(self, node: yaml.ScalarNode) -> object:
        # Trigger: a plain scalar shaped like a date that is no date (2026-13-45) in an
        # unknown key. Why: one odd value must not make the whole note unreadable.
        # Outcome: it is kept, and written back, as the string it was.
        try:
            return self.construct_yaml_timestamp(node)
        except (ValueError, OverflowError):
            return str(node.value)


_Loader.add_constructor(_TIMESTAMP_TAG, _Loader.lenient_timestamp)

_NULL_TAG = "tag:yaml.org,2002:null"
_STR_TAG = "tag:yaml.org,2002:str"
_SCALAR_KEYS = ("id", "type", "title", "status", "supersedes", "superseded_by", "recorded_at",
                "valid_from", "valid_to", "commit", "source", "archived_reason", "signature",
                "remedy", "command", "origin", "origin_digest")
_LIST_KEYS = ("files", "tags", "aliases")
_COUNT_KEYS = ("successes", "failures")
KNOWN_KEYS = frozenset((*_SCALAR_KEYS, *_LIST_KEYS, *_COUNT_KEYS, "links", "file_hashes"))
MAX_COUNT = 1_000_000_000  # a counter past this is a typo or an attack, not a track record
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
        self.lines: dict[str, int] = {}  # each key's line, for errors found after reading

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

    def key(self, node: yaml.Node, seen: dict[object, int]) -> str:
        """A top-level key's text, refused if it is not a scalar or was there already."""
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, "a frontmatter key must be a plain word, not a list or mapping")
        key = str(node.value)
        self._once(node, key, seen, "")
        return key

    def tree(self, key: str, node: yaml.Node, depth: int = 1) -> None:
        """Refuse nesting past MAX_DEPTH and a key repeated inside any mapping under `key`."""
        if depth > MAX_DEPTH:
            raise self.fail(node, f"'{key}' nests deeper than {MAX_DEPTH} levels")
        if isinstance(node, yaml.SequenceNode):
            for item in node.value:
                self.tree(key, item, depth + 1)
        elif isinstance(node, yaml.MappingNode):
            seen: dict[object, int] = {}
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode):
                    self._once(k, (k.tag, k.value), seen, f" in '{key}'")
                self.tree(key, v, depth + 1)

    def _once(self, node: yaml.ScalarNode, ident: object, seen: dict[object, int],
              where: str) -> None:
        line = node.start_mark.line + self.offset
        if ident in seen:
            lines = (f"twice at line {line}" if seen[ident] == line
                     else f"at lines {seen[ident]} and {line}")
            raise self.fail(node, f"duplicate key '{node.value}'{where} {lines}")
        seen[ident] = line

    def count(self, key: str, node: yaml.Node) -> int:
        """A counter: a whole number from 0 (an empty value is 0)."""
        value = self.scalar(key, node)
        if value is None or not value.strip():
            return 0
        text = value.strip()
        if not text.isascii() or not text.isdigit() or int(text) > MAX_COUNT:
            raise self.fail(node, f"'{key}' must be a whole number from 0 to {MAX_COUNT:,}, "
                                  f"not {value[:40]!r}")
        return int(text)

    def time(self, key: str, node: yaml.Node) -> str | None:
        """A known date key: an ISO date or timestamp that exists, else an error naming it."""
        value = self.scalar(key, node)
        if value is None or _is_time(value):
            return value
        raise self.fail(node, f"'{key}' is not a date: {value!r} (write YYYY-MM-DD or "
                        "YYYY-MM-DDTHH:MM:SSZ)")

    def value(self, loader: _Loader, key: str, node: yaml.Node) -> Any:
        """An unknown key's value with YAML's types; a value YAML cannot build names its key."""
        try:
            return _normalise(loader.construct_object(node, deep=True))
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or node.start_mark
            problem = exc.problem or exc.context or "invalid value"
            raise MalformedNote(self.path, f"'{key}': {problem}", mark.line + self.offset) \
                from None
        except (yaml.YAMLError, ValueError, TypeError, ArithmeticError) as exc:
            raise self.fail(node, f"'{key}': {str(exc).splitlines()[0]}") from None

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


def _is_time(value: str) -> bool:
    """An ISO 8601 date or time Python reads, or a YAML timestamp that exists."""
    try:
        dt.datetime.fromisoformat(value)
        return True
    except ValueError:
        pass
    if _plain_tag(value) != _TIMESTAMP_TAG:
        return False
    try:
        yaml.SafeLoader("").construct_yaml_timestamp(yaml.ScalarNode(_TIMESTAMP_TAG, value))
        return True
    except (ValueError, OverflowError):
        return False


def _alias_free(yaml_text: str, path: str) -> None:
    """Refuse YAML anchors and aliases, naming the top-level key they sit in.

    loremap never writes them, and aliases are how 600 bytes become gigabytes: anchors nested
    eight deep, nine aliases each, expand to 43 million values once anything walks them (the
    "billion laughs"). The composer shares aliased nodes, so this reads libyaml's events.
    """
    if "&" not in yaml_text and "*" not in yaml_text:
        return  # neither can be written without its indicator character
    loader = _Loader(yaml_text)
    try:
        level, position, key = 0, 0, None
        while not loader.check_event(yaml.StreamEndEvent):
            event = loader.get_event()
            if isinstance(event, yaml.NodeEvent) and level == 1:
                if position % 2 == 0:  # a top-level key: scalars carry their text
                    key = getattr(event, "value", None)
                position += 1
            if isinstance(event, yaml.NodeEvent) and event.anchor is not None:
                sign = "*" if isinstance(event, yaml.AliasEvent) else "&"
                where = f"'{key}' uses" if key is not None else "the frontmatter uses"
                line = event.start_mark.line + 2 if event.start_mark is not None else None
                raise MalformedNote(path, f"{where} the YAML {sign}{event.anchor}: anchors and "
                                    "aliases are refused (a few bytes of them can expand to "
                                    "gigabytes)", line)
            level += isinstance(event, yaml.CollectionStartEvent)
            level -= isinstance(event, yaml.CollectionEndEvent)
    finally:
        loader.dispose()


def _compose(loader: _Loader, yaml_text: str, path: str) -> yaml.MappingNode:
    """The frontmatter's node tree; a YAML error names its line, an anchor is refused."""
    try:
        _alias_free(yaml_text, path)
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if exc.context_mark is not None and (mark is None or mark.index >= len(yaml_text) - 1):
            mark = exc.context_mark  # an unclosed bracket: point where it opened, not at EOF
        line = mark.line + 2 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise MalformedNote(path, f"malformed frontmatter: {problem}", line) from None
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        raise MalformedNote(path, f"malformed frontmatter: {exc}", 1) from None
    if not isinstance(node, yaml.MappingNode):
        raise MalformedNote(path, "the frontmatter must be a mapping of keys to values", 2)
    return node


def _check_size(yaml_text: str, path: str) -> None:
    size = len(yaml_text) if len(yaml_text) > FRONTMATTER_MAX_BYTES else len(
        yaml_text.encode("utf-8", "surrogatepass"))
    if size > FRONTMATTER_MAX_BYTES:
        raise MalformedNote(path, f"the frontmatter is over {FRONTMATTER_MAX_BYTES} bytes "
                            f"({size}); the note is not read", 1)


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


def _read_keys(loader: _Loader, node: yaml.MappingNode, path: str,
               ) -> tuple[dict[str, Any], dict[str, Any], dict[str, int]]:
    """(known keys from their raw text, unknown keys with YAML's types, each key's line)."""
    raw = _Raw(path, 2)
    known: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    seen: dict[object, int] = {}
    for key_node, value_node in node.value:
        key = raw.key(key_node, seen)
        raw.lines[key] = value_node.start_mark.line + raw.offset
        raw.tree(key, value_node)
        if key in _TIME_KEYS:
            known[key] = raw.time(key, value_node)
        elif key in _SCALAR_KEYS:
            known[key] = raw.scalar(key, value_node)
        elif key in _LIST_KEYS:
            known[key] = raw.strings(key, value_node)
        elif key in _COUNT_KEYS:
            known[key] = raw.count(key, value_node)
        elif key == "file_hashes":
            known[key] = raw.mapping(key, value_node)
        elif key == "links":
            known[key] = raw.links(value_node)
        else:
            extra[key] = raw.value(loader, key, value_node)
    return known, extra, raw.lines


def parse_note(text: str, path: str) -> Note:
    """Parse a note file's text; `path` is only used in error messages.

    The frontmatter is capped (FRONTMATTER_MAX_BYTES) and its anchors and aliases refused before
    anything is built, so no note, however hostile, costs more than its size to read.
    """
    (known, extra, lines), rest = _read_frontmatter(
        text, path, lambda loader, node: _read_keys(loader, node, path))
    for required in ("id", "type", "title"):
        if not known.get(required):
            raise MalformedNote(path, f"missing required key '{required}'", 2)
    def typed(key: str, parse: Callable[[str], _T], default: str = "") -> _T:
        try:
            return parse(known.get(key) or default)
        except (InvalidInput, ValueError) as exc:
            message = f"'{key}': {str(exc).splitlines()[0]}"
            raise MalformedNote(path, message, lines.get(key, 2)) from None

    note_id, note_type = typed("id", check_id), typed("type", NoteType.parse)
    remedy = typed("remedy", check_id) if known.get("remedy") else None
    status, (source, tool) = typed("status", Status.parse, "active"), typed("source", _source,
                                                                           "agent")
    title = " ".join(str(known["title"]).split())
    return Note(
        id=note_id, type=note_type, title=title, body=_split_body(rest, title), status=status,
        files=known.get("files", ()), links=known.get("links", ()),
        supersedes=known.get("supersedes"), superseded_by=known.get("superseded_by"),
        tags=known.get("tags", ()), aliases=known.get("aliases", ()),
        recorded_at=known.get("recorded_at"), valid_from=known.get("valid_from"),
        valid_to=known.get("valid_to"), commit=known.get("commit"),
        file_hashes=known.get("file_hashes", {}), source=source,
        archived_reason=known.get("archived_reason"), successes=known.get("successes", 0),
        failures=known.get("failures", 0), signature=known.get("signature") or None,
        remedy=remedy, command=known.get("command") or None, extra=extra, origin_tool=tool,
        origin=known.get("origin") or None, origin_digest=known.get("origin_digest") or None,
    )


def _source(value: str) -> tuple[Source, str | None]:
    """`source`: agent, human, import, auto, or `import:<tool>` (a note `loremap import`
    wrote: the tool it came from)."""
    kind, sep, tool = value.partition(":")
    if not sep:
        return Source(value), None
    if kind != Source.IMPORT.value or not IMPORT_TOOL.fullmatch(tool):
        raise ValueError(f"{value!r} is not import:<tool> (a tool's name in lowercase)")
    return Source.IMPORT, tool


def foreign_frontmatter(text: str, path: str) -> tuple[dict[str, Any], str]:
    """Another tool's markdown file (an importer's): its frontmatter as plain data (dates as
    ISO text) and the rest of the file, read with a note's guards: capped before YAML sees
    it, anchors and aliases refused, a YAML error naming its line (`MalformedNote`)."""

    def plain(loader: _Loader, node: yaml.MappingNode) -> dict[str, Any]:
        raw = _Raw(path, 2)
        seen: dict[object, int] = {}
        data: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = raw.key(key_node, seen)
            raw.tree(key, value_node)
            data[key] = raw.value(loader, key, value_node)
        return data

    return _read_frontmatter(text, path, plain)


def _read_frontmatter(text: str, path: str,
                      read: Callable[[_Loader, yaml.MappingNode], _T]) -> tuple[_T, str]:
    """`read` of the frontmatter's mapping, and the rest of the file: the frontmatter split
    off, capped before YAML sees it (`_check_size`) and composed with anchors and aliases
    refused (`_compose`), for a note and another tool's file alike."""
    yaml_text, rest, _ = split_frontmatter(text, path)
    _check_size(yaml_text, path)
    loader = _Loader(yaml_text)
    try:
        return read(loader, _compose(loader, yaml_text, path)), rest
    finally:
        loader.dispose()


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


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper, except that strings holding a YAML line break are double-quoted."""

    def text(self, value: str) -> yaml.ScalarNode:
        # Trigger: U+0085, U+2028 or U+2029 in a string. Why: the emitter writes them raw in a
        # single-quoted scalar, where YAML folds a line break into a space (NEL came back as
        # ' '). Outcome: double quotes, where they are escaped (\N, \L, \P) and read back.
        if _YAML_BREAKS.search(value):
            return self.represent_scalar(_STR_TAG, value, style='"')
        return self.represent_str(value)


_YAML_BREAKS = re.compile("[\x85\u2028\u2029]")
_Dumper.add_representer(str, _Dumper.text)


def _extra_yaml(extra: Mapping[str, Any]) -> str:
    if not extra:
        return ""
    dumped = yaml.dump(dict(extra), Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                       width=1000, default_flow_style=False)
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
    tool = f":{note.origin_tool}" if note.source is Source.IMPORT and note.origin_tool else ""
    lines.append(f"source: {note.source.value}{tool}")
    if note.archived_reason is not None:
        lines.append(f"archived_reason: {scalar(note.archived_reason)}")
    if note.successes or note.failures:
        lines += [f"successes: {note.successes}", f"failures: {note.failures}"]
    for key, value in (("signature", note.signature), ("remedy", note.remedy),
                       ("command", note.command), ("origin", note.origin),
                       ("origin_digest", note.origin_digest)):
        if value is not None:
            lines.append(f"{key}: {scalar(value)}")
    text = "\n".join(lines) + "\n" + _extra_yaml(note.extra)
    size = len(text.encode("utf-8", "surrogatepass")) - len("---\n")
    if size > FRONTMATTER_MAX_BYTES:
        raise InvalidInput(f"the frontmatter of note {note.id} would be {size} bytes, over the "
                           f"{FRONTMATTER_MAX_BYTES}-byte limit: fewer files, links or tags")
    return text + "---\n"


def links_section(note: Note) -> str:
    """The `## Links` wikilink section mirroring the frontmatter (empty without links or
    files). A note is linked by its id; a path (a link's, or one of `files`) by the page of its
    folder's module, shown as the path (`[[src--auth|src/auth/login.ts]]`), which resolves in
    `.loremap/` opened as an Obsidian vault (codemap/render.py writes that page)."""
    pairs = [*note.targets(), *(("file", path) for path in note.files)]
    if not pairs:
        return ""
    return _LINKS_HEADING + "\n" + "".join(f"- {rel} [[{_wikilink(target)}]]\n"
                                            for rel, target in pairs)


def _wikilink(target: str) -> str:
    if not is_path_target(target):
        return target
    return f"{module_slug(module_of(target))}|{target}"


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
