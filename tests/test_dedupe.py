"""`loremap dedupe`: notes whose text is the same once case, accents and separators are
normalised are merged by `--apply` (the copy's title an alias, the copy superseded); notes that
only resemble each other are listed, never merged."""

from __future__ import annotations

import json
from pathlib import Path

from loremap.use.dedupe import normal
from loremap.vault.frontmatter import parse_note


def write(project: Path, note_id: str, text: str) -> None:
    (project / ".loremap" / "notes" / f"{note_id}.md").write_text(text, encoding="utf-8")


def note_text(note_id: str, title: str, body: str, note_type: str = "decision",
              recorded: str = "2026-01-01T00:00:00Z", extra: str = "") -> str:
    return (f"---\nid: {note_id}\ntype: {note_type}\ntitle: {title}\nrecorded_at: {recorded}\n"
            f"{extra}---\n# {title}\n\n{body}\n")


def read(project: Path, note_id: str):
    return parse_note((project / ".loremap" / "notes" / f"{note_id}.md").read_text(
        encoding="utf-8"), "n.md")


def test_normal_drops_case_accents_and_separators():
    assert normal("Café — Crème_brûlée/NAÏVE!") == normal("cafe creme brulee naive") == \
        "cafe creme brulee naive"
    assert normal(" \n-- ") == ""


def test_the_same_text_is_merged_and_its_title_still_finds_the_note(project, cli):
    write(project, "decision-use-jwt", note_text(
        "decision-use-jwt", "Use JWT instead of cookies",
        "Stateless tokens: they run on edge runtimes.",
        extra="files: [src/auth/login.ts]\ntags: [auth]\n"))
    write(project, "decision-jwt-tokens", note_text(
        "decision-jwt-tokens", "Tokens rather than sessions",
        "STATELESS tokens — they run on édge_runtimes", recorded="2026-02-01T00:00:00Z",
        extra="tags: [edge]\nsuccesses: 3\n"))
    write(project, "decision-admin-cookies", note_text(
        "decision-admin-cookies", "Cookies for the admin pages",
        "The admin pages keep session cookies; stateful is fine there."))
    write(project, "decision-admin-sessions", note_text(
        "decision-admin-sessions", "Session cookies for the admin",
        "The admin keeps session cookies: stateful is fine there."))
    write(project, "gotcha-jwt-copy", note_text(  # another type: never the same note
        "gotcha-jwt-copy", "Tokens gotcha", "Stateless tokens: they run on edge runtimes.",
        note_type="gotcha"))
    listed = json.loads(cli("dedupe", "--json").out)
    assert listed["same"] == [{"keep": "decision-use-jwt", "copy": "decision-jwt-tokens",
                               "alias": "Tokens rather than sessions"}]
    assert [(n["a"], n["b"], n["why"]) for n in listed["near"]][0] == (
        "decision-admin-cookies", "decision-admin-sessions", "bodies")
    assert not listed["applied"]
    assert read(project, "decision-jwt-tokens").status.value == "active"  # a listing only

    done = cli("dedupe", "--apply")
    assert done.code == 0 and "merged:" in done.out
    kept, copy = read(project, "decision-use-jwt"), read(project, "decision-jwt-tokens")
    assert kept.aliases == ("Tokens rather than sessions",)
    assert kept.tags == ("auth", "edge") and kept.files == ("src/auth/login.ts",)
    assert kept.successes == 3
    assert (copy.status.value, copy.superseded_by) == ("superseded", "decision-use-jwt")
    assert read(project, "decision-admin-sessions").status.value == "active"  # near: kept
    assert read(project, "gotcha-jwt-copy").status.value == "active"
    found = json.loads(cli("search", "tokens", "rather", "than", "sessions", "--json").out)
    assert found["items"][0]["id"] == "decision-use-jwt"
    again = json.loads(cli("dedupe", "--json").out)
    assert again["same"] == [] and again["near"] and again["near"][0]["a"] == \
        "decision-admin-cookies"


def test_nothing_to_merge_says_so_and_changes_nothing(project, cli):
    assert cli("remember", "-t", "decision", "--title", "One", "-m", "alpha beta").code == 0
    folder = project / ".loremap" / "notes"
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    done = cli("dedupe", "--apply")
    assert done.code == 0 and done.out.strip() == "no duplicate notes"
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
