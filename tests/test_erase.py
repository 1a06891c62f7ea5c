"""`forget --erase`: a note erased leaves no byte of its text anywhere loremap writes.

The issue's measurement as tests: a note with several versions, quoted in a handoff, a session
record and the logs, erased; then every file under `.loremap/`, the data folder (LOREMAP_HOME)
and the SQLite files read as bytes (free pages and WAL included), and on PostgreSQL a
`pg_dump` of the database, hold none of its distinctive words; the audit chains still verify.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from conftest import Result

TITLE = "Rotate the staging key"
# One distinctive word per version of the note (the analyzer's stems begin with them too).
WORDS = ("zorblatton", "quibbleflax", "plimsoverk", "snarkwidget")


def body(version: int) -> str:
    return f"Every Monday run the {WORDS[version]} script against the staging vault."


def found_in(paths: Iterable[Path], extra: bytes = b"") -> dict[str, list[str]]:
    """Each distinctive word (and the title) -> the files (or "dump") whose bytes hold it."""
    blobs = {str(p): p.read_bytes().lower() for p in paths}
    blobs["dump"] = extra.lower()
    needles = [*(w[:8] for w in WORDS), TITLE.lower()]
    return {n: hits for n in needles
            if (hits := [name for name, data in blobs.items() if n.encode() in data])}


def files_under(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()]


def quoted_in_both(a: Any, b: Any, text: str) -> None:
    """Clones `a` and `b` (test_sync's Machines) both quote `text`: in a handoff saved on `a`
    and brought to `b` as git would, and in each one's session record and logs."""
    a.ok("handoff", "save", "--goal", "Rotate keys", "--decision", f"keep this: {text}",
         "--decision", "ship on Friday")
    (b.root / ".loremap" / "handoffs").mkdir(exist_ok=True)
    for handoff in (a.root / ".loremap" / "handoffs").glob("*.md"):
        (b.root / ".loremap" / "handoffs" / handoff.name).write_bytes(handoff.read_bytes())
    for clone in (a, b):
        quote_it(clone.root / ".loremap", text)


def quote_it(loremap_dir: Path, text: str) -> None:
    """The note quoted in a session record and in both logs, as the hooks would leave them."""
    (loremap_dir / "sessions").mkdir(exist_ok=True)
    (loremap_dir / "sessions" / "s1.record.md").write_text(
        f"# Session record\n- read the note: {text}\n- other work kept\n", encoding="utf-8")
    (loremap_dir / "sessions" / "s1.json").write_text(
        json.dumps({"asked": [f"why {text}"], "epoch": 1}), encoding="utf-8")
    (loremap_dir / "cache").mkdir(exist_ok=True)
    (loremap_dir / "cache" / "queries.jsonl").write_text(
        json.dumps({"session": "s1", "query": f"how do we {text}"}) + "\n"
        + json.dumps({"session": "s1", "query": "unrelated question"}) + "\n", encoding="utf-8")
    (loremap_dir / "cache" / "errors.jsonl").write_text(
        json.dumps({"signature": "x", "tool": "Bash", "command": text}) + "\n",
        encoding="utf-8")


def edit_body(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


def test_an_erased_note_leaves_no_byte_of_its_text_on_sqlite(project: Path,
                                                               cli: Callable[..., Result]):
    done = cli("remember", "-t", "decision", "--title", TITLE, "-m", body(0), "--json")
    assert done.code == 0, done.err
    note_id = json.loads(done.out)["id"]
    path = project / ".loremap" / "notes" / f"{note_id}.md"
    for version in (1, 2, 3):  # each text indexed, then replaced (its rows freed)
        edit_body(path, body(version - 1), body(version))
        assert cli("list").code == 0
    assert cli("handoff", "save", "--goal", "Rotate keys", "--state", f"read {TITLE}",
               "--decision", f"keep this: {body(3)}", "--decision", "ship on Friday").code == 0
    quote_it(project / ".loremap", body(3))
    home = Path(os.environ["LOREMAP_HOME"])
    assert len(found_in(files_under(project / ".loremap", home))) == len(WORDS) + 1  # (seen)

    erased = cli("forget", note_id, "--erase", "--reason", "a leaked procedure", "--json")

    assert erased.code == 0, erased.err
    data = json.loads(erased.out)
    assert data["action"] == "erased" and not path.exists()
    assert ".loremap/cache/queries.jsonl" in data["scrubbed"]
    assert found_in(files_under(project / ".loremap", home)) == {}
    handoff = next((project / ".loremap" / "handoffs").glob("*.md")).read_text(encoding="utf-8")
    assert "[erased]" in handoff and "ship on Friday" in handoff  # the rest is kept
    assert "unrelated question" in (project / ".loremap/cache/queries.jsonl").read_text(
        encoding="utf-8")
    assert cli("handoff", "show").code == 0  # still a readable handoff
    verify = json.loads(cli("audit", "verify", "--json").out)
    assert verify["ok"] and verify["erased"] >= 1
    log = cli("audit", "log", "--note", note_id)
    assert "erase" in log.out and "a leaked procedure" in log.out and TITLE not in log.out


def test_erase_refuses_a_missing_note_a_missing_reason_and_a_secret_reason(
        project: Path, cli: Callable[..., Result]):
    done = cli("remember", "-t", "decision", "--title", "Keep me", "-m", "a body", "--json")
    note_id = json.loads(done.out)["id"]
    before = sorted(p.name for p in (project / ".loremap" / "notes").iterdir())

    missing = cli("forget", "decision-nothing-here", "--erase", "--reason", "leak")
    no_reason = cli("forget", note_id, "--erase")
    secret = cli("forget", note_id, "--erase", "--reason",
                 "leaked ghp_" + "Zq8vK2mWx7LpR4tN9cB1dF6hJ3sA5eG0yU2i")

    assert missing.code == 1 and len(missing.err.strip().splitlines()) == 1
    assert "no note with id 'decision-nothing-here'" in missing.err
    assert no_reason.code == 1 and "--erase needs --reason" in no_reason.err
    assert secret.code == 1 and "refused" in secret.err
    assert sorted(p.name for p in (project / ".loremap" / "notes").iterdir()) == before
    both = cli("forget", note_id, "--erase", "--purge", "--reason", "wrong", "--json")
    assert both.code == 0 and json.loads(both.out)["action"] == "erased"  # --erase implies it


# --- PostgreSQL: two clones on one database ------------------------------------------------



def pg_dump(url: str) -> bytes:
    from loremap.store.postgres.local import _bin

    done = subprocess.run([str(_bin("pg_dump")), "--dbname", url], capture_output=True,
                          check=True)
    return done.stdout


@pytest.fixture
def two_clones(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
               capsys: pytest.CaptureFixture[str]) -> tuple[Any, Any]:
    pytest.importorskip("psycopg")
    from test_sync import PROJECT, Machine, migrate

    migrate(pg_url)
    return (Machine(tmp_path / "a", pg_url, PROJECT, monkeypatch, capsys),
            Machine(tmp_path / "b", pg_url, PROJECT, monkeypatch, capsys))


def test_an_erasure_on_the_shared_database_reaches_the_other_clone_and_leaves_nothing(
        two_clones: tuple[Any, Any], pg_url: str):
    from test_sync import PROJECT, sql

    a, b = two_clones
    note_id = a.remember(TITLE, body(0))
    path = a.notes / f"{note_id}.md"
    for version in (1, 2, 3):
        edit_body(path, body(version - 1), body(version))
        a.ok("sync", "push")
    assert len(sql(pg_url, "SELECT 1 FROM note_versions WHERE project = %s AND id = %s",
                   (PROJECT, note_id))) == 3
    b.ok("sync", "pull")
    edit_body(b.notes / f"{note_id}.md", body(3), body(3) + " Edited on b.")  # local edits
    quoted_in_both(a, b, body(3))
    homes = [a.home, b.home, Path(os.environ["LOREMAP_HOME"])]
    seen = found_in([], pg_dump(pg_url))
    assert len(seen) == len(WORDS) + 1  # every version and the title, before the erasure

    erased = a.json("forget", note_id, "--erase", "--reason", "a leaked procedure")
    pulled = b.json("sync", "pull")

    assert erased["action"] == "erased"
    assert [(c["id"], c["change"]) for c in pulled["changes"]] == [(note_id, "deleted")]
    assert not (b.notes / f"{note_id}.md").exists()
    assert found_in(files_under(a.root / ".loremap", b.root / ".loremap", *homes),
                    pg_dump(pg_url)) == {}
    (tomb,) = sql(pg_url, "SELECT text, deleted, erased FROM note_docs WHERE project = %s "
                          "AND id = %s", (PROJECT, note_id))
    assert tomb == ("", True, True)
    for clone in (a, b):
        verify = clone.json("audit", "verify")
        assert verify["ok"] and verify["erased"] >= 1
    ops = [op for (op,) in sql(pg_url, "SELECT op FROM audit_log WHERE project = %s AND "
                                       "note = %s ORDER BY seq", (PROJECT, note_id))]
    assert ops[-2:] == ["erase", "erase"]  # a's erasure, then b's own on its pull
    assert b.json("sync", "push")["changes"] == []  # nothing comes back


def test_a_quote_is_a_title_a_body_line_or_three_words_and_common_phrases_are_not():
    from loremap.vault.erasure import Quotes

    quotes = Quotes("decision-x", ["Use the blue vault"], ["How do we rotate the keys?\nok"])
    assert quotes.replaced("we said: Use the blue vault, then") == "we said: [erased] then"
    assert quotes.replaced("then rotate the keys daily") == "then [erased] daily"
    assert quotes.replaced("how do we ship it") == "how do we ship it"  # no long word
    assert quotes.without_lines("a decision-x line\nkept\n") == "kept\n"
