"""What a new user meets first: remember, show, list and search tried as a person would.

Each test is one defect seen on an earlier version: a note written with no body or about a file
that does not exist, a supersession that did not say what it rewrote, an empty list with no
hint of what to do, a note in the shared database that show and forget said did not exist.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_bad_input import snapshot


@pytest.mark.parametrize("args", [("-m", ""), ("-m", "  \n "), ()])
def test_a_note_without_a_body_is_refused_and_nothing_is_written(project, cli, args):
    before = snapshot(project)
    result = cli("remember", "-t", "gotcha", "--title", "Empty lesson", *args)
    assert result.code == 1 and "no body" in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert snapshot(project) == before


def test_a_note_about_a_missing_file_is_refused_naming_it(project, cli):
    before = snapshot(project)
    result = cli("remember", "-t", "bug", "--title", "Login drops the session",
                 "--file", "src/auth/logn.ts", "-m", "The cookie is cleared.")
    assert result.code == 1 and "'src/auth/logn.ts' does not exist" in result.err
    assert snapshot(project) == before


def test_a_note_about_a_binary_file_is_kept_with_a_warning(project, cli):
    (project / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    result = cli("remember", "-t", "gotcha", "--title", "The logo must stay square",
                 "--file", "logo.png", "-m", "The header crops it to a circle.")
    assert result.code == 0 and "logo.png is a binary file" in result.err


def test_superseding_says_which_note_was_rewritten(project, cli):
    cli("remember", "-t", "decision", "--title", "Sessions in cookies", "-m", "Simple.")
    result = cli("remember", "-t", "decision", "--title", "Use JWT instead",
                 "--supersedes", "decision-sessions-in-cookies", "-m", "Stateless.")
    assert result.code == 0
    assert "superseded decision-sessions-in-cookies" in result.out
    old = (project / ".loremap" / "notes" / "decision-sessions-in-cookies.md").read_text(
        encoding="utf-8")
    assert "status: superseded" in old and "superseded_by: decision-use-jwt-instead" in old


def test_list_outside_a_project_says_how_to_start_not_to_remember(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli("list")
    assert result.code == 0 and "not a loremap project" in result.out
    assert "loremap init" in result.out and "--personal" in result.out


def test_list_with_a_filter_that_matches_nothing_says_so(project, cli):
    cli("remember", "-t", "decision", "--title", "Use JWT", "-m", "Stateless.")
    result = cli("list", "--type", "bug")
    assert "no notes match" in result.out


def test_show_a_module_folder_prints_its_page(project, cli):
    assert cli("index").code == 0
    result = cli("show", "src/auth")
    assert result.code == 0 and "src/auth" in result.out
    as_json = json.loads(cli("show", "src/auth", "--json").out)
    assert as_json["module"] == "src/auth"


def test_a_warning_of_opening_the_index_is_shown_with_the_answer_it_belongs_to(project, cli):
    index = project / ".loremap" / "index.sqlite"
    index.write_bytes(b"not a database at all" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    first = cli("search", "login")
    assert "the index was unreadable and was rebuilt" in first.err
    assert "unreadable" not in cli("search", "login").err
