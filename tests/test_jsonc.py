"""The JSONC editor: it reads what hand-written settings files hold and edits one member only."""

from __future__ import annotations

import copy
import difflib
import json
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loremap import jsonc
from loremap.agents.files import (
    BACKUP_SUFFIX,
    read_text_or_none,
    remove_with_backup,
    write_with_backup,
)
from loremap.errors import InvalidInput

# --- generated documents ----------------------------------------------------------------------

KEYS = st.sampled_from(["a", "b", "mcpServers", "loremap", "servers", "é", "x y", 'q"t'])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.floats(allow_nan=False, allow_infinity=False, width=32),
                    st.text(max_size=8))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)), max_leaves=8)
DOCUMENTS = st.dictionaries(KEYS, VALUES, max_size=4)


class Writer:
    """Renders a value as a person might write JSONC: comments, trailing commas, odd indents."""

    def __init__(self, data: st.DataObject) -> None:
        self.draw = data.draw
        self.unit = self.draw(st.sampled_from(["  ", "    ", "\t"]))
        self.newline = self.draw(st.sampled_from(["\n", "\r\n"]))
        self.trailing = self.draw(st.booleans())
        self.comments: list[str] = []

    def comment(self) -> str:
        if not self.draw(st.integers(0, 3)) == 0:
            return ""
        text = f"c{len(self.comments)}"
        self.comments.append(text)
        return f" /* {text} */" if self.draw(st.booleans()) else f" // {text}"

    def value(self, value: Any, indent: str) -> str:
        if not isinstance(value, (dict, list)) or not value:
            return json.dumps(value, ensure_ascii=False)
        if self.draw(st.integers(0, 3)) == 0:  # a one-line container
            return json.dumps(value, ensure_ascii=False)
        items = list(value.items()) if isinstance(value, dict) else [(None, v) for v in value]
        inner = indent + self.unit
        lines = []
        for i, (key, item) in enumerate(items):
            head = "" if key is None else json.dumps(key, ensure_ascii=False) + ": "
            comma = "," if i < len(items) - 1 or self.trailing else ""
            above = self.comment()
            if above:  # a comment on a line of its own, above the member
                lines.append(inner + above.strip())
            lines.append(inner + head + self.value(item, inner) + comma + self.comment())
        opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
        body = self.newline.join(lines)
        return opening + self.newline + body + self.newline + indent + closing

    def document(self, value: dict[str, Any]) -> str:
        head = f"// c{len(self.comments)}{self.newline}"
        self.comments.append(f"c{len(self.comments)}")
        if not value:
            return head + "{}" + self.newline
        return head + self.value(value, "") + self.newline


def with_member(document: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    expected = copy.deepcopy(document)
    node = expected
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[path[-1]] = value
    return expected


def object_path(document: dict[str, Any], data: st.DataObject) -> list[str]:
    """A path whose every existing step but the last is an object (what set_value can write)."""
    path: list[str] = []
    node: Any = document
    for _ in range(data.draw(st.integers(1, 3))):
        key = data.draw(KEYS)
        path.append(key)
        if node is MISSING or key not in node:
            node = MISSING
        elif isinstance(node[key], dict):
            node = node[key]
        else:
            break
    return path


MISSING: Any = object()


def _steps(document: dict[str, Any], path: list[str]) -> list[Any]:
    """The values along `path` that exist."""
    out: list[Any] = []
    node: Any = document
    for key in path:
        if not isinstance(node, dict) or key not in node:
            break
        node = node[key]
        out.append(node)
    return out


@settings(max_examples=300)
@given(st.data(), DOCUMENTS, VALUES)
def test_set_value_then_loads_gives_the_value_and_keeps_every_comment(data, document, value):
    writer = Writer(data)
    text = writer.document(document)
    assert jsonc.loads(text, "doc.json") == document
    path = object_path(document, data)
    changed = jsonc.set_value(text, path, value)
    assert jsonc.loads(changed, "doc.json") == with_member(document, path, value)
    if len(_steps(document, path)) < len(path):  # a replaced value takes its comments along
        for comment in writer.comments:
            assert changed.count(comment) == text.count(comment)


@settings(max_examples=300)
@given(st.data(), DOCUMENTS, VALUES)
def test_text_outside_the_edited_span_is_unchanged(data, document, value):
    text = Writer(data).document(document)
    path = object_path(document, data)
    changed = jsonc.set_value(text, path, value)
    if len(_steps(document, path)) == len(path):
        # Replaced: without the member, the old and the new text are the same bytes.
        assert jsonc.remove(changed, path) == jsonc.remove(text, path)
    else:
        # Added: the edit only inserts (the member, a comma); no byte of the old text changes.
        matcher = difflib.SequenceMatcher(None, text, changed, autojunk=False)
        assert {op for op, *_ in matcher.get_opcodes()} <= {"equal", "insert"}


@settings(max_examples=300)
@given(st.data(), DOCUMENTS, VALUES)
def test_set_then_remove_of_a_new_member_gives_the_original_bytes(data, document, value):
    text = Writer(data).document(document)
    path = object_path(document, data)
    existing = _steps(document, path)
    changed = jsonc.set_value(text, path, value)
    if len(existing) == len(path):  # replaced: the document is equivalent without it
        expected = copy.deepcopy(document)
        node = expected
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
        assert jsonc.loads(jsonc.remove(changed, path), "doc.json") == expected
    elif len(existing) == len(path) - 1:  # added to an existing object: exact bytes back
        assert jsonc.remove(changed, path) == text
    else:  # parents were created: removing them too gives the bytes back
        created = path[:len(existing) + 1]
        assert jsonc.remove(changed, created) == text


@settings(max_examples=200)
@given(st.data(), DOCUMENTS, VALUES)
def test_append_then_remove_the_item_gives_the_original_bytes(data, document, value):
    document = {**document, "hooks": {"list": data.draw(st.lists(SCALARS, max_size=3))}}
    text = Writer(data).document(document)
    changed = jsonc.append(text, ["hooks", "list"], value)
    items = jsonc.loads(changed, "doc.json")["hooks"]["list"]
    assert items == [*document["hooks"]["list"], value]
    assert jsonc.remove(changed, ["hooks", "list", len(items) - 1]) == text


# --- examples ---------------------------------------------------------------------------------

ZED = """// Zed settings
//
// For information on how to configure Zed, see the Zed documentation.
{
  "theme": "One Dark", // the dark one
  /* fonts */
  "buffer_font_size": 15,
  "context_servers": {
    "other": {"command": "other-mcp", "args": [],},
  },
}
"""


@settings(max_examples=200)
@given(st.data(), DOCUMENTS)
def test_the_bulk_reader_reads_what_the_editor_reads_and_none_where_it_refuses(data, document):
    """One tokenizer: the code map's reader (`loads_or_none`) and the editor agree on every
    document, and on every cut of one the reader says None exactly where the editor refuses."""
    text = Writer(data).document(document)
    assert jsonc.loads_or_none(text) == jsonc.loads(text, "doc.json") == document
    cut = text[:data.draw(st.integers(0, len(text)))]
    try:
        expected = jsonc.loads(cut, "doc.json")
    except InvalidInput:
        expected = None
    assert jsonc.loads_or_none(cut) == expected


def test_a_new_member_follows_the_files_trailing_commas_and_indentation():
    changed = jsonc.set_value(ZED, ["context_servers", "loremap"],
                              {"command": "/bin/loremap", "args": ["serve"]})
    assert changed == ZED.replace(
        '    "other": {"command": "other-mcp", "args": [],},\n',
        '    "other": {"command": "other-mcp", "args": [],},\n'
        '    "loremap": {\n      "command": "/bin/loremap",\n      "args": ["serve"]\n    },\n')
    assert jsonc.remove(changed, ["context_servers", "loremap"]) == ZED


def test_a_comment_after_the_last_member_stays_on_its_line():
    text = '{\n  "a": 1 // one\n}\n'
    changed = jsonc.set_value(text, ["b"], 2)
    assert changed == '{\n  "a": 1, // one\n  "b": 2\n}\n'
    assert jsonc.remove(changed, ["b"]) == text


def test_setting_the_value_a_member_already_has_changes_nothing():
    text = '{ "a" : { "b" : [1,2] } }'
    assert jsonc.set_value(text, ["a", "b"], [1, 2]) == text


def test_an_existing_value_is_replaced_in_place():
    text = '{\n  "a": {"x": 1}, // keep\n  "b": 2\n}'
    assert jsonc.set_value(text, ["a"], 5) == '{\n  "a": 5, // keep\n  "b": 2\n}'


def test_crlf_files_get_crlf_lines():
    changed = jsonc.set_value('{\r\n  "a": 1\r\n}\r\n', ["b"], {"c": 1})
    assert changed == '{\r\n  "a": 1,\r\n  "b": {\r\n    "c": 1\r\n  }\r\n}\r\n'


def test_an_empty_text_becomes_an_object():
    assert jsonc.set_value("", ["a", "b"], 1) == '{\n  "a": {\n    "b": 1\n  }\n}\n'
    assert jsonc.loads("  // nothing\n", "f") is None


def test_removing_a_missing_member_returns_the_text_unchanged():
    text = '{"a": 1}'
    assert jsonc.remove(text, ["b"]) == text
    assert jsonc.remove(text, ["b", "c"]) == text


def test_removing_the_middle_member_keeps_the_neighbours_commas():
    text = '{\n  "a": 1,\n  "b": 2,\n  "c": 3\n}'
    assert jsonc.remove(text, ["b"]) == '{\n  "a": 1,\n  "c": 3\n}'
    assert jsonc.remove('{"a": 1, "b": 2, "c": 3}', ["b"]) == '{"a": 1, "c": 3}'
    assert jsonc.remove('{"a": 1, "b": 2}', ["b"]) == '{"a": 1}'


@pytest.mark.parametrize(("text", "where"), [
    ('{\n  "a": 1,\n  "b" 2\n}', "doc.json:3:7:"),
    ('{"a": [1,,2]}', "doc.json:1:10:"),
    ('{"a": 1} x', "doc.json:1:10:"),
    ('{"a": /* open', "doc.json:1:7:"),
    ('{"a": "tab\there"}', "doc.json:1:7:"),
    ('{"a": tru}', "doc.json:1:7:"),
    ("[" * 500, "doc.json:1:202:"),
])
def test_a_syntax_error_names_the_file_line_and_column_in_one_line(text, where):
    with pytest.raises(InvalidInput) as caught:
        jsonc.loads(text, "doc.json")
    assert str(caught.value).startswith(where)
    assert "\n" not in str(caught.value)


def test_a_path_through_a_non_object_is_refused():
    with pytest.raises(InvalidInput, match="f.json: a is not an object"):
        jsonc.set_value('{"a": [1]}', ["a", "b"], 1, shown="f.json")
    with pytest.raises(InvalidInput, match="the top level is not a JSON object"):
        jsonc.set_value("[1]", ["a"], 1)


def test_duplicate_members_read_as_the_last_and_are_all_removed():
    text = '{"a": 1, "a": 2}'
    assert jsonc.loads(text, "f") == {"a": 2}
    assert jsonc.set_value(text, ["a"], 3) == '{"a": 1, "a": 3}'
    assert jsonc.remove(text, ["a"]) == "{}"


# --- files ------------------------------------------------------------------------------------


def test_write_with_backup_keeps_one_backup_the_copy_before_the_last_change(tmp_path: Path):
    path = tmp_path / "settings.json"
    assert write_with_backup(path, "one") is None
    path.chmod(0o600)
    backup = write_with_backup(path, "two")
    assert backup == tmp_path / f"settings.json{BACKUP_SUFFIX}"
    assert backup.read_text(encoding="utf-8") == "one"
    assert write_with_backup(path, "three") == backup
    assert backup.read_text(encoding="utf-8") == "two"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert remove_with_backup(path) == backup and backup.read_text(encoding="utf-8") == "three"
    assert sorted(p.name for p in tmp_path.iterdir()) == [backup.name]  # no temp file left


def test_the_dated_backups_of_earlier_versions_go_when_the_file_is_next_backed_up(
        tmp_path: Path):
    path = tmp_path / "settings.json"
    path.write_text("now", encoding="utf-8")
    theirs = ["settings.json.loremap-backup-notes.txt", "other.json.loremap-backup-20250101-000000"]
    for name in ["settings.json.loremap-backup", "settings.json.loremap-backup-20250101-120000",
                 "settings.json.loremap-backup-20250101-120000-2", *theirs]:
        (tmp_path / name).write_text("old", encoding="utf-8")
    write_with_backup(path, "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["settings.json", "settings.json.loremap-backup", *theirs])
    assert (tmp_path / "settings.json.loremap-backup").read_text(encoding="utf-8") == "now"


def test_a_symlinked_file_is_edited_through_the_link(tmp_path: Path):
    real = tmp_path / "dotfiles" / "config.json"
    real.parent.mkdir()
    real.write_text("{}", encoding="utf-8")
    link = tmp_path / "config.json"
    link.symlink_to(real)
    write_with_backup(link, '{"a": 1}')
    assert link.is_symlink() and real.read_text(encoding="utf-8") == '{"a": 1}'
    assert remove_with_backup(link) is not None and not link.exists() and real.exists()


@pytest.mark.parametrize(("data", "reason"), [
    (b"\x89PNG\r\n\x1a\n\0\0", "it is a binary file"),
    (b'{"a": "caf\xe9"}', "it is not UTF-8 text"),
])
def test_unreadable_files_are_refused_in_one_line(tmp_path: Path, data, reason):
    path = tmp_path / "f.json"
    path.write_bytes(data)
    with pytest.raises(InvalidInput, match=f"cannot edit {path}: {reason}"):
        read_text_or_none(path)
    assert read_text_or_none(tmp_path / "missing") is None


def test_crlf_and_bom_survive_a_read(tmp_path: Path):
    path = tmp_path / "f.json"
    path.write_bytes(b'\xef\xbb\xbf{\r\n}\r\n')
    text = read_text_or_none(path)
    assert text == '\ufeff{\r\n}\r\n'
    assert jsonc.loads(text, "f") == {}
