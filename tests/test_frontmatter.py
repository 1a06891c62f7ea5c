"""Note files <-> Note: round trips, normalised scalars, unknown keys, hostile bytes."""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loremap.errors import MalformedNote
from loremap.model import Link, Note, NoteType, Relation, Source, Status
from loremap.vault.frontmatter import parse_note, render_note

ids = st.from_regex(r"[a-z0-9]([a-z0-9]|-(?=[a-z0-9])){0,40}", fullmatch=True)
line_text = st.text(st.characters(exclude_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1,
                    max_size=60).map(lambda s: " ".join(s.split())).filter(bool)
any_text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\r"),
                   max_size=300)
paths = st.text(string.ascii_letters + string.digits + "/._- ,:[]{}#'\"", min_size=1,
                max_size=40).filter(lambda s: s == s.strip())
iso_day = st.dates().map(lambda d: d.isoformat())
yaml_extra = st.dictionaries(
    st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True).filter(
        lambda k: k not in {"id", "type", "title", "status", "files", "links", "supersedes",
                            "superseded_by", "tags", "aliases", "recorded_at", "valid_from",
                            "valid_to", "commit", "file_hashes", "source", "archived_reason"}),
    st.one_of(st.integers(), st.booleans(), line_text, st.lists(st.integers(), max_size=3)),
    max_size=3,
)


def body_strategy() -> st.SearchStrategy[str]:
    return any_text.map(lambda s: s.strip()).filter(
        lambda s: "\n---" not in s and not s.startswith("#"))


notes = st.builds(
    Note,
    id=ids,
    type=st.sampled_from(NoteType),
    title=line_text,
    body=body_strategy(),
    status=st.sampled_from(Status),
    files=st.lists(paths, max_size=3, unique=True).map(tuple),
    links=st.lists(st.builds(Link, st.sampled_from(Relation), st.one_of(ids, paths)),
                   max_size=3).map(tuple),
    supersedes=st.one_of(st.none(), ids),
    superseded_by=st.one_of(st.none(), ids),
    tags=st.lists(line_text, max_size=3).map(tuple),
    aliases=st.lists(line_text, max_size=2).map(tuple),
    recorded_at=st.one_of(st.none(), st.datetimes().map(lambda d: d.strftime(
        "%Y-%m-%dT%H:%M:%SZ"))),
    valid_from=st.one_of(st.none(), iso_day),
    valid_to=st.one_of(st.none(), iso_day),
    commit=st.one_of(st.none(), st.from_regex(r"[0-9a-f]{7,12}", fullmatch=True)),
    file_hashes=st.dictionaries(paths, st.from_regex(r"[0-9a-f]{40}", fullmatch=True),
                                max_size=2),
    source=st.sampled_from(Source),
    archived_reason=st.one_of(st.none(), line_text),
    extra=yaml_extra,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(notes)
def test_any_valid_note_survives_dump_and_parse_unchanged(note):
    text, _ = render_note(note)
    assert parse_note(text, "n.md") == note


@settings(max_examples=300)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_crash_the_parser(data):
    try:
        parse_note(data.decode("utf-8", "replace"), "n.md")
    except MalformedNote:
        pass


@settings(max_examples=200)
@given(st.text(max_size=200))
def test_arbitrary_frontmatter_text_raises_only_malformed_note(text):
    try:
        parse_note("---\n" + text + "\n---\nbody\n", "n.md")
    except MalformedNote:
        pass


def test_yaml_scalars_are_normalised_on_read():
    text = ("---\nid: gotcha-x\ntype: Gotcha\ntitle: 2024\nstatus: active\n"
            "commit: 0123456\nrecorded_at: 2026-11-30T16:40:00Z\nvalid_from: 2026-11-30\n"
            "tags: [yes, 3.5, null]\nfiles: src/a.py\nreviewed: 2026-01-02\n"
            "stamp: 2026-01-02 10:00:00+00:00\npriority: 3\nflag: true\n---\nbody\n")
    note = parse_note(text, "gotcha-x.md")
    assert note.type is NoteType.GOTCHA
    assert note.title == "2024"
    assert note.commit == "0123456"
    assert note.recorded_at == "2026-11-30T16:40:00Z"
    assert note.valid_from == "2026-11-30"
    assert note.tags == ("yes", "3.5")
    assert note.files == ("src/a.py",)
    assert note.extra == {"reviewed": "2026-01-02", "stamp": "2026-01-02T10:00:00Z",
                          "priority": 3, "flag": True}


def test_unknown_keys_survive_a_round_trip_in_order():
    text = ("---\nid: concept-x\ntype: concept\ntitle: X\nzeta: 1\nalpha:\n  nested: [a, b]\n"
            "successes: 4\n---\nBody.\n")
    note = parse_note(text, "concept-x.md")
    again = parse_note(render_note(note)[0], "concept-x.md")
    assert list(again.extra) == ["zeta", "alpha", "successes"]
    assert again.extra == {"zeta": 1, "alpha": {"nested": ["a", "b"]}, "successes": 4}


def test_the_links_section_is_regenerated_from_the_frontmatter():
    text = ("---\nid: concept-x\ntype: concept\ntitle: X\nlinks:\n"
            "  - {rel: about, target: concept-y}\n---\n# X\n\nBody.\n\n## Links\n"
            "- relates [[stale-entry]]\n")
    note = parse_note(text, "concept-x.md")
    assert note.body == "Body."
    rendered, _ = render_note(note)
    assert rendered.endswith("Body.\n\n## Links\n- about [[concept-y]]\n")


def test_a_body_with_its_own_links_heading_and_prose_is_kept():
    text = "---\nid: concept-x\ntype: concept\ntitle: X\n---\n## Links\nSee the wiki.\n"
    assert parse_note(text, "concept-x.md").body == "## Links\nSee the wiki."


def test_crlf_files_and_a_bom_are_read():
    text = "\ufeff---\r\nid: concept-x\r\ntype: concept\r\ntitle: X\r\n---\r\nBody.\r\n"
    note = parse_note(text, "concept-x.md")
    assert (note.id, note.body) == ("concept-x", "Body.")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("---\nid: a\ntype: bug\ntitle: [x\n---\n", 4),
        ("---\nid: a\ntype: bug\ntitle: x\nfiles: {a: [}\n---\n", 5),
    ],
)
def test_malformed_yaml_names_the_file_line(text, line):
    with pytest.raises(MalformedNote) as err:
        parse_note(text, "notes/a.md")
    assert err.value.line == line
    assert str(err.value).startswith(f"notes/a.md:{line}: malformed frontmatter")
