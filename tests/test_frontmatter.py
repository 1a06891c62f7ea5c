"""Note files <-> Note: round trips, normalised scalars, unknown keys, hostile bytes."""

from __future__ import annotations

import datetime as dt
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loremap.errors import InvalidInput, MalformedNote
from loremap.model import Link, Note, NoteType, Relation, Source, Status
from loremap.vault.frontmatter import (
    FRONTMATTER_MAX_BYTES,
    KNOWN_KEYS,
    MAX_DEPTH,
    parse_note,
    render_note,
)

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
                            "valid_to", "commit", "file_hashes", "source", "archived_reason",
                            "successes", "failures", "signature", "remedy", "command",
                            "origin", "origin_digest"}),
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
    recorded_at=st.one_of(st.none(), st.datetimes(min_value=dt.datetime(1000, 1, 1)).map(
        lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"))),  # a year has four digits in ISO 8601
    valid_from=st.one_of(st.none(), iso_day),
    valid_to=st.one_of(st.none(), iso_day),
    commit=st.one_of(st.none(), st.from_regex(r"[0-9a-f]{7,12}", fullmatch=True)),
    file_hashes=st.dictionaries(paths, st.from_regex(r"[0-9a-f]{40}", fullmatch=True),
                                max_size=2),
    source=st.sampled_from(Source),
    archived_reason=st.one_of(st.none(), line_text),
    successes=st.integers(0, 10**9),
    failures=st.integers(0, 10**9),
    signature=st.one_of(st.none(), line_text),
    remedy=st.one_of(st.none(), ids),
    command=st.one_of(st.none(), line_text),
    extra=yaml_extra,
    origin_tool=st.none(),
    origin=st.one_of(st.none(), line_text),
    origin_digest=st.one_of(st.none(), st.from_regex(r"[0-9a-f]{64}", fullmatch=True)),
).flatmap(lambda note: st.one_of(st.none(), st.from_regex(r"[a-z0-9][a-z0-9-]{0,12}",
                                                          fullmatch=True)).map(
    # `source: import:<tool>`: a tool is written with an imported note only.
    lambda tool: note._replace(origin_tool=tool if note.source is Source.IMPORT else None)))


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
            "reviews: 4\n---\nBody.\n")
    note = parse_note(text, "concept-x.md")
    again = parse_note(render_note(note)[0], "concept-x.md")
    assert list(again.extra) == ["zeta", "alpha", "reviews"]
    assert again.extra == {"zeta": 1, "alpha": {"nested": ["a", "b"]}, "reviews": 4}


def test_a_track_record_is_two_whole_numbers_and_a_bad_counter_names_its_line():
    head = "---\nid: procedure-x\ntype: procedure\ntitle: X\n"
    note = parse_note(head + "successes: 47\nfailures: 3\n---\nBody.\n", "x.md")
    assert (note.successes, note.failures, dict(note.extra)) == (47, 3, {})
    assert parse_note(render_note(note)[0], "x.md") == note
    assert "successes" not in render_note(note._replace(successes=0, failures=0))[0]
    assert parse_note(head + "successes:\n---\nBody.\n", "x.md").successes == 0
    for bad in ("-1", "2.5", "many", "1e3", "[1, 2]", "'٣'", "1000000001"):
        with pytest.raises(MalformedNote, match=r"x\.md:5: 'failures' must be a") as caught:
            parse_note(head + f"failures: {bad}\n---\nBody.\n", "x.md")
        assert "\n" not in str(caught.value)


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


# --- hostile and odd frontmatter ------------------------------------------------------------

HEAD = "---\nid: concept-x\ntype: concept\ntitle: X\n"  # the next line is line 5


def bomb(depth: int = 8, width: int = 9) -> str:
    """The "billion laughs": each anchor holds `width` aliases of the one before."""
    rows = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    rows += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, depth + 1)]
    return HEAD + "\n".join(rows) + "\n---\nBody.\n"


def error_of(text: str) -> MalformedNote:
    with pytest.raises(MalformedNote) as err:
        parse_note(text, "notes/concept-x.md")
    return err.value


def test_an_alias_bomb_is_refused_at_its_first_anchor():
    text = bomb()
    assert len(text.encode("utf-8")) < 700
    err = error_of(text)
    assert (err.line, str(err)) == (5, "notes/concept-x.md:5: 'a0' uses the YAML &a0: anchors "
                                        "and aliases are refused (a few bytes of them can expand "
                                        "to gigabytes)")


@pytest.mark.parametrize(("yaml_text", "line", "shown"), [
    ("zeta: *missing\n", 5, "'zeta' uses the YAML *missing"),
    ("tags: [a]\nzeta:\n  deep: [1, &one 1]\n", 7, "'zeta' uses the YAML &one"),
    ("&k zeta: 1\n", 5, "'zeta' uses the YAML &k"),
])
def test_every_anchor_and_alias_is_refused_naming_its_key_and_line(yaml_text, line, shown):
    err = error_of(HEAD + yaml_text + "---\n")
    assert err.line == line and shown in str(err)


def test_ampersands_and_stars_in_text_are_only_text():
    note = parse_note(HEAD.replace("title: X", "title: A & B *bold*") + "why: '&a *b'\n---\n",
                      "concept-x.md")
    assert (note.title, note.extra) == ("A & B *bold*", {"why": "&a *b"})


def test_a_frontmatter_over_its_cap_is_refused_before_it_is_parsed():
    err = error_of(HEAD + "pad: " + "x" * FRONTMATTER_MAX_BYTES + "\n---\n")
    assert err.line == 1 and f"over {FRONTMATTER_MAX_BYTES} bytes" in str(err)
    fits = HEAD + "pad: " + "x" * (FRONTMATTER_MAX_BYTES - len(HEAD) - 10) + "\n---\n"
    assert parse_note(fits, "concept-x.md").extra["pad"].startswith("xxx")


def test_a_note_whose_frontmatter_would_be_over_the_cap_is_not_written():
    files = tuple(f"src/module_{i:05}.py" for i in range(FRONTMATTER_MAX_BYTES // 20))
    with pytest.raises(InvalidInput, match=r"frontmatter of note concept-x would be \d+ bytes"):
        render_note(Note(id="concept-x", type=NoteType.CONCEPT, title="X", body="", files=files))


def test_nesting_past_the_depth_limit_names_the_key():
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    err = error_of(HEAD + f"tags: [a]\nzeta: {deep}\n---\n")
    assert err.line == 6 and f"'zeta' nests deeper than {MAX_DEPTH} levels" in str(err)
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert "zeta" in parse_note(HEAD + f"zeta: {ok}\n---\n", "concept-x.md").extra


def test_an_invalid_date_in_an_unknown_key_round_trips_as_text():
    note = parse_note(HEAD + "reviewed: 2026-13-45\nchecked: 2026-02-30 10:00:00\n---\nB.\n",
                      "concept-x.md")
    assert note.extra == {"reviewed": "2026-13-45", "checked": "2026-02-30 10:00:00"}
    assert parse_note(render_note(note)[0], "concept-x.md") == note


@pytest.mark.parametrize("key", ["recorded_at", "valid_from", "valid_to"])
@pytest.mark.parametrize("value", ["2026-13-45", "2026-02-30T10:00:00Z", "last week"])
def test_an_invalid_date_in_a_known_key_names_the_key_and_its_line(key, value):
    err = error_of(HEAD + f"tags: [a]\n{key}: {value}\n---\n")
    assert err.line == 6
    assert str(err).startswith(f"notes/concept-x.md:6: '{key}' is not a date: '{value}'")


@pytest.mark.parametrize("value", ["2026-11-30", "2026-11-30T16:40:00Z",
                                   "2026-11-30 16:40:00 +01:00", "2026-11-30T16:40:00.5+02:00"])
def test_dates_and_timestamps_in_known_keys_are_kept_as_written(value):
    assert parse_note(HEAD + f"valid_from: {value}\n---\n", "concept-x.md").valid_from == value


@pytest.mark.parametrize(("yaml_text", "line", "message"), [
    ("tags: [a]\nzeta: 1\ntags: [b]\n", 7, "duplicate key 'tags' at lines 5 and 7"),
    ("zeta: 1\nzeta: 2\n", 6, "duplicate key 'zeta' at lines 5 and 6"),
    ("zeta:\n  a: 1\n  b: {c: 1, c: 2}\n", 7, "duplicate key 'c' in 'zeta' twice at line 7"),
    ("file_hashes:\n  a.py: x\n  a.py: y\n", 7, "duplicate key 'a.py' in 'file_hashes' at "
                                                "lines 6 and 7"),
    ("title: Y\n", 5, "duplicate key 'title' at lines 4 and 5"),
])
def test_a_duplicate_key_is_an_error_naming_it_and_both_lines(yaml_text, line, message):
    err = error_of(HEAD + yaml_text + "---\n")
    assert err.line == line and str(err) == f"notes/concept-x.md:{line}: {message}"


@pytest.mark.parametrize(("yaml_text", "line", "message"), [
    ("tags: [a]\nn: !!int abc\n", 6, "'n': invalid literal for int() with base 10: 'abc'"),
    ("n: !custom x\n", 5, "'n': could not determine a constructor for the tag '!custom'"),
    ("? [a, b]\n: 1\n", 5, "a frontmatter key must be a plain word, not a list or mapping"),
])
def test_a_value_yaml_cannot_build_names_its_key_and_line(yaml_text, line, message):
    err = error_of(HEAD + yaml_text + "---\n")
    assert err.line == line and str(err) == f"notes/concept-x.md:{line}: {message}"


def test_a_bad_type_or_status_names_its_key_and_line():
    err = error_of("---\nid: concept-x\ntitle: X\nstatus: gone\ntype: concept\n---\n")
    assert err.line == 4 and str(err).startswith("notes/concept-x.md:4: 'status': ")


line_breaking = st.text(st.one_of(st.characters(exclude_categories=("Cs",)),
                                  st.sampled_from("\x85\u2028\u2029\r\n\t \ufeff:#&*'\"")),
                        max_size=40)


@settings(max_examples=300)
@given(st.dictionaries(line_breaking.filter(lambda k: k not in KNOWN_KEYS),
                       st.one_of(line_breaking, st.lists(line_breaking, max_size=3)),
                       max_size=4))
def test_unknown_key_strings_round_trip_exactly_line_breaks_included(extra):
    note = Note(id="concept-x", type=NoteType.CONCEPT, title="X", body="", extra=extra)
    assert parse_note(render_note(note)[0], "concept-x.md").extra == extra


@pytest.mark.parametrize("char", ["\x85", "\u2028", "\u2029"])
def test_yaml_line_break_characters_in_an_unknown_key_come_back(char):
    extra = {"why": f"a{char}b", "edge": char, f"k{char}": [f"{char}x"]}
    note = Note(id="concept-x", type=NoteType.CONCEPT, title="X", body="", extra=extra)
    assert parse_note(render_note(note)[0], "concept-x.md").extra == extra
