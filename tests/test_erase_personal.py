"""`forget --erase` of a personal note reaches the personal vault's own index at once.

The personal notes have an index of their own, `<cache>/personal-index.sqlite`: the one used
outside any project, and beside a shared database (whose teammates must never read them). An
erasure from inside a project used to leave the note there until a `reindex` outside it. Here
the personal index file is read as bytes (free pages and WAL included) after the erasure, and
a search from another project does not find the note.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import Result, git
from test_erase import TITLE, WORDS, body, files_under, found_in


def personal_index() -> Path:
    return Path(os.environ["LOREMAP_HOME"]) / "cache" / "personal-index.sqlite"


def index_files() -> list[Path]:
    """The personal index and its WAL and shared-memory files, whichever exist."""
    base = personal_index()
    return [p for p in (base, base.with_name(base.name + "-wal"),
                        base.with_name(base.name + "-shm")) if p.exists()]


def another_project(root: Path, cli: Callable[..., Result],
                    monkeypatch: pytest.MonkeyPatch) -> Path:
    root.mkdir()
    git(root.parent, "init", "-q", str(root))
    monkeypatch.chdir(root)
    assert cli("init").code == 0
    return root


def edited_versions(path: Path, cli: Callable[..., Result], *args: str) -> None:
    """The note's body edited by hand three times, each text indexed and then replaced."""
    for version in (1, 2, 3):
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace(body(version - 1), body(version)), encoding="utf-8")
        assert cli("list", *args).code == 0


def test_a_personal_note_erased_in_a_project_leaves_the_personal_index_at_once(
        project: Path, cli: Callable[..., Result], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch):
    done = cli("remember", "--personal", "-t", "gotcha", "--title", TITLE, "-m", body(0),
               "--json")
    assert done.code == 0, done.err
    note_id = json.loads(done.out)["id"]
    path = Path(os.environ["LOREMAP_HOME"]) / "personal" / "notes" / f"{note_id}.md"
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)  # no project here: the personal index is the one read
    edited_versions(path, cli)
    other = another_project(tmp_path / "other", cli, monkeypatch)
    assert note_id in cli("search", WORDS[3]).out  # the other project finds it too
    assert found_in(index_files()) != {}  # its text is there before the erasure
    monkeypatch.chdir(project)

    erased = cli("forget", note_id, "--erase", "--reason", "personal data", "--json")

    assert erased.code == 0, erased.err
    assert json.loads(erased.out)["action"] == "erased" and not path.exists()
    assert found_in(index_files()) == {}
    assert found_in(files_under(project / ".loremap")) == {}
    monkeypatch.chdir(other)
    assert note_id not in cli("search", WORDS[3], "--json").out
    monkeypatch.chdir(outside)
    listed = cli("list", "--json")
    assert listed.code == 0 and note_id not in listed.out
    verify = json.loads(cli("audit", "verify", "--personal", "--json").out)
    assert verify["ok"] and verify["erased"] >= 1


def test_a_personal_note_erased_outside_any_project_leaves_no_byte_in_its_index(
        cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    done = cli("remember", "--personal", "-t", "gotcha", "--title", TITLE, "-m", body(0),
               "--json")
    assert done.code == 0, done.err
    note_id = json.loads(done.out)["id"]
    edited_versions(Path(os.environ["LOREMAP_HOME"]) / "personal" / "notes" / f"{note_id}.md",
                    cli)

    erased = cli("forget", note_id, "--erase", "--reason", "personal data")

    assert erased.code == 0, erased.err
    assert found_in(index_files()) == {}
    assert found_in(files_under(Path(os.environ["LOREMAP_HOME"]))) == {}


# --- beside a shared database: the personal index is the personal notes' only index -------


def test_a_personal_note_erased_beside_a_shared_database_leaves_its_index(
        pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]):
    pytest.importorskip("psycopg")
    from test_erase import pg_dump
    from test_sync import PROJECT, Machine, migrate

    migrate(pg_url)
    a: Any = Machine(tmp_path / "a", pg_url, PROJECT, monkeypatch, capsys)
    home = Path(a.home)
    monkeypatch.setenv("LOREMAP_HOME", str(home))
    note = a.json("remember", "--personal", "-t", "gotcha", "--title", TITLE, "-m", body(0))
    note_id = note["id"]
    path = home / "personal" / "notes" / f"{note_id}.md"
    for version in (1, 2, 3):
        path.write_text(path.read_text(encoding="utf-8").replace(body(version - 1),
                                                                  body(version)),
                        encoding="utf-8")
        a.ok("list")
    base = home / "cache" / "personal-index.sqlite"
    assert base.exists() and found_in([base]) != {}

    erased = a.json("forget", note_id, "--erase", "--reason", "personal data")

    assert erased["action"] == "erased" and not path.exists()
    wal = [p for p in (base, base.with_name(base.name + "-wal")) if p.exists()]
    assert found_in(wal, pg_dump(pg_url)) == {}
    assert note_id not in json.dumps(a.json("list"))
