"""Bad input gets a clear one-line error and changes nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest


def snapshot(project: Path) -> dict[str, bytes]:
    notes = project / ".loremap" / "notes"
    return {p.name: p.read_bytes() for p in sorted(notes.iterdir())}


def index_rows(project: Path) -> int:
    with sqlite3.connect(project / ".loremap" / "index.sqlite") as conn:
        return int(conn.execute("SELECT count(*) FROM nodes WHERE kind = 'note'").fetchone()[0])


def assert_refused(result, *needles: str) -> None:
    assert result.code == 1, (result.out, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def seeded(project, cli):
    cli("remember", "-t", "concept", "--title", "Authentication", "-m", "Sessions use JWT.")
    return project


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--title", "../x", "--supersedes", "../x"], "invalid note id '../x'"),
        (["--title", "ok", "--supersedes", "/etc/passwd"], "invalid note id"),
        (["--title", "ok", "--link", "about:../../etc/passwd"], "inside the repository"),
        (["--title", "ok", "--link", "about:/etc/passwd"], "inside the repository"),
        (["--title", "ok", "--link", "about:Bad Id"], "invalid note id"),
        (["--title", "ok", "--link", "nonsense"], "REL:TARGET"),
        (["--title", "ok", "--link", "likes:concept-x"], "unknown link relation"),
        (["--title", "ok", "--file", "../outside.txt"], "outside the repository"),
        (["--title", "ok", "--file", "/etc/passwd"], "outside the repository"),
        (["--title", "bad\x00title"], "NUL byte"),
        (["--title", "!!! ???"], "no letters or digits"),
        (["--title", "   "], "title is empty"),
        (["--title", "two\nlines"], "one line"),
    ],
)
def test_refused_arguments_change_nothing(seeded, cli, args, needle):
    before = snapshot(seeded)
    result = cli("remember", "-t", "gotcha", *args, "-m", "body")
    assert_refused(result, needle)
    assert snapshot(seeded) == before
    assert index_rows(seeded) == 1


def test_an_unknown_type_is_a_one_line_usage_error(seeded, cli):
    before = snapshot(seeded)
    result = cli("remember", "-t", "rumour", "--title", "x", "-m", "y")
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "invalid choice: 'rumour'" in result.err and "loremap remember --help" in result.err
    assert snapshot(seeded) == before


def test_ids_that_would_escape_the_vault_are_refused_everywhere(seeded, cli):
    before = snapshot(seeded)
    for args in (["forget", "../x"], ["forget", "a\x00b"], ["forget", "/abs"],
                 ["show", "a\x00b"], ["show", "Bad Id"]):
        assert_refused(cli(*args), "invalid note id")
    # show also takes file paths: one outside the repository is refused as such
    for args in (["show", "../../etc/passwd"], ["show", "/abs"]):
        assert_refused(cli(*args), "outside the repository")
    assert_refused(cli("show", "notes/../x.py"), "not in the code map")
    assert snapshot(seeded) == before


def test_a_body_over_the_size_limit_is_refused(seeded, cli, monkeypatch):
    monkeypatch.setenv("LOREMAP_MAX_NOTE_BYTES", "1000")
    before = snapshot(seeded)
    assert_refused(cli("remember", "-t", "gotcha", "--title", "Big", stdin="x" * 1001),
                   "over the limit of 1000")
    assert snapshot(seeded) == before


def test_a_non_utf8_body_is_refused(seeded, cli):
    before = snapshot(seeded)
    assert_refused(cli("remember", "-t", "gotcha", "--title", "Latin-1", stdin=b"caf\xe9"),
                   "not UTF-8")
    assert snapshot(seeded) == before


def test_a_secret_is_refused_naming_kind_and_line(seeded, cli):
    token = "ghp_" + "a1B2c3D4e5" * 4
    before = snapshot(seeded)
    result = cli("remember", "-t", "gotcha", "--title", "CI token",
                 "-m", f"First line.\nSecond line.\nexport GITHUB_TOKEN={token}\n")
    assert_refused(result, "GitHub", "line 3 of the body", "--quarantine")
    assert token not in result.err
    assert snapshot(seeded) == before
    assert index_rows(seeded) == 1


def test_quarantine_stores_the_note_redacted_and_search_never_returns_it(seeded, cli):
    token = "ghp_" + "a1B2c3D4e5" * 4
    result = cli("remember", "-t", "gotcha", "--title", "CI token expiry", "--quarantine",
                 "-m", f"The CI token {token} expires monthly.")
    assert result.code == 0, result.err
    path = seeded / ".loremap" / "notes" / "gotcha-ci-token-expiry.md"
    text = path.read_text(encoding="utf-8")
    assert token not in text
    assert "status: quarantined" in text and "[REDACTED" in text
    assert json.loads(cli("search", "token expires", "--json").out)["items"] == []


def test_malformed_frontmatter_is_skipped_with_file_and_line_and_the_rest_indexes(seeded, cli):
    bad = seeded / ".loremap" / "notes" / "gotcha-broken.md"
    bad.write_text("---\nid: gotcha-broken\ntype: gotcha\ntitle: [unclosed\n---\nbody\n",
                   encoding="utf-8")
    result = cli("reindex", "--json")
    assert result.code == 0
    data = json.loads(result.out)
    assert data["indexed"] == 1 and data["skipped"] == 1
    assert any(".loremap/notes/gotcha-broken.md:" in w for w in data["warnings"])
    doctor = json.loads(cli("doctor", "--json").out)
    errors = [f["message"] for f in doctor["findings"] if f["check"] == "notes"]
    assert len(errors) == 1 and "gotcha-broken.md:" in errors[0]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("no frontmatter at all\n", "no frontmatter"),
        ("---\nid: gotcha-x\ntype: gotcha\n---\n", "missing required key 'title'"),
        ("---\nid: gotcha-x\ntype: rumour\ntitle: X\n---\n", "unknown note type"),
        ("---\nid: gotcha-x\ntype: gotcha\ntitle: X\nstatus: maybe\n---\n", "unknown status"),
        ("---\nid: gotcha-other\ntype: gotcha\ntitle: X\n---\n", "does not match the file name"),
        ("---\nid: ../x\ntype: gotcha\ntitle: X\n---\n", "invalid note id"),
        ("---\n- a list\n---\n", "must be a mapping"),
        ("---\nid: gotcha-x\ntype: gotcha\ntitle: X\n", "no closing '---'"),
    ],
)
def test_each_malformed_note_file_is_named_in_a_warning(seeded, cli, content, needle):
    (seeded / ".loremap" / "notes" / "gotcha-x.md").write_text(content, encoding="utf-8")
    data = json.loads(cli("list", "--json").out)
    assert [n["id"] for n in data["notes"]] == ["concept-authentication"]
    assert len(data["warnings"]) == 1
    assert "gotcha-x.md" in data["warnings"][0] and needle in data["warnings"][0]


def test_a_non_utf8_or_binary_note_file_is_skipped(seeded, cli):
    notes = seeded / ".loremap" / "notes"
    (notes / "gotcha-latin.md").write_bytes(b"---\nid: gotcha-latin\ntype: gotcha\ntitle: caf\xe9"
                                            b"\n---\n")
    (notes / "gotcha-bin.md").write_bytes(b"\x00\x01\x02" * 100)
    warnings = json.loads(cli("list", "--json").out)["warnings"]
    assert any("gotcha-latin.md" in w and "not UTF-8" in w for w in warnings)
    assert any("gotcha-bin.md" in w and "binary" in w for w in warnings)


def test_a_huge_note_file_is_skipped(seeded, cli, monkeypatch):
    monkeypatch.setenv("LOREMAP_MAX_NOTE_BYTES", "1000")
    body = "word " * 40_000
    (seeded / ".loremap" / "notes" / "gotcha-huge.md").write_text(
        f"---\nid: gotcha-huge\ntype: gotcha\ntitle: Huge\n---\n{body}", encoding="utf-8")
    warnings = json.loads(cli("list", "--json").out)["warnings"]
    assert any("gotcha-huge.md" in w and "over the 1000-byte" in w for w in warnings)


def test_duplicate_titles_get_suffixed_ids(seeded, cli):
    for _ in range(3):
        assert cli("remember", "-t", "gotcha", "--title", "Same title", "-m", "x").code == 0
    ids = {n["id"] for n in json.loads(cli("list", "--type", "gotcha", "--json").out)["notes"]}
    assert ids == {"gotcha-same-title", "gotcha-same-title-2", "gotcha-same-title-3"}


def test_the_same_id_in_the_personal_vault_is_ignored_with_a_warning(seeded, cli,
                                                                     isolated_home):
    personal = isolated_home / "loremap" / "personal" / "notes"
    personal.mkdir(parents=True)
    (personal / "concept-authentication.md").write_text(
        "---\nid: concept-authentication\ntype: concept\ntitle: Mine\n---\nx\n", encoding="utf-8")
    data = json.loads(cli("list", "--json").out)
    assert [(n["id"], n["scope"]) for n in data["notes"]] == [("concept-authentication",
                                                               "project")]
    assert any("also exists" in w for w in data["warnings"])


@pytest.mark.parametrize("query", ['"unbalanced', "a AND (b OR", "NEAR(x y", "*", "col:value",
                                   "^start", "'; DROP TABLE nodes; --", "\x00", "", "(((", "-x"])
def test_search_text_with_fts_syntax_never_errors(seeded, cli, query):
    result = cli("search", "--json", "--", query)
    assert result.code == 0, result.err
    json.loads(result.out)


def test_a_locked_index_waits_busy_timeout_then_fails_clearly(seeded, cli, monkeypatch):
    monkeypatch.setenv("LOREMAP_BUSY_TIMEOUT_MS", "100")
    before = snapshot(seeded)
    holder = sqlite3.connect(seeded / ".loremap" / "index.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        result = cli("remember", "-t", "gotcha", "--title", "Blocked", "-m", "x")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert_refused(result, "locked by another writer", "0.1 s")
    assert snapshot(seeded) == before
    assert cli("remember", "-t", "gotcha", "--title", "Blocked", "-m", "x").code == 0


def test_a_corrupt_index_is_rebuilt_from_the_vault_and_says_so(seeded, cli):
    index = seeded / ".loremap" / "index.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    index.write_bytes(b"this is not a database" * 100)
    result = cli("search", "jwt", "--json")
    assert result.code == 0, result.err
    assert [h["id"] for h in json.loads(result.out)["items"]] == ["concept-authentication"]
    assert list(index.parent.glob("index.sqlite.corrupt-*"))


def test_an_index_from_a_newer_loremap_is_refused(seeded, cli):
    with sqlite3.connect(seeded / ".loremap" / "index.sqlite") as conn:
        conn.execute("INSERT INTO migrations VALUES (99, 'future', 0)")
    assert_refused(cli("list"), "schema version 99", "reindex")


def test_a_bad_setting_value_is_a_one_line_error(seeded, cli, monkeypatch):
    monkeypatch.setenv("LOREMAP_MAX_NOTE_BYTES", "lots")
    assert_refused(cli("list"), "LOREMAP_MAX_NOTE_BYTES", "vault.max_note_bytes")


def test_a_malformed_config_file_is_a_one_line_error(seeded, cli):
    (seeded / ".loremap" / "config.toml").write_text("[text\nlanguages = 3", encoding="utf-8")
    assert_refused(cli("list"), "config.toml", "not valid TOML")


def test_reindex_replaces_an_index_from_a_newer_loremap(seeded, cli):
    with sqlite3.connect(seeded / ".loremap" / "index.sqlite") as conn:
        conn.execute("INSERT INTO migrations VALUES (99, 'future', 0)")
    result = cli("reindex", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["indexed"] == 1
    assert cli("list").code == 0


def test_a_secret_in_a_quarantined_title_does_not_reach_the_id_or_file_name(seeded, cli):
    token = "ghp_" + "a1B2c3D4e5" * 4
    result = cli("remember", "-t", "gotcha", "--title", f"Token {token}", "--quarantine",
                 "-m", "x", "--json")
    assert result.code == 0, result.err
    note_id = json.loads(result.out)["id"]
    assert "a1b2" not in note_id
    for path in (seeded / ".loremap" / "notes").iterdir():
        assert "a1b2" not in path.name.lower()
        assert token not in path.read_text(encoding="utf-8")


def test_when_the_superseded_note_cannot_be_replaced_neither_write_remains(seeded, cli,
                                                                           monkeypatch):
    cli("remember", "-t", "decision", "--title", "Session cookies", "-m", "Cookies.")
    before = snapshot(seeded)
    import os

    real_replace = os.replace

    def failing_replace(src, dst):  # the new note is renamed first, then the old one fails
        if Path(dst).name == "decision-session-cookies.md":
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    result = cli("remember", "-t", "decision", "--title", "Use JWT", "--supersedes",
                 "decision-session-cookies", "-m", "Tokens.")
    monkeypatch.setattr(os, "replace", real_replace)
    # A full disk is a fault of the machine the user can act on: one line, exit 1 (faults.py).
    assert result.code == 1
    assert result.err.startswith("loremap: error: no space left on the device")
    assert snapshot(seeded) == before
    assert not list((seeded / ".loremap" / "notes").glob(".*.tmp"))
    listed = json.loads(cli("list", "--json").out)["notes"]
    assert {(n["id"], n["status"]) for n in listed} == {
        ("concept-authentication", "active"), ("decision-session-cookies", "active")}


def test_a_missing_module_suggests_the_folder_it_is_the_tail_of(project, cli):
    (project / "src" / "flask").mkdir()
    (project / "src" / "flask" / "app.py").write_text("def run():\n    pass\n",
                                                      encoding="utf-8")
    pages = sorted(p.name for p in (project / ".loremap").rglob("*.md"))
    assert cli("index").code == 0
    before = sorted(p.name for p in (project / ".loremap").rglob("*.md"))
    for wanted in ("flask", "lib/flask", "src/flsk"):
        assert_refused(cli("map", wanted), f"no module {wanted}/",
                       "did you mean src/flask/?")
    assert_refused(cli("map", "zzzz"), "no module zzzz/", "the map without a module lists them")
    assert sorted(p.name for p in (project / ".loremap").rglob("*.md")) == before != pages


def test_closest_modules_prefer_a_folder_of_that_name_then_near_spellings():
    from loremap.codemap.render import closest_modules, did_you_mean

    modules = ["", "src/flask", "src/flask/json", "tests", "examples/flaskr", "docs/flask"]
    assert closest_modules("flask", modules) == ["src/flask", "docs/flask"]
    assert closest_modules("/json/", modules) == ["src/flask/json"]
    assert closest_modules("test", modules) == ["tests"]
    assert closest_modules("", modules) == closest_modules("nothing-like-it", modules) == []
    assert did_you_mean("flask", modules) == "did you mean src/flask/ or docs/flask/?"
    assert did_you_mean("flask", modules[:3]) == "did you mean src/flask/?"
    assert did_you_mean("qqqq", modules) == ""
