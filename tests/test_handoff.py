"""Session handoffs: saved, served, closed and refused as documented in docs/handoffs.md."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loremap.errors import InvalidInput, MalformedNote, NotFound, SecretFound
from loremap.sessions.handoff import HandoffDraft, Handoffs

T0 = dt.datetime(2026, 11, 30, 21, 40, 5, 999_000, tzinfo=dt.UTC)
TOKEN = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
ID_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}Z(-\d+)?")


class Clock:
    """A clock that says what the test sets (`clock.now += ...`)."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def lore(tmp_path: Path) -> Path:
    (tmp_path / ".loremap").mkdir()
    return tmp_path / ".loremap"


@pytest.fixture
def handoffs(lore: Path, clock: Clock) -> Handoffs:
    return Handoffs(lore, lock_timeout=1.0, max_bytes=4096, clock=clock)


def files_of(lore: Path) -> dict[str, bytes]:
    folder = lore / "handoffs"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.is_dir() else {}


FULL = HandoffDraft(goal="Fix the double coupon bug", state="Found the cause; no fix yet.",
                    decisions=["Apply discounts after the total", "Keep the old API"],
                    next_steps=["Write a failing test"], open_questions=["Is tax per line?"],
                    files=["src/cart/total.ts", "src/cart/coupon.ts"], session="sess-42",
                    source="agent")


# --- the service ----------------------------------------------------------------------------


def test_save_writes_the_documented_file_and_load_reads_it_back(handoffs, lore):
    saved = handoffs.save(FULL)
    assert saved.id == "2026-11-30T21-40-05Z"
    assert saved.created_at == T0.replace(microsecond=0)
    text = (lore / "handoffs" / "2026-11-30T21-40-05Z.md").read_text(encoding="utf-8")
    assert text == (
        "---\nid: 2026-11-30T21-40-05Z\ntype: handoff\nstatus: open\n"
        "created_at: 2026-11-30T21:40:05Z\nsession: sess-42\nsource: agent\n"
        "files: [src/cart/total.ts, src/cart/coupon.ts]\n---\n"
        "# Handoff: Fix the double coupon bug\n\n## Goal\nFix the double coupon bug\n\n"
        "## State\nFound the cause; no fix yet.\n\n"
        "## Decisions\n- Apply discounts after the total\n- Keep the old API\n\n"
        "## Next steps\n- Write a failing test\n\n## Open questions\n- Is tax per line?\n\n"
        "## Files\n- src/cart/total.ts\n- src/cart/coupon.ts\n")
    assert text.endswith(handoffs.render(saved))
    assert handoffs.load() == saved
    assert handoffs.load(saved.id) == saved
    assert handoffs.latest() == saved


def test_empty_fields_leave_their_sections_out(handoffs):
    saved = handoffs.save(HandoffDraft(goal="Only a goal"))
    assert handoffs.render(saved) == "# Handoff: Only a goal\n\n## Goal\nOnly a goal\n"


def test_saving_closes_the_open_handoff_and_list_is_newest_first(handoffs, clock):
    first = handoffs.save(HandoffDraft(goal="first"))
    clock.now += dt.timedelta(seconds=1)
    second = handoffs.save(HandoffDraft(goal="second"))
    assert [(h.id, h.status) for h in handoffs.list()] == [(second.id, "open"),
                                                          (first.id, "closed")]
    assert handoffs.latest() == second
    assert handoffs.list(limit=1) == [second]
    assert handoffs.load(first.id).status == "closed"


def test_saves_in_the_same_second_get_numbered_suffixes_in_order(handoffs):
    ids = [handoffs.save(HandoffDraft(goal=f"goal {n}")).id for n in range(11)]
    assert ids[:3] == ["2026-11-30T21-40-05Z", "2026-11-30T21-40-05Z-2", "2026-11-30T21-40-05Z-3"]
    assert [h.id for h in handoffs.list()] == ids[::-1]  # -10 and -11 are newer than -9
    assert handoffs.latest().goal == "goal 10"
    assert [h.status for h in handoffs.list()].count("open") == 1


def test_ids_are_utc_whatever_the_clock_zone(lore):
    paris = dt.timezone(dt.timedelta(hours=1))
    local = Handoffs(lore, 1.0, 4096, clock=lambda: dt.datetime(2026, 12, 1, 0, 30, tzinfo=paris))
    assert local.save(HandoffDraft(goal="g")).id == "2026-11-30T23-30-00Z"
    naive = Handoffs(lore, 1.0, 4096, clock=lambda: dt.datetime(2026, 12, 2, 8, 0, 0))
    saved = naive.save(HandoffDraft(goal="g"))
    assert saved.id == "2026-12-02T08-00-00Z" and saved.created_at.tzinfo is not None


def test_concurrent_saves_get_distinct_ids_and_leave_one_open(handoffs):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=8) as pool:
        saved = list(pool.map(lambda n: handoffs.save(HandoffDraft(goal=f"g{n}")), range(16)))
    assert len({h.id for h in saved}) == 16
    assert [h.status for h in handoffs.list()] == ["open"] + ["closed"] * 15


def test_close_marks_the_latest_open_one_and_is_harmless_twice(handoffs):
    saved = handoffs.save(FULL)
    assert handoffs.close() == saved._replace(status="closed")
    assert handoffs.latest() is None
    assert handoffs.close(saved.id).status == "closed"
    with pytest.raises(NotFound, match="no open handoff"):
        handoffs.close()
    with pytest.raises(NotFound, match="no open handoff"):
        handoffs.load()
    with pytest.raises(NotFound, match="no handoff 2020-01-01T00-00-00Z"):
        handoffs.load("2020-01-01T00-00-00Z")


def test_multiline_text_and_heading_lines_round_trip(handoffs):
    draft = HandoffDraft(goal="Line one\nline two", state="## not a section\n\\## backslash\nok",
                         decisions=["first\n  indented\n\n- not an item", "## nor a heading"],
                         next_steps=["a\r\nb"], files=["weird: name, [1].py", "yes", "123"],
                         session="id: with # signs")
    saved = handoffs.save(draft)
    assert saved.next_steps == ("a\nb",)
    assert handoffs.load(saved.id) == saved
    assert handoffs.render(saved).startswith("# Handoff: Line one\n")
    text = (handoffs.directory / f"{saved.id}.md").read_text(encoding="utf-8")
    data = yaml.safe_load(text.split("---\n")[1])  # a real YAML parser reads the same values
    assert (data["id"], data["type"], data["session"]) == (saved.id, "handoff", saved.session)
    assert data["files"] == list(saved.files)


line = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00\r\n"),
               max_size=30)
text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=80)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(goal=text, state=text, items=st.lists(text, max_size=3), files=st.lists(line, max_size=3),
       session=st.one_of(st.none(), line))
def test_any_accepted_draft_loads_back_unchanged(handoffs, goal, state, items, files, session):
    try:
        saved = handoffs.save(HandoffDraft(goal=goal, state=state, decisions=items,
                                           open_questions=items, files=files, session=session))
    except (InvalidInput, SecretFound):
        return
    loaded = handoffs.load(saved.id)
    assert loaded == saved
    front = (handoffs.directory / f"{saved.id}.md").read_text(encoding="utf-8").split("---\n")[1]
    data = yaml.safe_load(front)
    assert (data["session"], data["files"]) == (saved.session, list(saved.files))


@settings(max_examples=200)
@given(st.text(max_size=300))
def test_arbitrary_file_text_raises_only_malformed_note(text):
    from loremap.sessions.handoff_file import parse_file

    try:
        parse_file(text, "x", "x.md")
    except MalformedNote as exc:
        assert "\n" not in str(exc)


def test_a_hand_edited_file_is_read_leniently_and_survives_close(handoffs, lore):
    folder = lore / "handoffs"
    folder.mkdir()
    hand = ("---\n# written by hand\nid: whatever\ntype: Handoff\nstatus: 'open'\n"
            "created_at: 2026-11-29 10:00:00\nsession:\nfiles:\n  - src/a.py\n  - \"src/b c.py\"\n"
            "reviewer: {name: Ana, when: 2026-12-01}\ntags: [x, y]\n---\n"
            "# Handoff: ignored title\n\nA preamble.\n\n## next STEPS\n1. ship it\n* then rest\n"
            "\n## Risks\nThe cache may be stale.\n\n### detail\nkept\n\n## goal\nShip v2\n\n"
            "## Files\n- src/a.py\n- docs/x.md\n")
    (folder / "my-notes.md").write_text(hand, encoding="utf-8")
    loaded = handoffs.load("my-notes")
    assert loaded.goal == "Ship v2" and loaded.status == "open" and loaded.source == "human"
    assert loaded.next_steps == ("ship it", "then rest")
    assert loaded.files == ("src/a.py", "src/b c.py", "docs/x.md")
    assert loaded.session is None
    assert loaded.created_at == dt.datetime(2026, 11, 29, 10, tzinfo=dt.UTC)
    assert loaded.extra_sections == (("Risks", "The cache may be stale.\n\n### detail\nkept"),)
    assert "## Risks\nThe cache may be stale." in handoffs.render(loaded)
    assert handoffs.close("my-notes").status == "closed"
    after = (folder / "my-notes.md").read_text(encoding="utf-8")
    assert after == hand.replace("status: 'open'", "status: closed")


def test_a_file_without_status_gets_one_when_closed(handoffs, lore):
    (path := lore / "handoffs" / "2026-01-02T03-04-05Z.md").parent.mkdir()
    path.write_text("---\ntype: handoff\n---\n## Goal\nold work\n", encoding="utf-8")
    loaded = handoffs.latest()
    assert loaded.created_at == dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    handoffs.close()
    assert path.read_text(encoding="utf-8") == ("---\ntype: handoff\nstatus: closed\n---\n"
                                                "## Goal\nold work\n")


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("no frontmatter\n", "no frontmatter"),
        ("---\ntype: handoff\n## Goal\nx\n", "no closing '---'"),
        ("---\njust words\n---\n## Goal\nx\n", "expected 'key: value'"),
        ("---\nstatus: open\nstatus: closed\n---\n## Goal\nx\n", "'status' appears twice"),
        ("---\nstatus: maybe\n---\n## Goal\nx\n", "status 'maybe' is not one of open, closed"),
        ("---\nsession: \"unclosed\n---\n## Goal\nx\n", "not closed"),
        ("---\nfiles: [a, b\n---\n## Goal\nx\n", "must end with ']'"),
        ("---\nstatus: [open]\n---\n## Goal\nx\n", "single value"),
        ("---\ntype: decision\n---\n## Goal\nx\n", "not handoff"),
        ("---\ncreated_at: yesterday\n---\n## Goal\nx\n", "not an ISO date"),
        ("---\ntype: handoff\n---\n## State\nno goal here\n", "no goal"),
    ],
)
def test_malformed_files_are_refused_by_load_and_skipped_by_latest_and_list(
        handoffs, lore, content, needle):
    good = handoffs.save(HandoffDraft(goal="good"))
    (lore / "handoffs" / "2099-01-01T00-00-00Z.md").write_text(content, encoding="utf-8")
    with pytest.raises(MalformedNote) as caught:
        handoffs.load("2099-01-01T00-00-00Z")
    message = str(caught.value)
    assert message.startswith(".loremap/handoffs/2099-01-01T00-00-00Z.md")
    assert needle in message and "\n" not in message
    assert handoffs.latest() == good
    assert handoffs.list() == [good]
    assert "2099-01-01T00-00-00Z.md" in handoffs.scan()[1][0]


def test_unreadable_bytes_are_named_and_skipped(handoffs, lore):
    (lore / "handoffs").mkdir()
    (lore / "handoffs" / "2026-01-01T00-00-00Z.md").write_bytes(b"---\n\xff\xfe\n---\n")
    (lore / "handoffs" / "2026-01-01T00-00-01Z.md").write_bytes(b"x" * 70_000)
    with pytest.raises(MalformedNote, match="not UTF-8"):
        handoffs.load("2026-01-01T00-00-00Z")
    with pytest.raises(MalformedNote, match="over the 4096-byte limit"):
        handoffs.load("2026-01-01T00-00-01Z")
    assert handoffs.latest() is None
    assert len(handoffs.scan()[1]) == 2


@pytest.mark.parametrize("bad_id", ["../x", "/etc/passwd", "a/b", "..", ".hidden", "", "a\\b",
                                    "x\x00y"])
def test_ids_that_could_leave_the_folder_are_refused(handoffs, lore, bad_id):
    (lore.parent / "x.md").write_text("---\n---\n## Goal\nescaped\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="invalid handoff id"):
        handoffs.load(bad_id)
    with pytest.raises(InvalidInput, match="invalid handoff id"):
        handoffs.close(bad_id)


@pytest.mark.parametrize(
    ("draft", "error", "needle"),
    [
        (HandoffDraft(goal=""), InvalidInput, "needs a goal"),
        (HandoffDraft(goal=" \n\t"), InvalidInput, "needs a goal"),
        (HandoffDraft(goal="g", next_steps=["a", "b" * 5000]), InvalidInput,
         "over the limit of 4096 (vault.max_note_bytes); shorten next_steps[1]"),
        (HandoffDraft(goal="g", decisions=["ok", f"token {TOKEN}"]), SecretFound, "decisions[1]"),
        (HandoffDraft(goal=f"use {TOKEN}"), SecretFound, "in goal"),
        (HandoffDraft(goal="g", files=[TOKEN]), SecretFound, "files[0]"),
        (HandoffDraft(goal="g", session=TOKEN), SecretFound, "in session"),
        (HandoffDraft(goal="g", next_steps=["a\x00b"]), InvalidInput, "next_steps[0]"),
        (HandoffDraft(goal="g", files=["two\nlines"]), InvalidInput, "files[0] must be one"),
        (HandoffDraft(goal="g", session="a\nb"), InvalidInput, "session must be one line"),
        (HandoffDraft(goal="g\udc80"), InvalidInput, "not valid Unicode"),
        (HandoffDraft(goal="g", source="robot"), InvalidInput, "agent, human, auto"),
    ],
)
def test_bad_drafts_are_refused_and_nothing_changes(handoffs, lore, draft, error, needle):
    before = handoffs.save(HandoffDraft(goal="before"))
    snapshot = files_of(lore)
    with pytest.raises(error) as caught:
        handoffs.save(draft)
    assert needle in str(caught.value) and "\n" not in str(caught.value)
    assert files_of(lore) == snapshot
    assert handoffs.latest() == before


def test_without_a_project_every_call_says_run_init(tmp_path):
    missing = Handoffs(tmp_path / ".loremap", 1.0, 4096)
    for call in (lambda: missing.save(HandoffDraft(goal="g")), missing.load, missing.latest,
                 missing.list, missing.close, lambda: missing.load("2026-01-01T00-00-00Z")):
        with pytest.raises(NotFound, match="run `loremap init`"):
            call()
    assert not (tmp_path / ".loremap").exists()


def test_for_project_takes_the_vault_settings_and_starts_empty(lore):
    from loremap.config import Settings

    handoffs = Handoffs.for_project(lore, Settings({"vault.max_note_bytes": 10,
                                                    "vault.lock_timeout_s": 2.5}))
    assert (handoffs.max_bytes, handoffs.lock_timeout) == (10, 2.5)
    with pytest.raises(NotFound, match="run `loremap init`"):
        Handoffs.for_project(None, Settings())
    assert handoffs.list() == [] and handoffs.latest() is None
    (lore / "handoffs").mkdir()
    (lore / "handoffs" / ".2026-01-01T00-00-00Z.md.123.tmp").write_text("junk", encoding="utf-8")
    assert handoffs.scan() == ([], [])


# --- the CLI --------------------------------------------------------------------------------


def test_cli_save_show_list_close(project, cli):
    saved = cli("handoff", "save", "--goal", "Fix login", "--state", "half done",
                "--decision", "Use JWT", "--decision", "Keep cookies for admin",
                "--next", "write tests", "--question", "token lifetime?",
                "--file", "src/auth/login.ts", "--session", "s-1", "--json")
    assert saved.code == 0, saved.err
    data = json.loads(saved.out)
    handoff = data["handoff"]
    assert ID_RE.fullmatch(handoff["id"]) and (project / data["path"]).is_file()
    assert data["path"] == f".loremap/handoffs/{handoff['id']}.md"
    assert handoff["decisions"] == ["Use JWT", "Keep cookies for admin"]
    assert (handoff["status"], handoff["source"], handoff["session"]) == ("open", "human", "s-1")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", handoff["created_at"])

    shown = cli("handoff", "show")
    assert shown.code == 0 and "# Handoff: Fix login\n\n## Goal\nFix login\n" in shown.out
    as_json = json.loads(cli("handoff", "--json", "show", handoff["id"]).out)
    assert as_json["handoff"] == handoff and as_json["text"].startswith("# Handoff: Fix login")

    assert cli("handoff", "save", "--goal", "Next thing").out.startswith("saved handoff ")
    listed = json.loads(cli("handoff", "list", "--json").out)
    assert [(h["goal"], h["status"]) for h in listed["handoffs"]] == [("Next thing", "open"),
                                                                      ("Fix login", "closed")]
    table = cli("handoff", "list", "--limit", "1")
    assert "Next thing" in table.out and "Fix login" not in table.out
    assert "(1 handoff, 1 older not shown)" in table.out

    assert cli("handoff", "close").out.startswith("closed handoff ")
    assert "no open handoff" in cli("handoff", "show").err


def test_cli_refuses_bad_input_in_one_line_and_writes_nothing(repo, cli):
    no_project = cli("handoff", "list")
    assert no_project.code == 1 and "run `loremap init`" in no_project.err
    assert cli("init").code == 0
    for args, needle in [
        (["save", "--goal", "x", "--decision", "ok", "--decision", f"token {TOKEN}"],
         "decisions[1]"),
        (["save", "--goal", ""], "needs a goal"),
        (["show", "../x"], "invalid handoff id"),
        (["close", "/etc/passwd"], "invalid handoff id"),
        (["show", "2020-01-01T00-00-00Z"], "no handoff 2020-01-01T00-00-00Z"),
    ]:
        result = cli("handoff", *args)
        assert result.code == 1, (args, result.out)
        assert len(result.err.strip().splitlines()) == 1 and needle in result.err, result.err
    assert list((repo / ".loremap" / "handoffs").iterdir()) == []
    assert cli("handoff").code == 2  # an action is required


def test_cli_lists_around_a_corrupt_file_with_a_warning(project, cli):
    assert cli("handoff", "save", "--goal", "good one").code == 0
    (project / ".loremap" / "handoffs" / "2099-01-01T00-00-00Z.md").write_text(
        "---\nstatus: [\n---\n", encoding="utf-8")
    listed = cli("handoff", "list")
    assert listed.code == 0 and "good one" in listed.out
    assert "warning: skipped .loremap/handoffs/2099-01-01T00-00-00Z.md" in listed.err
    assert "good one" in cli("handoff", "show").out
    broken = cli("handoff", "show", "2099-01-01T00-00-00Z")
    assert broken.code == 1 and ".loremap/handoffs/2099-01-01T00-00-00Z.md:2" in broken.err


def test_reading_the_latest_handoff_stays_on_the_hook_path(project, cli):
    assert cli("handoff", "save", "--goal", "resume me").code == 0
    code = ("from pathlib import Path; from loremap.sessions.handoff import Handoffs;"
            f"print(Handoffs(Path({str(project / '.loremap')!r}), 1, 4096).latest().goal)")
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True,
                            text=True, timeout=60, check=True)
    assert result.stdout == "resume me\n"
    modules = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
               if line.startswith("import time:") and "|" in line}
    assert "loremap.sessions.handoff" in modules
    heavy = {"yaml", "mcp", "pydantic", "tree_sitter", "sqlite3", "loremap.vault.secrets"}
    assert not {m for m in modules if m.split(".")[0] in heavy or m in heavy}
