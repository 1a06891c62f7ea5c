"""A hostile note file is refused in one line, quickly, on every path that parses notes.

The note below is a YAML "billion laughs": 9 aliases of 9 aliases, eight deep, in 568 bytes.
Before anchors and aliases were refused it was accepted as valid and cost 76 s and 2.3 GB in
every command that re-read it (161 s in the session-start hook), and `sync pull` carried it to
every clone. Time is bounded here without a clock: the hook's subprocess runs under a timeout
far below what the bomb cost it, and the in-process commands are asserted to skip the note with
one line, which the old code never did (under a 3 GB address-space limit reindex and sync pull
died of MemoryError there).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

BOMB_ID = "concept-bomb"
_ROWS = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
_ROWS += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
BOMB = (f"---\nid: {BOMB_ID}\ntype: concept\ntitle: Laughs\n" + "\n".join(_ROWS)
        + "\n---\n# Laughs\n\nA billion of them.\n")
REFUSAL = ("5: 'a0' uses the YAML &a0: anchors and aliases are refused (a few bytes of them can "
           "expand to gigabytes)")


def plant(project: Path) -> Path:
    path = project / ".loremap" / "notes" / f"{BOMB_ID}.md"
    path.write_text(BOMB, encoding="utf-8")
    return path


def warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if BOMB_ID in line]


def test_the_bomb_is_a_small_file():
    assert len(BOMB.encode("utf-8")) < 600


def test_reindex_skips_the_bomb_with_one_line_and_indexes_the_rest(project, cli):
    assert cli("remember", "-t", "gotcha", "--title", "Tokens expire", "-m", "refresh").code == 0
    plant(project)
    result = cli("reindex")
    assert result.code == 0, result.err
    assert warnings(result.err) == [
        f"loremap: warning: skipped .loremap/notes/{BOMB_ID}.md:{REFUSAL}"]
    assert "gotcha-tokens-expire" in cli("search", "tokens expire").out
    assert BOMB_ID not in cli("list").out


def test_any_command_reconciling_the_vault_skips_the_bomb(project, cli):
    plant(project)
    result = cli("list")
    assert result.code == 0, result.err
    assert len(warnings(result.err)) == 1 and REFUSAL in result.err


def test_doctor_names_the_bomb_file_and_line(project, cli):
    plant(project)
    result = cli("doctor")
    shown = [line for line in (result.out + result.err).splitlines() if BOMB_ID in line]
    assert len(shown) == 1, result.out + result.err
    assert f".loremap/notes/{BOMB_ID}.md:{REFUSAL}" in shown[0]


def test_the_session_start_hook_returns_quickly_and_logs_one_line(project, cli, isolated_home):
    plant(project)
    payload = {"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup",
               "cwd": str(project), "transcript_path": str(project / "t.jsonl")}
    # The bomb cost this hook 161 s; a timeout is the bound, not a measurement.
    result = subprocess.run([sys.executable, "-m", "loremap.hook", "session-start"],
                            input=json.dumps(payload).encode(), capture_output=True,
                            env=os.environ.copy(), timeout=60)
    assert result.returncode == 0
    assert b"project-memory" in result.stdout
    log = (isolated_home / "loremap" / "logs" / "hook.log").read_text(encoding="utf-8")
    assert [line for line in log.splitlines() if BOMB_ID in line] == [
        line for line in log.splitlines() if REFUSAL in line]
    assert len([line for line in log.splitlines() if BOMB_ID in line]) == 1


# --- sync pull: a teammate's note from the shared database ----------------------------------

HAVE_PSYCOPG = importlib.util.find_spec("psycopg") is not None
if HAVE_PSYCOPG:  # test_sync skips itself without psycopg; its fixtures are imported as they are
    from test_sync import PROJECT, Machine, db, machines, sql  # noqa: F401


@pytest.mark.skipif(not HAVE_PSYCOPG, reason="sync pull needs psycopg")
def test_sync_pull_refuses_a_bomb_from_the_database_and_pulls_the_rest(
        machines: Callable[..., Machine], db: str) -> None:
    from loremap.vault.layout import content_hash

    a, b = machines("a"), machines("b")
    good = a.remember("We use PostgreSQL")
    sql(db, "INSERT INTO note_docs (project, id, text, hash, updated_by) VALUES "
            "(%s, %s, %s, %s, 'mallory') RETURNING id",
        (PROJECT, BOMB_ID, BOMB, content_hash(BOMB.encode("utf-8"))))
    code, out, err = b.run("sync", "pull")
    assert code == 0, err
    assert warnings(err) == [f"loremap: warning: skipped {BOMB_ID} (database v1):{REFUSAL}: "
                             "not pulled"]
    assert set(b.files()) == {good}
