"""A secret found after the fact: `loremap doctor` names the note and the exact command that
erases every copy of it, and that command leaves doctor clean and the secret's bytes nowhere.

loremap's own writes refuse a credential, so each secret here arrives the way one gets past
them: a note file edited by hand, and on a shared database a text stored before the scanner
knew its kind of key, kept as an earlier version. Every fake credential is assembled at run
time (`test_secret_paths`), so this file holds no literal token.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from conftest import Result
from test_erase import files_under, pg_dump, quote_it
from test_secret_paths import _BODY_LINES, _HAND_WRITTEN, KEY

COMMAND = re.compile(r'`(loremap forget (\S+) --erase --reason "leaked secret")`')
NEEDLES = [line[start:start + 12].lower() for line in _BODY_LINES for start in (0, 26, 52)]

# The hand-written note of test_secret_paths, clean and holding the key.
CLEAN = _HAND_WRITTEN.format(key="(kept in the team vault)")
HOLDING = _HAND_WRITTEN.format(key=KEY)


def holding(paths: Iterable[Path], extra: bytes = b"") -> list[str]:
    """The files (or "dump") whose bytes hold a fragment of the key, in any case (the
    index's tokens are lowercased)."""
    blobs = {str(p): p.read_bytes().lower() for p in paths}
    blobs["dump"] = extra.lower()
    return sorted(name for name, data in blobs.items()
                  if any(n.encode() in data for n in NEEDLES))


def secret_findings(doctor: dict[str, Any]) -> list[str]:
    return [f["message"] for f in doctor["findings"] if f["check"] == "secrets"]


def the_command(message: str) -> tuple[list[str], str]:
    found = COMMAND.search(message)
    assert found is not None, message
    return shlex.split(found.group(1))[1:], found.group(2)


def test_doctor_names_a_hand_edited_secret_and_its_erase_command_removes_every_byte(
        project: Path, cli: Callable[..., Result]):
    assert cli("remember", "-t", "concept", "--title", "Authentication", "-m",
               "Sessions use JWT.").code == 0
    path = project / ".loremap" / "notes" / "gotcha-staging-database.md"
    path.write_text(CLEAN, encoding="utf-8")
    assert cli("list").code == 0  # indexed clean, then edited by hand past the write scan
    path.write_text(HOLDING, encoding="utf-8")
    quote_it(project / ".loremap", _BODY_LINES[1])  # a session record and the logs quote it

    before = cli("doctor")  # before any command has read the edit into the index

    assert before.code == 1
    assert (".loremap/notes/gotcha-staging-database.md line 11 holds a private key block"
            in before.out)
    args, note_id = the_command(before.out)
    assert note_id == "gotcha-staging-database"
    assert cli("list", "--json").code == 0  # now quarantined in the index: still named
    assert len(secret_findings(json.loads(cli("doctor", "--json").out))) == 1
    home = Path(os.environ["LOREMAP_HOME"])
    assert holding(files_under(project / ".loremap", home)) != []

    erased = cli(*args)

    assert erased.code == 0, erased.err
    after = cli("doctor", "--json")
    assert after.code == 0, after.out
    assert secret_findings(json.loads(after.out)) == []
    assert holding(files_under(project / ".loremap", home)) == []
    assert not path.exists()
    assert [n["id"] for n in json.loads(cli("list", "--json").out)["notes"]] == \
        ["concept-authentication"]
    verify = json.loads(cli("audit", "verify", "--json").out)
    assert verify["ok"]
    log = cli("audit", "log", "--note", note_id)
    assert "erase" in log.out and "leaked secret" in log.out


def test_doctor_names_a_secret_in_a_personal_note_file(project: Path,
                                                       cli: Callable[..., Result]):
    assert cli("remember", "--personal", "-t", "gotcha", "--title", "Staging database", "-m",
               "Connect with the deploy key below.").code == 0
    path = Path(os.environ["LOREMAP_HOME"]) / "personal" / "notes" / \
        "gotcha-staging-database.md"
    path.write_text(path.read_text(encoding="utf-8") + "\n" + KEY + "\n", encoding="utf-8")

    args, _ = the_command(cli("doctor").out)
    assert cli(*args).code == 0

    assert secret_findings(json.loads(cli("doctor", "--json").out)) == []
    assert holding(files_under(project / ".loremap", Path(os.environ["LOREMAP_HOME"]))) == []


def test_doctor_names_a_secret_kept_only_in_an_earlier_version_on_the_shared_database(
        pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]):
    pytest.importorskip("psycopg")
    from test_sync import PROJECT, Machine, migrate, sql

    migrate(pg_url)
    a = Machine(tmp_path / "a", pg_url, PROJECT, monkeypatch, capsys)
    b = Machine(tmp_path / "b", pg_url, PROJECT, monkeypatch, capsys)
    note_id = a.remember("Staging database", "Connect with the deploy key from the vault.")
    a.ok("sync", "push")
    b.ok("sync", "pull")
    # An earlier text of the note, stored by a loremap whose scanner did not know this kind of
    # key yet (today's sync never uploads one): only the database's version history holds it.
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO note_versions (project, id, version, text, hash, deleted, "
                     "updated_at, updated_by, reason) VALUES (%s, %s, 0, %s, 'x', false, "
                     "now(), 'an older loremap', 'replaced')",
                     (PROJECT, note_id, HOLDING))
    assert holding([], pg_dump(pg_url)) == ["dump"]

    code, out, _ = a.run("doctor")

    assert code == 1
    assert (f"the shared database's note {note_id}: its earlier version 0 holds a private key "
            "block on line 11") in out
    args, named = the_command(out)
    assert named == note_id
    a.ok(*args)
    b.ok("sync", "pull")  # the other clone erases its copy
    for clone in (a, b):
        assert secret_findings(clone.json("doctor")) == []
        assert clone.json("audit", "verify")["ok"]
    assert holding(files_under(a.root / ".loremap", b.root / ".loremap", a.home, b.home),
                   pg_dump(pg_url)) == []
    assert sql(pg_url, "SELECT count(*) FROM note_versions WHERE project = %s AND id = %s",
               (PROJECT, note_id)) == [(0,)]
